import LMDB

/// What opening takes from a model's type alone: its stored name, the names of its index and backlink databases, and
/// the rules its `Schema` must keep, checked once.
///
/// It is worked out at the first opening in a process and kept: a type cannot change while the process runs (its
/// described schema is kept the same way), and walking a `Schema` again at every opening (its key paths' names, a
/// `Decimal` check on the described schema) cost more than all the rest of opening an unchanged store.
struct ModelRegistration: Sendable {
    /// The name the model is stored under.
    let name: String
    /// The names of the index databases, in the schema's order.
    let indexDatabases: [String]
    /// The names of the backlink databases, in the schema's order.
    let linkDatabases: [String]
    /// The names of the full-text indexes' databases, two for each in the schema's order: postings, documents.
    let fullTextDatabases: [String]
    /// The names of the index databases and the links with their rules: two configurations open at once must agree
    /// on them.
    let signature: [String]
    /// Whether the model's ids come from a sequence.
    let numbersIDs: Bool
    /// Each link's name and the type it leads to.
    let linkTargets: [LinkTarget]

    struct LinkTarget: Sendable {
        let name: String
        let type: ObjectIdentifier
        /// The target type as Swift writes it, for the error that names it.
        let typeName: String
    }

    /// Refuses a link that leads to a model `registered` (a configuration's models) does not hold.
    func checkLinks(registered: Set<ObjectIdentifier>) throws(StoreError) {
        for link in linkTargets where !registered.contains(link.type) {
            throw .invalidSchema(
                model: name,
                reason: "its link \(link.name) leads to \(link.typeName), which is not in Configuration.models; "
                    + "add \(link.typeName).self to the models")
        }
    }
}

extension Model {
    /// The model's registration, checked and worked out once per process.
    ///
    /// - Throws: `invalidSchema` for an index or link on a computed property without a name, an index covering a
    ///   `Decimal`, two links of one name, or a rename to a key the model does not store.
    static func registration() throws(StoreError) -> ModelRegistration {
        let identity = ObjectIdentifier(Self.self)
        if let known = registrations.withLock({ $0[identity] }) { return known }
        let registration = try makeRegistration(Self.schema)
        registrations.withLock { $0[identity] = registration }
        return registration
    }

    /// Why the `Schema`'s renames cannot be applied to records whose top-level keys are `keys`: a rename to a key
    /// the model does not store would be filled and then never read. `nil` when every renamed property is stored.
    static func renameRefusal(keys: [String]) -> String? {
        guard let (to, from) = schema.declarations.renamedProperties.first(where: { !keys.contains($0.to) }) else {
            return nil
        }
        return "its Schema renames \(quoted(from)) to \(quoted(to)), which is not a key it stores (it stores "
            + keys.map(quoted).joined(separator: ", ") + "); a renamed property's coding key must be its name"
    }

    private static func makeRegistration(_ schema: Schema<Self>) throws(StoreError) -> ModelRegistration {
        let name = schema.name
        if let unnamed = schema.indexes.first(where: { $0.hasUnstableName }) {
            throw .invalidSchema(
                model: name,
                reason: "an index on a computed property has no name that stays the same across launches "
                    + "(\(quoted(unnamed.name))); give it one: .index(\\.property, name: \"…\")")
        }
        // A Decimal has no order-preserving key: refused here, naming the property, not at the first insert.
        if !schema.indexes.isEmpty {
            let described = try describedSchema()
            for index in schema.indexes {
                for path in index.keyPaths {
                    let property = Index<Self>.propertyName(path)
                    if described.shape(at: property.split(separator: "."))?.holdsDecimal == true {
                        throw .invalidSchema(
                            model: name,
                            reason:
                                "its index \(index.name) covers \(property), which holds a Decimal, and a Decimal has "
                                + "no order-preserving key; index a Double, or an integer of cents, instead")
                    }
                }
            }
        }
        // A rename moves stored values to the property's coding key, which must be its name: a key the model does not
        // store would be filled and then never read.
        // Its properties are checked here, when its type's metadata lists them, and its coding keys when its first
        // record is written.
        let properties = try describedSchema().properties.map(\.name)
        if !properties.isEmpty, let refusal = renameRefusal(keys: properties) {
            throw .invalidSchema(model: name, reason: refusal)
        }
        var linkNames: Set<String> = []
        for link in schema.links {
            guard !link.name.contains("<computed") else {
                throw .invalidSchema(
                    model: name,
                    reason: "a link on a computed property has no name that stays the same across launches; give it "
                        + "one: .link(\\.property, name: \"…\")")
            }
            guard linkNames.insert(link.name).inserted else {
                throw .invalidSchema(
                    model: name,
                    reason: "two links are named \(link.name); give one of them another name: .link(…, name: \"…\")")
            }
        }
        try checkFullText(schema)
        let indexDatabases = schema.indexes.map { $0.databaseName(model: name) }
        let fullTextDatabases = schema.fullTextIndexes.flatMap {
            [$0.postingsDatabase(model: name), $0.documentsDatabase(model: name)]
        }
        return ModelRegistration(
            name: name, indexDatabases: indexDatabases,
            linkDatabases: schema.links.map { $0.databaseName(model: name) },
            fullTextDatabases: fullTextDatabases,
            signature: indexDatabases + schema.links.map { $0.signature(model: name) }
                + schema.fullTextIndexes.map { "full-text \($0.name) \($0.weights)" },
            numbersIDs: schema.sequence != nil,
            linkTargets: schema.links.map {
                .init(name: $0.name, type: ObjectIdentifier($0.targetType), typeName: "\($0.targetType)")
            })
    }
}

extension Model {
    /// Refuses a full-text index that names a computed property without a name, holds no property or too many, or
    /// weighs a property at less than nothing.
    private static func checkFullText(_ schema: Schema<Self>) throws(StoreError) {
        var names: Set<String> = []
        for index in schema.fullTextIndexes {
            guard !index.fields.isEmpty, index.fields.count <= PostingBlock.maxColumns else {
                throw .invalidSchema(
                    model: schema.name,
                    reason: "its full-text index \(quoted(index.name)) covers \(index.fields.count) properties; it "
                        + "covers 1 to \(PostingBlock.maxColumns)")
            }
            if index.name.contains("<computed") {
                throw .invalidSchema(
                    model: schema.name,
                    reason: "a full-text index on a computed property has no name that stays the same across "
                        + "launches; give it one: .fullText(\\.property, name: \"…\")")
            }
            if let field = index.fields.first(where: { !($0.weight >= 0) || !$0.weight.isFinite }) {
                throw .invalidSchema(
                    model: schema.name,
                    reason: "its full-text index \(quoted(index.name)) weighs \(field.name) at \(field.weight); a "
                        + "weight is a finite number, 0 or more")
            }
            guard names.insert(index.name).inserted else {
                throw .invalidSchema(
                    model: schema.name,
                    reason: "two full-text indexes are named \(quoted(index.name)); give one of them another name: "
                        + ".fullText(…, name: \"…\")")
            }
        }
    }
}

/// The registrations of this process's models, by type.
private let registrations = Lock<[ObjectIdentifier: ModelRegistration]>([:])
