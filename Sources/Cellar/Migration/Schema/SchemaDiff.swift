/// What opening a store changes for one registered model: the changes in words and the work on stored records they
/// call for. Made by comparing the schema stored in the file with the one captured from the model; pure, so that
/// `Store.pendingChanges(at:configuration:)` can show it without writing.
struct ModelSchemaPlan {
    /// The model's stored name in this configuration.
    let name: String
    /// The name its records are stored under now, when the `Schema` renames the model.
    let formerName: String?
    let changes: [SchemaChange]
    /// Top-level fields to rename in every record, old name first.
    let renamedFields: [(from: String, to: String)]
    /// Fields to clear in every record, by dotted path (`address.zip`): a property added again with a kind its old
    /// values cannot be read as.
    let clearedFields: [String]
    /// Required properties added with a declared default, to fill in every record that lacks them.
    let filledFields: [String]
    /// The schema to store once opening succeeds: the captured one (see ``schema()``).
    private let captured: Captured
    /// Whether the model numbers its ids from a sequence.
    let autoIncrement: Bool
    /// Whether opening decodes every stored record with the model's type before it goes on: a property whose shape
    /// capture does not look into (`ValueShape.opaque`) changed, or the schema changed around one. A record that no
    /// longer decodes makes the opening a migration.
    let checksRecords: Bool
    /// Properties removed from the model whose values untouched records may still hold, with the shape they had: a
    /// property added again with another shape must not read them.
    let retired: [PropertyShape]
    /// How many records the model has: a change that needs a migration needs none while there are no records.
    let recordCount: Int

    /// The changes a migration must take care of: none when there are no records to convert.
    var changesNeedingMigration: [SchemaChange] {
        recordCount == 0 ? [] : changes.filter { $0.handling == .needsMigration }
    }

    /// Whether opening rewrites stored records (renames, clears, defaults).
    var rewritesRecords: Bool {
        recordCount > 0 && (!renamedFields.isEmpty || !clearedFields.isEmpty || !filledFields.isEmpty)
    }

    /// Compares `stored` (nil when the file has no schema for the model) with `captured`.
    ///
    /// - Parameters:
    ///   - storedUnder: the name the stored schema was found under (a former name for a renamed model).
    ///   - hasRecordsDatabase: whether the file has a records database for the model. A file written before schemas
    ///     were stored has records and no schema: the captured schema is taken as it is.
    init(
        captured: ModelSchema, declarations: SchemaDeclarations, stored: ModelSchema?, retired: [PropertyShape],
        storedUnder: String?, hasRecordsDatabase: Bool, recordCount: Int
    ) {
        name = captured.name
        self.recordCount = recordCount
        self.captured = .decoded(captured)
        autoIncrement = captured.autoIncrement
        formerName = storedUnder.flatMap { $0 == captured.name ? nil : $0 }
        guard let stored else {
            changes = hasRecordsDatabase ? [] : [.modelAdded(model: captured.name)]
            renamedFields = []
            clearedFields = []
            filledFields = []
            self.retired = retired
            // A file written before schemas were stored: its records say whether they read.
            checksRecords = hasRecordsDatabase && recordCount > 0 && captured.holdsOpaque
            return
        }
        var changes: [SchemaChange] = []
        if let formerName { changes.append(.modelRenamed(from: formerName, to: name)) }
        var old = stored.properties
        var renamed: [(String, String)] = []
        for (to, from) in declarations.renamedProperties {
            guard let position = old.firstIndex(where: { $0.name == from }), !old.contains(where: { $0.name == to })
            else { continue }
            old[position].name = to
            renamed.append((from, to))
            changes.append(.propertyRenamed(model: name, from: from, to: to))
        }
        var differ = Differ(model: name, retired: retired)
        differ.compareFields(prefix: "", old: old, new: captured.properties, defaults: declarations.defaultValues)
        changes += differ.changes
        // Indexes and links compare by what they are in words: a schema stored before they were described field by
        // field reads back with the same words.
        let (storedIndexes, capturedIndexes) = (stored.indexes.map(\.label), captured.indexes.map(\.label))
        for index in capturedIndexes where !storedIndexes.contains(index) {
            changes.append(.indexAdded(model: name, index: index))
        }
        for index in storedIndexes where !capturedIndexes.contains(index) {
            changes.append(.indexRemoved(model: name, index: index))
        }
        let (storedLinks, capturedLinks) = (stored.links.map(\.label), captured.links.map(\.label))
        for link in storedLinks where !capturedLinks.contains(link) {
            changes.append(.linkRemoved(model: name, link: link))
        }
        for link in capturedLinks where !storedLinks.contains(link) {
            changes.append(.linkAdded(model: name, link: link))
        }
        if captured.autoIncrement != stored.autoIncrement {
            changes.append(.autoIncrementChanged(model: name, isOn: captured.autoIncrement))
        }
        self.changes = changes
        renamedFields = renamed
        clearedFields = differ.cleared
        filledFields = differ.filled
        self.retired = differ.retired
        checksRecords = recordCount > 0 && (differ.judgedByRecords || (captured.holdsOpaque && stored != captured))
    }

