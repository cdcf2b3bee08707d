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
/// from a record the model itself wrote, the first time this process writes one or opening reads one.
///
/// The tie holds when the record's top-level fields are the type's stored properties exactly, by name and in order,
/// each holding a value of its property's declared kind: what synthesized `Codable` writes. Until such a record was
/// seen, and for any other model, conditions are checked on decoded values.
final class CodableFields: Sendable {
    let keys: RecordKeys
    /// Each stored property's field number and type, by its offset in the struct. Offsets that two properties share
    /// (properties of no size) are left out: their key paths cannot be told apart.
    private let fields: [Int: Field]

    private struct Field {
        let number: Int
        let type: ObjectIdentifier
    }

    private init(_ properties: [SchemaReflection.StoredProperty]) {
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

    /// `M`'s fields, once a record it wrote was seen in this process; `nil` before, and when its records are not
    /// its stored properties.
    static func of<M: Model>(_ type: M.Type) -> CodableFields? {
        seen.withLock { $0[ObjectIdentifier(M.self)]?.fields }
    }

    /// The top-level keys of `M`'s records, in the order its encoding writes them, once this process saw one.
    static func writtenKeys<M: Model>(_ type: M.Type) -> [String]? {
        seen.withLock { $0[ObjectIdentifier(M.self)]?.keys }
    }

    /// Whether this process has looked at a record of `M` already.
    static func hasSeen<M: Model>(_ type: M.Type) -> Bool {
        seen.withLock { $0[ObjectIdentifier(M.self)] != nil }
    }

    /// Learns `M`'s keys and fields from `record`, a whole record `M`'s own encoding wrote, read with `dictionary`;
    /// the first record seen decides for the process. Returns the record's top-level keys (`nil` for a model with
    /// generated code, whose keys its code names, or bytes that are not a keyed record).
    @discardableResult
    static func learn<M: Model>(_ type: M.Type, from record: UnsafeRawBufferPointer, dictionary: KeyDictionary)
        -> [String]?
    {
        guard M._recordKeys == nil, case .keyed(let entries)? = try? RecordValue(record: record, dictionary: dictionary)
        else { return nil }
        let keys = entries.map(\.key)
        guard !hasSeen(M.self) else { return keys }
        let written = Written(keys: keys, fields: tie(M.self, entries: entries).map(CodableFields.init))
        seen.withLock { known in
            if known[ObjectIdentifier(M.self)] == nil { known[ObjectIdentifier(M.self)] = written }
        }
        return keys
    }

    /// Learns `M`'s keys and fields from `value` written again as this process's `M` writes it (a stored record may
    /// be older than the model), once per process.
    static func learn<M: Model>(from value: M, dictionary: KeyDictionary) {
        guard M._recordKeys == nil, !hasSeen(M.self) else { return }
        let encoder = RecordEncoder(dictionary: dictionary)
        guard let record = try? encoder.encodeModel(value) else { return }
        let written = dictionary.appending(encoder.addedNames)
        record.withUnsafeBytes { _ = learn(M.self, from: $0, dictionary: written) }
    }

    /// `M`'s stored properties, when a record's top-level `entries` are exactly they, in order and each of its
    /// property's kind; `nil` otherwise.
    private static func tie<M: Model>(
        _ type: M.Type, entries: [(key: String, value: RecordValue)]
    ) -> [SchemaReflection.StoredProperty]? {
        guard let stored = SchemaReflection.storedProperties(of: M.self), entries.count == stored.count else {
            return nil
        }
        let context = SchemaReflection.Context()
        for (property, entry) in zip(stored, entries) {
            let declared = context.property(named: property.name, type: property.type)
            guard entry.key == property.name, entry.value.fits(declared.shape, isOptional: declared.isOptional)
            else { return nil }
        }
        return stored
    }

    /// What a record of a model showed: its top-level keys, and its fields tied to its properties where they are.
    private struct Written {
        let keys: [String]
        let fields: CodableFields?
    }

    private static let seen = Lock<[ObjectIdentifier: Written]>([:])
}

extension RecordValue {
    /// Whether this stored value is one a property of `shape` writes: its kind, or `nil` for an optional. A type
    /// Cellar does not look into fits any value, and so does a struct, which may code itself as anything.
    func fits(_ shape: ValueShape, isOptional: Bool) -> Bool {
        switch (self, shape) {
        case (_, .opaque), (_, .object): true
        case (.null, _): isOptional
        case (.bool, .bool), (.int, .int), (.uint, .int), (.int128, .int), (.uint128, .int), (.float, .float),
            (.double, .double), (.string, .string), (.bytes, .data), (.date, .date), (.uuid, .uuid), (.url, .url),
            (.decimal, .decimal), (.keyed, .dictionary), (.unkeyed, .list), (.unkeyed, .pairs),
            (_, .link):
            true
        default: false
        }
    }
}
