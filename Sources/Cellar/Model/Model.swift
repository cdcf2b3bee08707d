/// A type Cellar can store: a `Codable` value whose `id` is its primary key.
///
/// A plain struct with an `id` is already a model; give it a `schema` to rename it or to number ids
/// automatically.
///
/// ```swift
/// struct Dog: Model {
///     var id: String = UUID().uuidString
///     var name: String
///     var age: Int
/// }
/// ```
///
/// The id may be any type whose `Codable` form is a scalar or a fixed structure (integers, `String`, `UUID`,
/// `Date`, raw-value enums, small structs of those): it is stored as order-preserving key bytes, so records come
/// back in id order.
public protocol Model: Codable, Identifiable, Sendable where ID: Codable & Sendable {
    /// The primary key. With an auto-increment schema, `0` asks for the next id when inserting.
    var id: ID { get set }

    /// How the model is stored: its name and whether ids are numbered automatically.
    static var schema: Schema<Self> { get }

    // How records are read and written: through `Codable`, or through the code `@Record` generates. Cellar's
    // defaults choose; a model never implements these itself.

    /// Reads the model's record at the reader's position.
    static func _readRecord(_ reader: inout RecordReader) throws -> Self
    /// Writes the model's record.
    func _writeRecord(_ writer: inout RecordWriter) throws
    /// The field number of the stored property `keyPath` names, where generated code knows it.
    static func _recordField(for keyPath: PartialKeyPath<Self>) -> Int?
    /// The stored names generated code numbers fields by; `nil` for a model read through `Codable`.
    static var _recordKeys: RecordKeys? { get }
}

extension Model {
    /// The default schema: stored under the type's name, ids given by the caller.
    public static var schema: Schema<Self> { Schema() }
}

/// How a model is stored: its name, id numbering, indexes and links.
public struct Schema<M: Model>: Sendable {
    /// The name the model is stored under: the type's name unless given. Name a model explicitly to rename its
    /// Swift type later without losing its records.
    public let name: String
    /// The secondary indexes, kept in step with the records by every write. (Full-text indexes are in
    /// `fullTextIndexes`.)
    public let indexes: [Index<M>]
    /// The full-text indexes (`.fullText`), declared among the indexes and kept apart: their entries are words.
    let fullTextIndexes: [FullTextIndex<M>]
    /// The link properties, each with a backlink index and delete rules.
    public let links: [Relationship<M>]
    /// Converts ids to and from the model's sequence when ids are numbered automatically.
    let sequence: SequenceMapping?
    /// Former names, renamed properties and default values, applied to stored records at opening.
    var declarations = SchemaDeclarations()

    struct SequenceMapping: Sendable {
        let toSequence: @Sendable (M.ID) -> Int64?
        let fromSequence: @Sendable (Int64) -> M.ID?
        let isUnset: @Sendable (M.ID) -> Bool
    }

    /// A schema whose ids are given by the caller.
    ///
    /// - Parameters:
    ///   - name: the stored name; the Swift type's name when `nil`.
    ///   - indexes: secondary indexes, such as `[.index(\.age), .unique(\.email)]`.
    ///   - links: the link properties, such as `[.link(\.dogs, deleteRule: .cascade)]`.
    public init(name: String? = nil, indexes: [Index<M>] = [], links: [Relationship<M>] = []) {
        self.name = name ?? String(describing: M.self)
        self.indexes = indexes.filter { $0.fullText == nil }
        self.fullTextIndexes = indexes.compactMap(\.fullText)
        self.links = links
        self.sequence = nil
    }
}

extension Schema where M.ID: FixedWidthInteger {
    /// A schema for an integer id.
    ///
    /// - Parameters:
    ///   - name: the stored name; the Swift type's name when `nil`.
    ///   - autoIncrement: when `true`, inserting a value whose id is `0` gives it the model's next id. Ids come
    ///     from a per-model sequence kept in the store, advanced inside the write transaction: they grow
    ///     monotonically, are never reused after a delete or a reopen, and stay unique across threads and
    ///     processes. Inserting a larger id explicitly moves the sequence past it.
    ///   - indexes: secondary indexes, such as `[.index(\.age), .unique(\.email)]`.
    ///   - links: the link properties, such as `[.link(\.dogs, deleteRule: .cascade)]`.
    public init(
        name: String? = nil, autoIncrement: Bool, indexes: [Index<M>] = [], links: [Relationship<M>] = []
    ) {
        self.name = name ?? String(describing: M.self)
        self.indexes = indexes.filter { $0.fullText == nil }
        self.fullTextIndexes = indexes.compactMap(\.fullText)
        self.links = links
        self.sequence =
            autoIncrement
            ? SequenceMapping(
                toSequence: { Int64(exactly: $0) }, fromSequence: { M.ID(exactly: $0) }, isUnset: { $0 == 0 })
            : nil
    }
}
