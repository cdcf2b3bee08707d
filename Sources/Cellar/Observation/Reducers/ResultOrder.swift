/// The total order a plan gives a query's results, as one byte string per record that compares as the records come:
/// what lets an observer place a changed record among the delivered ones without running the query again.
///
/// A sorted query orders by its sort keys, then by primary key in the direction of the last sort key (the in-memory
/// sort breaks ties that way, as reading a one-property index does). A plan that reads an index in order orders by
/// the index's whole key, then the primary key. A scan orders by primary key.
struct ResultOrder<M: Model> {
    /// What decides the order; two plans with the same identity order records alike.
    enum Identity: Equatable {
        case primaryKey
        case sortKeys
        case index(position: Int, descending: Bool)
    }

    let identity: Identity
    private let components: [(key: (M) throws(StoreError) -> [UInt8], ascending: Bool)]
    private let primaryKeyAscending: Bool

    /// The order of `query` run with `plan`, or `nil` when its records follow links (their order is that of the
    /// link targets, which a record alone cannot tell).
    init?(_ query: Query<M>, plan: QueryPlan) {
        // Ranked results move whenever a search's statistics change, which a record alone cannot tell.
        if plan.ranking != nil { return nil }
        switch plan.access {
        case .backlinks:
            return nil
        case .search where query.ordering.isEmpty:
            return nil
        // (A multi-entry index's one equal key gives its records in primary-key order: the sort keys' case below.)
        case .indexRanges(let position, _) where plan.isOrdered && !M.schema.indexes[position].isMultiEntry,
            .indexOrder(let position):
            let index = M.schema.indexes[position]
            identity = .index(position: position, descending: plan.isDescending)
            components = [
                (
                    { (value) throws(StoreError) in
                        do { return try index.entry(of: value).key } catch {
                            throw .invalidKey(model: M.storedName, reason: "\(error)")
                        }
                    }, !plan.isDescending
                )
            ]
            primaryKeyAscending = !plan.isDescending
        case .records where query.ordering.isEmpty, .primaryKeyRanges where query.ordering.isEmpty:
            identity = .primaryKey
            components = []
            primaryKeyAscending = true
        case .records, .indexRanges, .primaryKeyRanges, .search:
            identity = .sortKeys
            components = query.ordering.map { sort in
                ({ (value) throws(StoreError) in try sort.key(value) }, sort.ascending)
            }
            primaryKeyAscending = query.ordering.last?.ascending ?? true
        }
    }

    /// The record's place in the order: each component escaped so that none is a prefix of another (`0x00` becomes
    /// `0x00 0xFF`, and `0x00 0x00` ends it), its bytes inverted when descending.
    func key(of value: M, primaryKey: [UInt8]) throws(StoreError) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(primaryKey.count + 2 + components.count * 16)
        for component in components { Self.append(try component.key(value), ascending: component.ascending, to: &key) }
        Self.append(primaryKey, ascending: primaryKeyAscending, to: &key)
        return key
    }

    private static func append(_ bytes: [UInt8], ascending: Bool, to key: inout [UInt8]) {
        let flip: UInt8 = ascending ? 0 : 0xFF
        for byte in bytes {
            key.append(byte ^ flip)
            if byte == 0 { key.append(0xFF ^ flip) }
        }
        key.append(flip)
        key.append(flip)
    }
}
