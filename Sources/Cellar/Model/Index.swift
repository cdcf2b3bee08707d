/// A secondary index declared in a model's `Schema`: `.index(\.age)`, `.unique(\.email)`, or a composite
/// `.index(\.lastName, \.firstName)`.
///
/// Each index lives in its own LMDB database (`i/<Model>.<name>`, or `u/<Model>.<name>` for a unique one) that maps
/// the order-preserving key of the indexed value(s) to the records' primary keys. A unique index refuses a second
/// record with the same value, except `nil`: as with SQL's `NULL`, any number of records may leave it unset. Every insert, upsert, update and
/// delete keeps it in step inside the same transaction. Any property whose `Codable` form is a scalar, an optional or
/// a fixed structure can be indexed: raw-value enums index by their raw value.
public struct Index<M: Model>: Sendable {
    /// The index's name: its key paths' property names, joined by `+` (`age`, `lastName+firstName`).
    public let name: String
    /// Whether two records may share the indexed value(s).
    public let isUnique: Bool
    /// The indexed key paths, in order.
    nonisolated(unsafe) let keyPaths: [PartialKeyPath<M>]
    // Key paths are immutable values; they are stored unchecked only because `PartialKeyPath` is not `Sendable`.
    /// Appends a record's key, its components one after the other, to a buffer; returns whether a component is
    /// `nil`. (One buffer the caller may reuse: no array per component or per record.)
    let appendKey: @Sendable (M, inout [UInt8]) throws -> Bool
    /// For an index of text folded before it is stored (`.caseInsensitive`, `.diacriticInsensitive`): the folding.
    /// Only conditions that fold alike use it; `nil` for an index of values as they are.
    let folding: String.CompareOptions?
    /// Whether the index holds one entry per element of a list (a multi-entry index): its key buffer is the
    /// elements' keys, each after its length (`IndexKeys`).
    let isMultiEntry: Bool
    /// For a full-text index (`.fullText`), its definition: its entries are not keys, and `Schema` keeps it apart.
    let fullText: FullTextIndex<M>?

    init(fullText: FullTextIndex<M>) {
        self.keyPaths = fullText.fields.map(\.path)
        self.name = fullText.name
        self.isUnique = false
        self.folding = nil
        self.isMultiEntry = false
        self.fullText = fullText
        self.appendKey = { _, _ in false }
    }

    private init(
        paths: [PartialKeyPath<M>], unique: Bool, name: String?, folding: String.CompareOptions? = nil,
        isMultiEntry: Bool = false, appendKey: @escaping @Sendable (M, inout [UInt8]) throws -> Bool
    ) {
        self.keyPaths = paths
        self.name =
            name ?? paths.map(Self.propertyName).joined(separator: "+") + (folding.map(Self.foldingSuffix) ?? "")
        self.isUnique = unique
        self.folding = folding
        self.isMultiEntry = isMultiEntry
        self.fullText = nil
        self.appendKey = appendKey
    }

    /// The options of `options` that fold text: case and diacritics (Realm's `[c]` and `[d]`).
    static func textFolding(_ options: String.CompareOptions) -> String.CompareOptions {
        options.intersection([.caseInsensitive, .diacriticInsensitive])
    }

    /// What a folded index's name ends with, so that its database is not a plain index's: `~c`, `~d`, `~cd`.
    private static func foldingSuffix(_ folding: String.CompareOptions) -> String {
        "~" + (folding.contains(.caseInsensitive) ? "c" : "") + (folding.contains(.diacriticInsensitive) ? "d" : "")
    }

    /// The index key of a record, and whether it must be unique: like SQL's `NULL`, a `nil` component never
    /// conflicts, so many records may leave a unique property unset. (For a multi-entry index, the elements' keys
    /// in one buffer: `entries(of:)` gives them apart.)
    func entry(of value: M) throws -> (key: [UInt8], mustBeUnique: Bool) {
        var key: [UInt8] = []
        let hasNil = try appendKey(value, &key)
        return (key, isUnique && !hasNil)
    }

    /// The record's entries: its one key, or one per distinct element of a multi-entry index.
    func entries(of value: M) throws -> [(key: [UInt8], mustBeUnique: Bool)] {
        let entry = try entry(of: value)
        return isMultiEntry ? IndexKeys.split(entry.key).map { (Array($0), false) } : [entry]
    }

    /// An index of each element of a list (a multi-entry index): a record with tags `["errand", "home"]` has an entry
    /// under each, and `.contains(\.tags, "errand")` is answered from it. Its database is named after the property
    /// with `[]` (`i/Todo.tags[]`); an element that repeats has one entry.
    public static func index<E: Encodable & Sendable>(_ path: KeyPath<M, [E]> & Sendable, name: String? = nil) -> Index
    {
        elements(path, name: name) { $0 }
    }

    /// An index of each element of a set: `.contains(\.tags, "errand")` is answered from it (`i/Todo.tags[]`).
    public static func index<E: Encodable & Sendable & Hashable>(
        _ path: KeyPath<M, Set<E>> & Sendable, name: String? = nil
    ) -> Index {
        elements(path, name: name) { Array($0) }
    }

    private static func elements<C: Sendable, E: Encodable & Sendable>(
        _ path: KeyPath<M, C> & Sendable, name: String?, _ list: @escaping @Sendable (C) -> [E]
    ) -> Index {
        Index(
            paths: [path], unique: false, name: name ?? propertyName(path) + "[]", isMultiEntry: true
        ) { [reader = PropertyReader(path)] value, key in
            var keys: [[UInt8]] = []
            for element in list(reader.read(value)) { keys.append(try KeyEncoding.key(element)) }
            IndexKeys.append(keys, to: &key)
            return false
        }
    }

