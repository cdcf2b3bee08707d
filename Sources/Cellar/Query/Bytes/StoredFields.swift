import LMDB

/// Which field of a model's records holds the property a key path names, so that a condition on it is checked on
/// the record's bytes, and a record that does not match is never decoded.
///
/// A `@Record` model's generated code says. A plain `Codable` model's fields are tied to its stored properties by
/// name when its decoding is the one Swift synthesizes (the fields it reads are its stored properties, by name, in
/// order, each of its declared kind): a key path to a stored property is found by its offset in the struct, and
/// its value is what its field holds. Any other model (custom coding keys, an `init(from:)` that reads other keys or
/// kinds, a class) has its conditions checked on decoded values.
enum StoredFields {
    /// The stored names `M`'s fields are numbered by, when its key paths can be tied to them.
    static func keys<M: Model>(of type: M.Type) -> RecordKeys? {
        M._recordKeys ?? CodableFields.of(M.self)?.keys
    }

    /// The number, among `keys(of:)`, of the field that holds `path`'s property; `nil` for a computed property, a
    /// path into a property, or a model whose fields cannot be tied to its properties. `absentIsNil` says whether a
    /// record without the field holds `nil` there: so for generated code, which reads it so; a plain `Codable`
    /// model's writes store `nil` as a null, so a record without the field was written some other way (by an older
    /// version, whose `init(from:)` may read another key for it) and is decoded to tell.
    static func field<M: Model, V>(of path: KeyPath<M, V>) -> (number: Int, absentIsNil: Bool)? {
        if M._recordKeys != nil { return M._recordField(for: path).map { ($0, true) } }
        return CodableFields.of(M.self)?.field(of: path).map { ($0, false) }
    }
}

/// A plain `Codable` model's stored properties, tied to its records' fields: one per model type and process, learnt
/// from its schema capture and its type's metadata the first time a condition asks.
final class CodableFields: Sendable {
    let keys: RecordKeys
    /// Each stored property's field number and type, by its offset in the struct. Offsets that two properties share
    /// (properties of no size) are left out: their key paths cannot be told apart.
    private let fields: [Int: Field]

    private struct Field {
        let number: Int
        let type: ObjectIdentifier
    }

    private init(_ properties: [SchemaCapture.StoredProperty]) {
        keys = RecordKeys(properties.map(\.name))
        var fields: [Int: Field] = [:]
        var shared: Set<Int> = []
        for (number, property) in properties.enumerated() {
            if fields.updateValue(Field(number: number, type: ObjectIdentifier(property.type)), forKey: property.offset)
                != nil
            {
                shared.insert(property.offset)
            }
        }
        for offset in shared { fields[offset] = nil }
        self.fields = fields
    }

    /// The field of the stored property `path` names: the one at its offset, of its type (a path into a property
    /// may start at the same offset, but its value has another type).
    func field<M, V>(of path: KeyPath<M, V>) -> Int? {
        guard let offset = MemoryLayout<M>.offset(of: path), let field = fields[offset],
            field.type == ObjectIdentifier(V.self)
        else { return nil }
        return field.number
    }

    /// `M`'s fields, learnt once per process; `nil` when its decoding is not the synthesized one.
    static func of<M: Model>(_ type: M.Type) -> CodableFields? {
        let identity = ObjectIdentifier(M.self)
        if let known = learnt.withLock({ $0[identity] }) { return known }
        // The capture opening made (kept per process), so that a model's decoding runs on placeholders once. A field
        // whose type refused placeholders (opaque) ends what the decoding showed: the fields after it are the
        // stored properties' names, not what `init(from:)` asked for, so they prove nothing.
        let fields = (try? M.capturedSchema()).flatMap { captured -> CodableFields? in
            guard !captured.properties.contains(where: { if case .opaque = $0.shape { true } else { false } }) else {
                return nil
            }
            return SchemaCapture.synthesizedFields(of: M.self, fields: captured.properties).map(CodableFields.init)
        }
        learnt.withLock { $0[identity] = fields }
        return fields
    }

    private static let learnt = Lock<[ObjectIdentifier: CodableFields?]>([:])
}
