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
    /// A record's key components, one per path.
    let components: @Sendable (M) throws -> [[UInt8]]

    private init(
        paths: [PartialKeyPath<M>], unique: Bool, name: String?,
        components: @escaping @Sendable (M) throws -> [[UInt8]]
    ) {
        self.keyPaths = paths
        self.name = name ?? paths.map(Self.propertyName).joined(separator: "+")
        self.isUnique = unique
        self.components = components
    }

    /// The index key of a record, and whether it must be unique: like SQL's `NULL`, a `nil` component never
    /// conflicts, so many records may leave a unique property unset.
    func entry(of value: M) throws -> (key: [UInt8], mustBeUnique: Bool) {
        IndexEntryMaker.entry(of: try components(value), isUnique: isUnique)
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
        Index(paths: [path], unique: false, name: name) { [try KeyEncoding.key($0[keyPath: path])] }
    }

    /// An index on two properties, ordered by the first, then the second.
    public static func index<A: Encodable & Sendable, B: Encodable & Sendable>(
        _ first: KeyPath<M, A> & Sendable, _ second: KeyPath<M, B> & Sendable, name: String? = nil
    ) -> Index {
        Index(paths: [first, second], unique: false, name: name) {
            [try KeyEncoding.key($0[keyPath: first]), try KeyEncoding.key($0[keyPath: second])]
        }
    }

    /// A unique index on one property: a second record with the same value is refused with
    /// `StoreError.uniqueConstraintViolated`.
    public static func unique<V: Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable, name: String? = nil) -> Index {
        Index(paths: [path], unique: true, name: name) { [try KeyEncoding.key($0[keyPath: path])] }
    }

    /// A unique index on two properties together.
    public static func unique<A: Encodable & Sendable, B: Encodable & Sendable>(
        _ first: KeyPath<M, A> & Sendable, _ second: KeyPath<M, B> & Sendable, name: String? = nil
    ) -> Index {
        Index(paths: [first, second], unique: true, name: name) {
            [try KeyEncoding.key($0[keyPath: first]), try KeyEncoding.key($0[keyPath: second])]
        }
    }

    /// The database holding this index's entries.
    func databaseName(model: String) -> String { (isUnique ? "u/" : "i/") + model + "." + name }
}