    /// A model whose stored schema is, byte for byte, the one captured from its type: the case of nearly every
    /// opening, planned without decoding either schema (comparing a schema with itself finds no change, leaves the
    /// removed properties as stored and checks no record).
    init(unchanged type: any Model.Type, name: String, autoIncrement: Bool, retired: [PropertyShape], recordCount: Int)
    {
        self.name = name
        self.recordCount = recordCount
        captured = .model(type)
        self.autoIncrement = autoIncrement
        formerName = nil
        changes = []
        renamedFields = []
        clearedFields = []
        filledFields = []
        self.retired = retired
        checksRecords = false
    }

    /// The schema to store once opening succeeds: the model's captured schema, decoded here when the plan was made
    /// without it.
    func schema() throws(StoreError) -> ModelSchema {
        switch captured {
        case .decoded(let schema): schema
        case .model(let type): try type.capturedSchema()
        }
    }

    /// Where ``schema()`` finds the captured schema.
    private enum Captured {
        case decoded(ModelSchema)
        case model(any Model.Type)
    }

}

/// Compares the fields of two versions of a keyed value, nested ones included, and keeps the books of removed fields:
/// a field removed is retired with its shape (a nested one by its dotted path), and a field added again with a shape
/// its old values cannot be read as is cleared from the records.
private struct Differ {
    let model: String
    var retired: [PropertyShape]
    var changes: [SchemaChange] = []
    /// Dotted paths of fields to clear in every record.
    var cleared: [String] = []
    /// Required top-level fields with a declared default.
    var filled: [String] = []
    /// Whether a field whose shape capture does not look into changed: stored records decide whether it still reads.
    var judgedByRecords = false

    init(model: String, retired: [PropertyShape]) {
        self.model = model
        self.retired = retired
    }

    /// Compares `old` and `new` fields under `prefix` (empty at the top; defaults are declared only there).
    mutating func compareFields(
        prefix: String, old: [PropertyShape], new: [PropertyShape],
        defaults: [String: @Sendable (RecordEncoder) throws -> [UInt8]] = [:]
    ) {
        for property in new {
            let path = prefix + property.name
            if let before = old.first(where: { $0.name == property.name }) {
                compare(path: path, old: before, new: property)
                continue
            }
            let hasDefault = defaults[property.name] != nil
            changes.append(
                .propertyAdded(
                    model: model, property: path, kind: property.shape.kindName, isOptional: property.isOptional,
                    hasDefault: hasDefault))
            if !property.isOptional, hasDefault { filled.append(path) }
            if let gone = retired.firstIndex(where: { $0.name == path }) {
                // Values left by the removed field are read again when their kind still fits, cleared otherwise.
                if !property.shape.reads(retired[gone].shape) { cleared.append(path) }
                retired.remove(at: gone)
            }
        }
        for before in old where !new.contains(where: { $0.name == before.name }) {
            let path = prefix + before.name
            changes.append(.propertyRemoved(model: model, property: path))
            retired.removeAll { $0.name == path }
            retired.append(PropertyShape(name: path, shape: before.shape, isOptional: before.isOptional))
        }
    }

    /// The changes between two versions of one field.
    private mutating func compare(path: String, old: PropertyShape, new: PropertyShape) {
        compare(path: path, old: old.shape, new: new.shape)
        if old.isOptional, !new.isOptional { changes.append(.propertyMadeRequired(model: model, property: path)) }
        if !old.isOptional, new.isOptional { changes.append(.propertyMadeOptional(model: model, property: path)) }
    }

    private mutating func compare(path: String, old: ValueShape, new: ValueShape) {
        switch (old, new) {
        case (.object(let before), .object(let after)):
            compareFields(prefix: path + ".", old: before, new: after)
        case (.list(.object(let before)), .list(.object(let after))),
            (.dictionary(.object(let before)), .dictionary(.object(let after))):
            compareFields(prefix: path + ".", old: before, new: after)
        case _ where old.holdsOpaque || new.holdsOpaque:
            // A type capture does not look into, alone or inside a list or dictionary: the records decide.
            if old != new { judgedByRecords = true }
        default:
            if !new.reads(old) {
                changes.append(
                    .propertyTypeChanged(model: model, property: path, from: old.kindName, to: new.kindName))
            }
        }
    }
}
