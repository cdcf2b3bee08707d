/// One delivery of a query's changes: the new frozen results and what changed since the previous delivery, with
/// Realm Swift's meaning of the indexes (what UIKit's batch updates expect).
///
/// Apply it to the previous results in this order to get the new ones: remove `deletions` (indexes in the previous
/// results), insert `insertions` (indexes in the new results), then reload `modifications` (indexes in the previous
/// results; `modificationsInNewResults` gives the same records' indexes in the new ones). A record that moved is a
/// deletion and an insertion.
public struct CollectionChange<M: Model>: Sendable {
    /// The results after the change: frozen, valid for as long as you hold them.
    public let results: Results<M>
    /// Whether this is the first delivery: the results as they were when observation began, with no change listed.
    public let isInitial: Bool
    /// Indexes in the previous results of the records that left them: deleted, no longer matching, or moved.
    public let deletions: [Int]
    /// Indexes in the new results of the records that entered them: inserted, newly matching, or moved.
    public let insertions: [Int]
    /// Indexes in the previous results of the records that changed and kept their place.
    public let modifications: [Int]
    /// The same records as `modifications`, as indexes in the new results.
    public let modificationsInNewResults: [Int]
    /// The ids of the records in the new results and not in the previous ones.
    public let insertedIDs: [M.ID]
    /// The ids of the records in the previous results and not in the new ones.
    public let deletedIDs: [M.ID]
    /// The ids of the records in both that changed, moved or not.
    public let modifiedIDs: [M.ID]

    /// Whether nothing changed (always so for the initial delivery).
    public var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty }

    static func initial(_ results: Results<M>) -> CollectionChange {
        CollectionChange(
            results: results, isInitial: true, deletions: [], insertions: [], modifications: [],
            modificationsInNewResults: [], insertedIDs: [], deletedIDs: [], modifiedIDs: [])
    }

    /// The change from `old` to `new`, whose records have primary keys `oldKeys` and `newKeys`; `isChanged` says
    /// which of the records in both changed, given its key and its old and new values.
    ///
    /// Records in both keep their place unless their order relative to the others changed: the longest run of them
    /// in the same order stays, the rest are moves (a deletion and an insertion), so the change is the smallest of
    /// that kind.
    init(
        from old: Results<M>, oldKeys: [KeyBytes], to new: Results<M>, newKeys: [KeyBytes],
        isChanged: (KeyBytes, M, M) -> Bool
    ) {
        var oldPositions: [KeyBytes: Int] = [:]
        oldPositions.reserveCapacity(oldKeys.count)
        for (index, key) in oldKeys.enumerated() { oldPositions[key] = index }
        // Records in both, in the new order: (old index, new index).
        var common: [(old: Int, new: Int)] = []
        var insertions: [Int] = []
        for (index, key) in newKeys.enumerated() {
            if let previous = oldPositions[key] { common.append((previous, index)) } else { insertions.append(index) }
        }
        let stays = Self.longestIncreasingRun(common.map(\.old))
        var kept = Set<Int>()
        kept.reserveCapacity(common.count)
        var deletions: [Int] = []
        var modifications: [(old: Int, new: Int)] = []
        var modifiedIDs: [M.ID] = []
        for (position, pair) in common.enumerated() {
            kept.insert(pair.old)
            let changed = isChanged(newKeys[pair.new], old[pair.old], new[pair.new])
            if changed { modifiedIDs.append(new[pair.new].id) }
            if stays.contains(position) {
                if changed { modifications.append(pair) }
            } else {
                deletions.append(pair.old)
                insertions.append(pair.new)
            }
        }
        var deletedIDs: [M.ID] = []
        for index in oldKeys.indices where !kept.contains(index) {
            deletions.append(index)
            deletedIDs.append(old[index].id)
        }
        let inNew = Set(common.map(\.new))
        self.results = new
        self.isInitial = false
        self.deletions = deletions.sorted()
        self.insertions = insertions.sorted()
        self.modifications = modifications.map(\.old)
        self.modificationsInNewResults = modifications.map(\.new)
        self.insertedIDs = newKeys.indices.filter { !inNew.contains($0) }.map { new[$0].id }
        self.deletedIDs = deletedIDs
        self.modifiedIDs = modifiedIDs
    }

    init(
        results: Results<M>, isInitial: Bool, deletions: [Int], insertions: [Int], modifications: [Int],
        modificationsInNewResults: [Int], insertedIDs: [M.ID], deletedIDs: [M.ID], modifiedIDs: [M.ID]
    ) {
        self.results = results
        self.isInitial = isInitial
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
        self.modificationsInNewResults = modificationsInNewResults
        self.insertedIDs = insertedIDs
        self.deletedIDs = deletedIDs
        self.modifiedIDs = modifiedIDs
    }

    /// The positions in `values` of one longest strictly increasing subsequence (patience sorting, O(n log n)).
    static func longestIncreasingRun(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []  // positions in `values` ending the best run of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var run = Set<Int>()
        var position = tails.last ?? -1
        while position >= 0 {
            run.insert(position)
            position = previous[position]
        }
        return run
    }
}
