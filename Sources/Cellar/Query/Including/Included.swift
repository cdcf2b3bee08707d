/// A record with what one of its links leads to, read from the same version: a row of an ``IncludingQuery``'s
/// results.
///
/// The record's properties read through the row (`row.title`), and `included` is the linked record (`Folder?` for a
/// to-one link) or records (`[Tag]` for a list, in the list's order). Use it in a SwiftUI `List` as you would the
/// record: its `id` is the record's. A model property named `record` or `included` is read as `row.record.record`.
@dynamicMemberLookup
public struct Included<M: Model, Linked: Sendable>: Identifiable, Sendable {
    /// The record the query found.
    public let record: M
    /// What the record's link leads to, in the same version: `nil` or a shorter list where a target is gone.
    public let included: Linked

    /// The record's id.
    public var id: M.ID { record.id }

    /// A property of the record.
    public subscript<V>(dynamicMember path: KeyPath<M, V>) -> V { record[keyPath: path] }
}

extension Included: Equatable where M: Equatable, Linked: Equatable {}
extension Included: Hashable where M: Hashable, Linked: Hashable {}

/// The rows of an ``IncludingQuery``: records with what their links lead to, all read from one committed version,
/// frozen like ``Results``.
public struct IncludedResults<M: Model, Linked: Sendable>: RandomAccessCollection, Sendable {
    let rows: [Included<M, Linked>]
    /// The version the records and their linked records come from.
    public let version: StoreVersion
    /// How many distinct linked records were looked up (a gone one too): each once, however many records link to it.
    public let targetsRead: Int

    public var startIndex: Int { rows.startIndex }
    public var endIndex: Int { rows.endIndex }
    public subscript(position: Int) -> Included<M, Linked> { rows[position] }
}
