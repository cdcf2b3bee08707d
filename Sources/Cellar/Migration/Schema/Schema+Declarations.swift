/// Schema changes declared in a model's `Schema`, which opening applies to stored records without a migration.
struct SchemaDeclarations: Sendable {
    /// Names the model was stored under before, newest first.
    var formerNames: [String] = []
    /// Renamed properties: the new coding key, then the old one.
    var renamedProperties: [(to: String, from: String)] = []
    /// Values for required properties that stored records lack, as encoded field values.
    var defaultValues: [String: @Sendable (RecordEncoder) throws -> [UInt8]] = [:]
}

extension Schema {
    /// The schema of a model that was stored under another name before (SwiftData's `originalName`).
    ///
    /// At opening, a store that holds records under `formerName` and none under the model's name moves them, with
    /// the model's id sequence and key dictionary, to the new name; indexes and backlinks are rebuilt under it. Give
    /// every former name, newest first, when a model was renamed more than once.
    public func renamed(from formerName: String...) -> Schema {
        var schema = self
        schema.declarations.formerNames += formerName
        return schema
    }

    /// The schema with `path`'s property renamed from `formerName` (SwiftData's `@Attribute(originalName:)`).
    ///
    /// At opening, stored records that hold `formerName` and not the new name are rewritten with the value under the
    /// new name. The property's coding key must be its name.
    public func property<V>(_ path: KeyPath<M, V> & Sendable, renamedFrom formerName: String) -> Schema {
        var schema = self
        schema.declarations.renamedProperties.append((Index<M>.propertyName(path), formerName))
        return schema
    }

    /// The schema with a default value for `path`'s property: adding it as a required property needs no migration,
    /// as opening writes `value` into every stored record that lacks it.
    public func property<V: Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable, default value: V) -> Schema {
        var schema = self
        schema.declarations.defaultValues[Index<M>.propertyName(path)] = { encoder in
            Array(RecordFormat.value(ofEncoded: try encoder.encode(value)))
        }
        return schema
    }
}
