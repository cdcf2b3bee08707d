/// A query whose records come with what one of their links leads to, read from the same version in one read:
/// GRDB's `including(optional:)` and `including(all:)`, Realm's link traversal done up front.
///
/// ```swift
/// for row in try store.objects(Note.self).where(\.pinned).including(\.folder).results() {
///     print(row.title, row.included?.name ?? "no folder")
/// }
/// ```
///
/// Each linked record is read and decoded once, however many records link to it; a target that is gone is left
/// out, as `resolve(_:)` leaves it out. Make it from a finished query: `including` comes after `where`, `sorted` and
/// `limit`.
public struct IncludingQuery<M: Model, Target: Model, Linked: Sendable>: Sendable {
    var query: Query<M>
    /// Appends the ids one record's link leads to, in order.
    let targetIDs: @Sendable (M, inout [Target.ID]) -> Void
    /// What a row holds, from where its ids' targets are among those read (`nil` where one is gone), in order.
    let assemble: @Sendable (ArraySlice<Int?>, [Target]) -> Linked

    /// The matching records, each with what its link leads to, frozen.
    public func results() throws(StoreError) -> IncludedResults<M, Linked> {
        try query.run { (context) throws(StoreError) in
            let records = try query.execute(in: context, info: context.store.info(for: M.self))
            var ids: [Target.ID] = []
            var ends: [Int] = []
            ends.reserveCapacity(records.count)
            for record in records {
                targetIDs(record, &ids)
                ends.append(ids.count)
            }
            let (targets, positions, lookups) = try context.fetchEach(Target.self, ids: ids)
            var rows: [Included<M, Linked>] = []
            rows.reserveCapacity(records.count)
            var start = 0
            for (record, end) in zip(records, ends) {
                rows.append(Included(record: record, included: assemble(positions[start..<end], targets)))
                start = end
            }
            return IncludedResults(
                rows: rows, version: StoreVersion(rawValue: try context.lmdb.id), targetsRead: lookups)
        }
    }

    /// The first matching record in the query's order with what its link leads to, or `nil`.
    public func first() throws(StoreError) -> Included<M, Linked>? {
        var first = self
        first.query = query.limit(1)
        return try first.results().first
    }

    /// The matching records with what their links lead to, read off the cooperative pool.
    public func results() async throws(StoreError) -> IncludedResults<M, Linked> {
        try await offCooperativePool { () throws(StoreError) in try self.results() }
    }

    /// The first matching record with what its link leads to, or `nil`, read off the cooperative pool.
    public func first() async throws(StoreError) -> Included<M, Linked>? {
        try await offCooperativePool { () throws(StoreError) in try self.first() }
    }
}

extension Query {
    /// The query's records, each with the record its to-one link `path` leads to (`nil` when the link is `nil` or
    /// its target is gone), read in one version. See ``IncludingQuery``.
    public func including<T: Model>(_ path: KeyPath<M, Link<T>?> & Sendable) -> IncludingQuery<M, T, T?> {
        IncludingQuery(
            query: self, targetIDs: { record, ids in if let link = record[keyPath: path] { ids.append(link.id) } },
            assemble: { positions, targets in positions.first?.map { targets[$0] } })
    }

    /// The query's records, each with the record its link `path` leads to (`nil` when its target is gone), read in
    /// one version. See ``IncludingQuery``.
    public func including<T: Model>(_ path: KeyPath<M, Link<T>> & Sendable) -> IncludingQuery<M, T, T?> {
        IncludingQuery(
            query: self, targetIDs: { record, ids in ids.append(record[keyPath: path].id) },
            assemble: { positions, targets in positions.first?.map { targets[$0] } })
    }

    /// The query's records, each with the records its list of links `path` leads to, in the list's order (a target
    /// listed twice comes twice; one that is gone is left out), read in one version. See ``IncludingQuery``.
    public func including<T: Model>(_ path: KeyPath<M, [Link<T>]> & Sendable) -> IncludingQuery<M, T, [T]> {
        IncludingQuery(
            query: self, targetIDs: { record, ids in for link in record[keyPath: path] { ids.append(link.id) } },
            assemble: { positions, targets in positions.compactMap { $0.map { targets[$0] } } })
    }
}
