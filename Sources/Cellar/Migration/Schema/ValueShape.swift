/// What one value of a model looks like in its `Codable` form: the part of a schema that decides whether stored
/// records can still be decoded.
///
/// Integers of every width are one kind (`int`), as the record decoder converts between widths when the value fits;
/// a `float` may become a `double` for the same reason.
indirect enum ValueShape: Hashable, Sendable, Codable {
    case bool
    case int
    case float
    case double
    case string
    case data
    case date
    case uuid
    case url
    case decimal
    /// A keyed container: a struct, or an enum with associated values, with its fields in the order they decode.
    case object([PropertyShape])
    /// An unkeyed container of one element kind: an array or a set.
    case list(ValueShape)
    /// A dictionary with string or integer keys (or keys that are `CodingKeyRepresentable`).
    case dictionary(ValueShape)
    /// A dictionary with keys of another kind (an enum, a struct), which `Codable` stores as a list of its keys and
    /// values, alternating.
    case pairs(key: ValueShape, value: ValueShape)
    /// A `Link` to the model stored under this name.
    case link(String)
    /// A type Cellar does not look into, named by its Swift type: a Foundation type (`TimeZone`, `Locale`), an enum
    /// with associated values, a class, a type that contains itself. Stored records decide
    /// whether it still reads: they are decoded at opening when the model's schema or the schema version changed.
    case opaque(String)

    /// The kind in the words Realm's migration errors use ("int", "string", "array<int>", "link<Dog>").
    var kindName: String {
        switch self {
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .double: "double"
        case .string: "string"
        case .data: "data"
        case .date: "date"
        case .uuid: "uuid"
        case .url: "url"
        case .decimal: "decimal"
        case .object: "object"
        case .list(let element): "array<\(element.kindName)>"
        case .dictionary(let value): "dictionary<\(value.kindName)>"
        case .pairs(let key, let value): "dictionary<\(key.kindName), \(value.kindName)>"
        case .link(let target): "link<\(target)>"
        case .opaque(let type): type
        }
    }

    /// Whether this shape or one inside it (a field, an element, a key or value) satisfies `test`.
    func contains(where test: (ValueShape) -> Bool) -> Bool {
        if test(self) { return true }
        switch self {
        case .object(let fields): return fields.contains { $0.shape.contains(where: test) }
        case .list(let element), .dictionary(let element): return element.contains(where: test)
        case .pairs(let key, let value): return key.contains(where: test) || value.contains(where: test)
        default: return false
        }
    }

    /// Whether a value of this shape holds a `Decimal` anywhere: a value no index key can order.
    var holdsDecimal: Bool { contains { $0 == .decimal } }

    /// Whether this shape is, or holds, a type Cellar does not look into.
    var holdsOpaque: Bool {
        contains {
            if case .opaque = $0 { return true }
            return false
        }
    }

    /// Whether values stored with shape `old` decode as this shape without help. Nested objects are compared field
    /// by field elsewhere, so two objects count as readable here.
    func reads(_ old: ValueShape) -> Bool {
        switch (old, self) {
        case (.float, .double), (.object, .object): true
        case (.list(let old), .list(let new)), (.dictionary(let old), .dictionary(let new)): new.reads(old)
        case (.pairs(let oldKey, let oldValue), .pairs(let newKey, let newValue)):
            newKey.reads(oldKey) && newValue.reads(oldValue)
        default: old == self
        }
    }
}

/// One field of a keyed container.
struct PropertyShape: Hashable, Sendable, Codable {
    /// The coding key.
    var name: String
    var shape: ValueShape
    /// Whether the field may be absent (`decodeIfPresent`, as synthesized for an optional property): old records
    /// without it still decode.
    var isOptional: Bool
}

/// A model's schema as stored in `_meta` under `schema/<Model>`: what the store compares with the model at each
/// opening. Its removed properties are kept apart, under `retired/<Model>`, so that an unchanged model is found by
/// comparing bytes.
struct ModelSchema: Hashable, Sendable, Codable {
    /// The stored name of the model.
    var name: String
    /// The fields of the model's records, the id among them.
    var properties: [PropertyShape]
    /// The indexes, with their databases.
    var indexes: [StoredIndex]
    /// The links, with their targets, rules and backlink databases.
    var links: [StoredLink]
    /// Whether ids come from the model's sequence.
    var autoIncrement: Bool

    init(
        name: String, properties: [PropertyShape], indexes: [StoredIndex], links: [StoredLink], autoIncrement: Bool
    ) {
        self.name = name
        self.properties = properties
        self.indexes = indexes
        self.links = links
        self.autoIncrement = autoIncrement
    }

    private enum CodingKeys: String, CodingKey {
        case name, properties, autoIncrement
        case indexes = "indexDescriptions"
        case links = "linkDescriptions"
        /// How a schema stored before indexes and links were described field by field named them, in words.
        case legacyIndexes = "indexes"
        case legacyLinks = "links"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .name)
        self.name = name
        properties = try container.decode([PropertyShape].self, forKey: .properties)
        autoIncrement = try container.decode(Bool.self, forKey: .autoIncrement)
        if let indexes = try container.decodeIfPresent([StoredIndex].self, forKey: .indexes) {
            self.indexes = indexes
        } else {
            let labels = try container.decodeIfPresent([String].self, forKey: .legacyIndexes) ?? []
            indexes = labels.map { StoredIndex(legacy: $0, model: name) }
        }
        if let links = try container.decodeIfPresent([StoredLink].self, forKey: .links) {
            self.links = links
        } else {
            let words = try container.decodeIfPresent([String].self, forKey: .legacyLinks) ?? []
            links = words.compactMap { StoredLink(legacy: $0, model: name) }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(properties, forKey: .properties)
        try container.encode(autoIncrement, forKey: .autoIncrement)
        try container.encode(indexes, forKey: .indexes)
        try container.encode(links, forKey: .links)
    }

    func property(_ name: String) -> PropertyShape? { properties.first { $0.name == name } }

    /// Whether a property is, or holds, a type Cellar does not look into: its records decide whether it reads.
    var holdsOpaque: Bool { properties.contains { $0.shape.holdsOpaque } }

    /// The shape of the field at a path of names (`["address", "zip"]`), through nested structs.
    func shape(at path: some Sequence<some StringProtocol>) -> ValueShape? {
        var fields = properties
        var shape: ValueShape?
        for name in path {
            guard let field = fields.first(where: { $0.name == name }) else { return nil }
            shape = field.shape
            if case .object(let inner) = field.shape { fields = inner } else { fields = [] }
        }
        return shape
    }
}
