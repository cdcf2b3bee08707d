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
    /// Top-level fields to clear in every record: a property added again with a kind its old values cannot be
    /// read as.
    let clearedFields: [String]
    /// Required properties added with a declared default, to fill in every record that lacks them.
    let filledFields: [String]
    /// The schema to store once opening succeeds.
    let schema: ModelSchema
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
        formerName = storedUnder.flatMap { $0 == captured.name ? nil : $0 }
        guard let stored else {
            changes = hasRecordsDatabase ? [] : [.modelAdded(model: captured.name)]
            renamedFields = []
            clearedFields = []
            filledFields = []
            schema = captured
            self.retired = retired
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
        var retired = retired
        var cleared: [String] = []
        var filled: [String] = []
        for property in captured.properties {
            if let before = old.first(where: { $0.name == property.name }) {
                changes += Self.compare(model: name, path: property.name, old: before, new: property)
                continue
            }
            let hasDefault = declarations.defaultValues[property.name] != nil
            changes.append(
                .propertyAdded(
                    model: name, property: property.name, kind: property.shape.kindName,
                    isOptional: property.isOptional, hasDefault: hasDefault))
            if !property.isOptional, hasDefault { filled.append(property.name) }
            if let gone = retired.firstIndex(where: { $0.name == property.name }) {
                // Values left by the removed property are read again when their kind still fits, cleared otherwise.
                if !property.shape.reads(retired[gone].shape) { cleared.append(property.name) }
                retired.remove(at: gone)
            }
        }
        for before in old where captured.property(before.name) == nil {
            changes.append(.propertyRemoved(model: name, property: before.name))
            retired.removeAll { $0.name == before.name }
            retired.append(before)
        }
        for index in captured.indexes where !stored.indexes.contains(index) {
            changes.append(.indexAdded(model: name, index: index))
        }
        for index in stored.indexes where !captured.indexes.contains(index) {
            changes.append(.indexRemoved(model: name, index: index))
        }
        for link in stored.links where !captured.links.contains(link) {
            changes.append(.linkRemoved(model: name, link: link))
        }
        for link in captured.links where !stored.links.contains(link) {
            changes.append(.linkAdded(model: name, link: link))
        }
        if captured.autoIncrement != stored.autoIncrement {
            changes.append(.autoIncrementChanged(model: name, isOn: captured.autoIncrement))
        }
        self.changes = changes
        renamedFields = renamed
        clearedFields = cleared
        filledFields = filled
        schema = captured
        self.retired = retired
    }

    /// The changes between two versions of one property, nested fields included.
    private static func compare(model: String, path: String, old: PropertyShape, new: PropertyShape) -> [SchemaChange] {
        var changes = compare(model: model, path: path, old: old.shape, new: new.shape)
        if old.isOptional, !new.isOptional { changes.append(.propertyMadeRequired(model: model, property: path)) }
        if !old.isOptional, new.isOptional { changes.append(.propertyMadeOptional(model: model, property: path)) }
        return changes
    }

    private static func compare(model: String, path: String, old: ValueShape, new: ValueShape) -> [SchemaChange] {
        switch (old, new) {
        case (.object(let before), .object(let after)):
            var changes: [SchemaChange] = []
            for field in after {
                let fieldPath = path + "." + field.name
                if let previous = before.first(where: { $0.name == field.name }) {
                    changes += compare(model: model, path: fieldPath, old: previous, new: field)
                } else {
                    changes.append(
                        .propertyAdded(
                            model: model, property: fieldPath, kind: field.shape.kindName,
                            isOptional: field.isOptional, hasDefault: false))
                }
            }
            for field in before where !after.contains(where: { $0.name == field.name }) {
                changes.append(.propertyRemoved(model: model, property: path + "." + field.name))
            }
            return changes
        case (.list(let before), .list(let after)), (.dictionary(let before), .dictionary(let after)):
            if case .object = before, case .object = after {
                return compare(model: model, path: path, old: before, new: after)
            }
            return new.reads(old)
                ? [] : [.propertyTypeChanged(model: model, property: path, from: old.kindName, to: new.kindName)]
        default:
            return new.reads(old)
                ? [] : [.propertyTypeChanged(model: model, property: path, from: old.kindName, to: new.kindName)]
        }
    }
}
