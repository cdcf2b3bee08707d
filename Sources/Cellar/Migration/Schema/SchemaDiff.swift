/// What opening a store changes for one registered model: the changes in words and the work on stored records they
/// call for. Made by comparing the schema stored in the file with the one described from the model; pure, so that
/// `Store.pendingChanges(at:configuration:)` can show it without writing.
///
/// The comparison names each change in Realm's words; the stored records decide whether the model still reads them.
/// A model's description comes from its stored properties, not from running its `init(from:)`, so only a decode of
/// its own records can say whether a change needs a migration: a required property that its decoder fills in when
/// absent does not, a custom decoder that changed without its properties does.
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
    /// The schema to store once opening succeeds: the described one (see ``schema()``).
    private let described: Described
    /// Whether the model numbers its ids from a sequence.
    let autoIncrement: Bool
    /// Whether the model's fields differ from the stored ones (or no schema was stored).
    let fieldsChanged: Bool
    /// Whether every record is decoded with the model's type: a change may leave some records unreadable (one the
    /// comparison says needs a migration, or the model holds a type Cellar does not look into, which may have changed
    /// inside), or no schema was stored.
    /// A change no record can fail on alone (an optional property added, a property removed or made optional) needs
    /// the first record only. Before opening writes anything when nothing rewrites the records first
    /// (``recordCheck``), after the renames, defaults and migration steps otherwise.
    let decodesEveryRecord: Bool
    /// Properties removed from the model whose values untouched records may still hold, with the shape they had: a
    /// property added again with another shape must not read them.
    let retired: [PropertyShape]
    /// How many records the model has: a change that needs a migration needs none while there are no records.
    let recordCount: Int
    /// What a decode of stored records said before opening wrote anything, when ``recordCheck`` asked for one: the
    /// first record that did not read, as a change. Set by the opening that made the plan.
    var unreadable: SchemaChange?

    /// Which stored records opening decodes with the model's type before it writes anything.
    enum RecordCheck: Equatable {
        /// None: there are no records, or opening rewrites them (renames, defaults, cleared fields) and decodes
        /// them all afterwards.
        case none
        /// The first record: the schema is unchanged, and a model whose coding changed without its properties
        /// (coding keys, a custom `init(from:)`) is found at opening, not at a later read.
        case first
        /// Every record: the model's fields changed in a way some records may not follow (``decodesEveryRecord``).
        case all
    }

    var recordCheck: RecordCheck {
        guard recordCount > 0 else { return .none }
        guard fieldsChanged else { return .first }
        if rewritesRecords { return .none }
        return decodesEveryRecord ? .all : .first
    }

    /// The changes a migration must take care of, as the stored records decide: none while every record decoded
    /// reads (or while none was decoded yet: records that opening rewrites are decoded after it rewrote them), else
    /// the changes the comparison found that need a migration, and the record's own words when they name another
    /// property.
    var changesNeedingMigration: [SchemaChange] {
        guard recordCount > 0, unreadable != nil else { return [] }
        return reportedChanges.filter { $0.handling == .needsMigration }
    }

    /// The changes in words: the comparison's, and the record's that did not read when it names a property no change
    /// that needs a migration names.
    var reportedChanges: [SchemaChange] {
        guard let unreadable,
            !changes.contains(where: { $0.handling == .needsMigration && $0.property == unreadable.property })
        else { return changes }
        return changes + [unreadable]
    }

    /// Whether a change may have changed stored values, so that the model's indexes and backlinks are rebuilt.
    var changesValues: Bool { recordCount > 0 && changes.contains { $0.handling == .needsMigration } }

    /// Whether opening rewrites stored records (renames, clears, defaults).
    var rewritesRecords: Bool {
        recordCount > 0 && (!renamedFields.isEmpty || !clearedFields.isEmpty || !filledFields.isEmpty)
    }

    /// Compares `stored` (nil when the file has no schema for the model) with `described`.
    ///
    /// - Parameters:
    ///   - storedUnder: the name the stored schema was found under (a former name for a renamed model).
    ///   - hasRecordsDatabase: whether the file has a records database for the model. A file written before schemas
    ///     were stored has records and no schema: its records say whether they read.
    init(
        described: ModelSchema, declarations: SchemaDeclarations, stored: ModelSchema?, retired: [PropertyShape],
        storedUnder: String?, hasRecordsDatabase: Bool, recordCount: Int
    ) {
        name = described.name
        self.recordCount = recordCount
        self.described = .decoded(described)
        autoIncrement = described.autoIncrement
        formerName = storedUnder.flatMap { $0 == described.name ? nil : $0 }
        guard let stored else {
            changes = hasRecordsDatabase ? [] : [.modelAdded(model: described.name)]
            renamedFields = []
            clearedFields = []
            filledFields = []
            self.retired = retired
            fieldsChanged = hasRecordsDatabase
            decodesEveryRecord = hasRecordsDatabase
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
        differ.compareFields(prefix: "", old: old, new: described.properties, defaults: declarations.defaultValues)
        changes += differ.changes
        // Indexes and links compare by what they are in words: a schema stored before they were described field by
        // field reads back with the same words.
        let (storedIndexes, describedIndexes) = (stored.indexes.map(\.label), described.indexes.map(\.label))
        for index in describedIndexes where !storedIndexes.contains(index) {
            changes.append(.indexAdded(model: name, index: index))
        }
        for index in storedIndexes where !describedIndexes.contains(index) {
            changes.append(.indexRemoved(model: name, index: index))
        }
        let (storedLinks, describedLinks) = (stored.links.map(\.label), described.links.map(\.label))
        for link in storedLinks where !describedLinks.contains(link) {
            changes.append(.linkRemoved(model: name, link: link))
        }
        for link in describedLinks where !storedLinks.contains(link) {
            changes.append(.linkAdded(model: name, link: link))
        }
        if described.autoIncrement != stored.autoIncrement {
            changes.append(.autoIncrementChanged(model: name, isOn: described.autoIncrement))
        }
        self.changes = changes
        renamedFields = renamed
        clearedFields = differ.cleared
        filledFields = differ.filled
        self.retired = differ.retired
        fieldsChanged = stored.properties != described.properties
        // A type Cellar does not look into may have changed inside with its name kept: every record decides.
        decodesEveryRecord =
            fieldsChanged
            && (changes.contains { $0.handling == .needsMigration } || differ.opaqueChanged || described.holdsOpaque)
    }

    /// A model whose stored schema is, byte for byte, the one described from its type: the case of nearly every
    /// opening, planned without decoding either schema (comparing a schema with itself finds no change and leaves
    /// the removed properties as stored).
    init(unchanged type: any Model.Type, name: String, autoIncrement: Bool, retired: [PropertyShape], recordCount: Int)
    {
        self.name = name
        self.recordCount = recordCount
        described = .model(type)
        self.autoIncrement = autoIncrement
        formerName = nil
        changes = []
        renamedFields = []
        clearedFields = []
        filledFields = []
        self.retired = retired
        fieldsChanged = false
        decodesEveryRecord = false
    }

    /// The schema to store once opening succeeds: the model's described schema, decoded here when the plan was
    /// made without it.
    func schema() throws(StoreError) -> ModelSchema {
        switch described {
        case .decoded(let schema): schema
        case .model(let type): try type.describedSchema()
        }
    }

    /// Where ``schema()`` finds the described schema.
    private enum Described {
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
    /// Whether a field of a type Cellar does not look into changed: only every record can say whether it reads.
    var opaqueChanged = false

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
            // A type Cellar does not look into, alone or inside a list or dictionary: every record decides.
            if old != new { opaqueChanged = true }
        default:
            if !new.reads(old) {
                changes.append(
                    .propertyTypeChanged(model: model, property: path, from: old.kindName, to: new.kindName))
            }
        }
    }
}