    /// Appends the key component of `value`; whether it is `nil`.
    private static func append<V: Encodable>(_ value: V, to key: inout [UInt8]) throws -> Bool {
        let start = key.count
        try KeyEncoding.append(value, to: &key)
        return key.count == start + 1 && key[start] == KeyEncoding.nilComponent[0]
    }

    /// Whether the name comes from a key path to a computed property, which Swift describes by an address that
    /// changes with every launch: such an index would be dropped and rebuilt at every open.
    var hasUnstableName: Bool { name.contains("<computed") }

    /// The property name of a key path (`\Dog.owner.name` → `owner.name`).
    static func propertyName(_ path: AnyKeyPath) -> String {
        let text = String(describing: path)
        guard let dot = text.firstIndex(of: ".") else { return text }
        return String(text[text.index(after: dot)...])
    }

    /// An index on one property. `name` names its database; it defaults to the property's name and must be
    /// given for a computed property, whose key path has no stable name.
    public static func index<V: Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable, name: String? = nil) -> Index {
        let reader = PropertyReader(path)
        return Index(paths: [path], unique: false, name: name) { value, key in try append(reader.read(value), to: &key)
        }
    }

    /// An index on two properties, ordered by the first, then the second.
    public static func index<A: Encodable & Sendable, B: Encodable & Sendable>(
        _ first: KeyPath<M, A> & Sendable, _ second: KeyPath<M, B> & Sendable, name: String? = nil
    ) -> Index {
        let (firstReader, secondReader) = (PropertyReader(first), PropertyReader(second))
        return Index(paths: [first, second], unique: false, name: name) { value, key in
            let firstIsNil = try append(firstReader.read(value), to: &key)
            let secondIsNil = try append(secondReader.read(value), to: &key)
            return firstIsNil || secondIsNil
        }
    }

    /// An index on text folded as `options` say (`.caseInsensitive`, `.diacriticInsensitive`, Realm's `[c]` and
    /// `[d]`): conditions that fold alike (`.equals(\.name, "taro", options: .caseInsensitive)`, `.hasPrefix` with
    /// the same options) are answered from it. Its database is named after the property and the folding
    /// (`i/Dog.name~c`), beside any plain index on the property.
    public static func index(
        _ path: KeyPath<M, String> & Sendable, options: String.CompareOptions, name: String? = nil
    ) -> Index {
        folded(path, options: options, unique: false, name: name)
    }

    /// A unique index on text folded as `options` say: with `.caseInsensitive`, "ann@example.com" and
    /// "Ann@Example.com" cannot both be stored.
    public static func unique(
        _ path: KeyPath<M, String> & Sendable, options: String.CompareOptions, name: String? = nil
    ) -> Index {
        folded(path, options: options, unique: true, name: name)
    }

    private static func folded(
        _ path: KeyPath<M, String> & Sendable, options: String.CompareOptions, unique: Bool, name: String?
    ) -> Index {
        let folding = textFolding(options)
        let reader = PropertyReader(path)
        return Index(paths: [path], unique: unique, name: name, folding: folding) { value, key in
            try append(reader.read(value).folding(options: folding, locale: nil), to: &key)
        }
    }

    /// A unique index on one property: a second record with the same value is refused with
    /// `StoreError.uniqueConstraintViolated`.
    public static func unique<V: Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable, name: String? = nil) -> Index {
        let reader = PropertyReader(path)
        return Index(paths: [path], unique: true, name: name) { value, key in try append(reader.read(value), to: &key) }
    }

    /// A unique index on two properties together.
    public static func unique<A: Encodable & Sendable, B: Encodable & Sendable>(
        _ first: KeyPath<M, A> & Sendable, _ second: KeyPath<M, B> & Sendable, name: String? = nil
    ) -> Index {
        let (firstReader, secondReader) = (PropertyReader(first), PropertyReader(second))
        return Index(paths: [first, second], unique: true, name: name) { value, key in
            let firstIsNil = try append(firstReader.read(value), to: &key)
            let secondIsNil = try append(secondReader.read(value), to: &key)
            return firstIsNil || secondIsNil
        }
    }

    /// The database holding this index's entries.
    func databaseName(model: String) -> String { DatabaseName.index(model, name, unique: isUnique) }

    /// The index as the stored schema describes it.
    func descriptor(model: String) -> StoredIndex {
        StoredIndex(
            name: name, database: databaseName(model: model),
            paths: keyPaths.map { Self.propertyName($0).split(separator: ".").map(String.init) }, isUnique: isUnique,
            isMultiEntry: isMultiEntry,
            folding: folding.map { Self.foldingSuffix($0).dropFirst().description })
    }
}

/// The keys of a multi-entry index's record in one buffer: each distinct key, in key order, after its length (two
/// bytes, little-endian). One buffer, so that the write path's reused key buffers serve both kinds of index.
enum IndexKeys {
    static func append(_ keys: [[UInt8]], to buffer: inout [UInt8]) {
        var previous: [UInt8]?
        for key in keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where key != previous {
            buffer.append(UInt8(truncatingIfNeeded: key.count))
            buffer.append(UInt8(truncatingIfNeeded: key.count >> 8))
            buffer.append(contentsOf: key)
            previous = key
        }
    }

    /// The keys `append` wrote.
    static func split(_ buffer: [UInt8]) -> [ArraySlice<UInt8>] {
        var keys: [ArraySlice<UInt8>] = []
        var offset = 0
        while offset + 2 <= buffer.count {
            let length = Int(buffer[offset]) | Int(buffer[offset + 1]) << 8
            let start = offset + 2
            guard start + length <= buffer.count else { break }
            keys.append(buffer[start..<start + length])
            offset = start + length
        }
        return keys
    }
}
