import LMDB

/// The results an observer delivered last, and how to get from them to the next ones.
///
/// When a commit lists the records it wrote (the change log does, up to `ChangeLog.keyLimit` per model), only those
/// records are read: each is placed among the delivered ones by its key in the results' total order
/// (`ResultOrder`), found by binary search, so one changed row of 100,000 sorted records costs a few dozen key
/// comparisons and one decode, not a run of the query. The query runs again when that cannot be exact: a limit,
/// an offset or `distinct` (a record entering can push another out), a query that follows links (its records
/// change with their targets), a model changed wholesale, a change to another model the query reads, a plan that
/// now orders differently, or more changed records than a quarter of the results (and at least 64), where running
/// the query costs about as much.
struct ResultsReducer<M: Model> {
    let query: Query<M>
    let properties: PropertyFilter<M>
    private(set) var results: Results<M>
    /// How many records the last reduction decoded: the cost the change log saves.
    private(set) var recordsDecoded = 0
    /// How many times the query ran in full.
    private(set) var queryRuns = 0
    /// The order of the plan that produced `results`; `nil` when changes cannot be placed (see above), so the query
    /// runs again.
    private var order: ResultOrder<M>?
    /// Each delivered record's key in `order`, by primary key: computed once per full run, when the observer first
    /// waits (`prepare()`), so that the first delivery is not delayed by it.
    private var placed: [KeyBytes: [UInt8]]?

    /// Runs the query in `snapshot`: the first delivery.
    init(_ query: Query<M>, properties: PropertyFilter<M>, in snapshot: ReadScope) throws(StoreError) {
        self.query = query
        self.properties = properties
        let info = try snapshot.store.info(for: M.self)
        let plan = try query.plan(info: info, context: snapshot)
        results = Results(
            try query.execute(in: snapshot, info: info), version: StoreVersion(rawValue: try snapshot.lmdb.id),
            query: query)
        queryRuns = 1
        recordsDecoded = results.count
        order = Self.order(of: query, plan: plan)
    }

    /// Computes each delivered record's key in the results' order, if not done yet (about a microsecond a record, no
    /// decoding): called while the observer waits, so a change finds it ready. Records that do not come in that order,
    /// each once, make the query run again on changes instead.
    mutating func prepare() throws(StoreError) {
        guard let order, placed == nil else { return }
        var keys: [KeyBytes: [UInt8]] = [:]
        keys.reserveCapacity(results.count)
        var previous: [UInt8]?
        for value in results {
            let primaryKey = try Self.primaryKey(of: value)
            let key = try order.key(of: value, primaryKey: primaryKey)
            guard previous.map({ $0.lexicographicallyPrecedes(key) }) ?? true else {
                self.order = nil
                return
            }
            keys[KeyBytes(primaryKey)] = key
            previous = key
        }
        placed = keys
    }

    /// Moves to the version of `snapshot`, given what changed since the delivered results (`nil`: unknown), and
    /// returns the change; an empty one when nothing the observer sees changed.
    mutating func advance(in snapshot: ReadScope, changed: ChangedRecords?) throws(StoreError) -> CollectionChange<M> {
        let info = try snapshot.store.info(for: M.self)
        let plan = try query.plan(info: info, context: snapshot)
        let version = StoreVersion(rawValue: try snapshot.lmdb.id)
        if let changed, let order, let keys = incrementalKeys(changed, count: results.count),
            ResultOrder(query, plan: plan)?.identity == order.identity
        {
            try prepare()
            if let change = try place(keys, order: order, in: snapshot, info: info, version: version) {
                return change
            }
        }
        let new = Results(try query.execute(in: snapshot, info: info), version: version, query: query)
        queryRuns += 1
        recordsDecoded = new.count
        // A model changed wholesale names no record: one in both results is modified only when its bytes changed.
        let encoder =
            changed?.changedWholesale(M.storedName) == true
            ? RecordEncoder(dictionary: try snapshot.dictionary(for: info)) : nil
        let change = CollectionChange(
            from: results, oldKeys: try Self.primaryKeys(of: results), to: new, newKeys: try Self.primaryKeys(of: new),
            isChanged: { (key, old, new) in
                guard changed?.mayHaveChanged(key, of: M.storedName) ?? true else { return false }
                if let encoder, Self.encodeAlike(old, new, encoder) { return false }
                return properties.differ(old, new)
            })
        results = new
        order = Self.order(of: query, plan: plan)
        placed = nil
        return change
    }

    /// The keys to place, when only the query's own model changed, record by record, and not too many of them.
    private func incrementalKeys(_ changed: ChangedRecords, count: Int) -> Set<KeyBytes>? {
        guard !changed.touches(query.modelsRead.subtracting([M.storedName])),
            let keys = changed.keys(of: M.storedName), keys.count <= Swift.max(64, count / 4)
        else { return nil }
        return keys
    }

    // MARK: Placing changed records

    /// One changed record that was in the delivered results and still is.
    private struct Kept {
        let oldIndex: Int
        let value: M
        let key: [UInt8]
    }

    /// One record entering the results (inserted, newly matching, or moved) and where.
    private struct Entering {
        let value: M
        let key: [UInt8]
        /// The delivered value of a record that moved; `nil` for one that was not in the results.
        let previous: M?
    }

    /// Reads each changed record, places it, and builds the new results and the change; `nil` when the delivered
    /// results do not hold a record where its key says (which would be a bug: the query then runs again).
    private mutating func place(
        _ changedKeys: Set<KeyBytes>, order: ResultOrder<M>, in snapshot: ReadScope, info: ModelInfo,
        version: StoreVersion
    ) throws(StoreError) -> CollectionChange<M>? {
        // Taken out while it changes, so it is not copied; a failure leaves none, to be computed again.
        guard var placed = self.placed.take() else { return nil }
        let old = results.elements
        guard
            let read = try read(
                changedKeys, placed: &placed, among: old, order: order, in: snapshot, info: info)
        else { return nil }
        let (staying, moving) = try Self.stayingOrMoving(read.kept, leaving: read.leaving, among: old, order: order)
        let entering =
            (read.entering + moving.map { Entering(value: $0.value, key: $0.key, previous: old[$0.oldIndex]) })
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
        let removed = (read.leaving + moving.map(\.oldIndex)).sorted()
        let merged = try Self.merge(old, removing: removed, replacing: staying, inserting: entering, order: order)
        var elements = merged.elements
        let bounds = merged.bounds

        // Indexes: insertions in the new results; a staying record's new index counts the entering ones before it.
        let insertions = bounds.indices.map { bounds[$0] + $0 }
        var modifications: [(old: Int, new: Int)] = []
        var modifiedIDs: [(index: Int, id: M.ID)] = []
        for record in staying {
            let index = record.oldIndex - Self.count(below: record.oldIndex, in: removed)
            let newIndex = index + Self.count(below: index + 1, in: bounds)
            elements[newIndex] = record.value
            guard properties.differ(old[record.oldIndex], record.value) else { continue }
            modifications.append((record.oldIndex, newIndex))
            modifiedIDs.append((newIndex, record.value.id))
        }
        var insertedIDs: [M.ID] = []
        for (position, record) in entering.enumerated() {
            if let previous = record.previous {
                if properties.differ(previous, record.value) {
                    modifiedIDs.append((insertions[position], record.value.id))
                }
            } else {
                insertedIDs.append(record.value.id)
            }
        }
        let new = Results(elements, version: version, query: query)
        results = new
        self.placed = placed
        return CollectionChange(
            results: new, isInitial: false, deletions: removed, insertions: insertions,
            modifications: modifications.map(\.old), modificationsInNewResults: modifications.map(\.new),
            insertedIDs: insertedIDs, deletedIDs: read.leaving.sorted().map { old[$0].id },
            modifiedIDs: modifiedIDs.sorted { $0.index < $1.index }.map(\.id))
    }

    /// Reads the changed records in `snapshot` and sorts them into those that left the results (by old index), those
    /// still in them, and those that entered, updating `placed` with their keys; `nil` when a delivered record is not
    /// where its key says.
    private mutating func read(
        _ changedKeys: Set<KeyBytes>, placed: inout [KeyBytes: [UInt8]], among old: [M], order: ResultOrder<M>,
        in snapshot: ReadScope, info: ModelInfo
    ) throws(StoreError) -> (leaving: [Int], kept: [Kept], entering: [Entering])? {
        let txn = try snapshot.lmdb
        let exclusions = try query.exclusions.map { (exclusion) throws(StoreError) in
            try exclusion.link(snapshot.store)
        }
        var dictionary = try snapshot.dictionary(for: info)
        var leaving: [Int] = []
        var kept: [Kept] = []
        var entering: [Entering] = []
        recordsDecoded = 0
        for primaryKey in changedKeys {
            var current: M?
            let bytes: UnsafeRawBufferPointer?
            do { bytes = try txn.get(info.records, key: primaryKey.bytes) } catch {
                throw snapshot.lmdbError(error, "read")
            }
            if let bytes {
                let value = try snapshot.decode(
                    M.self, bytes, key: primaryKey.bytes, info: info, dictionary: &dictionary)
                recordsDecoded += 1
                var excluded = false
                for link in exclusions where !excluded {
                    do { excluded = try txn.get(link.database, key: primaryKey.bytes) != nil } catch {
                        throw snapshot.lmdbError(error, "read")
                    }
                }
                if !excluded, query.predicate?.evaluate(value) ?? true { current = value }
            }
            let newKey = try current.map { (value) throws(StoreError) in
                try order.key(of: value, primaryKey: primaryKey.bytes)
            }
            if let oldKey = placed[primaryKey] {
                let oldIndex = try Self.lowerBound(of: oldKey, in: old, order: order)
                guard oldIndex < old.count,
                    try order.key(of: old[oldIndex], primaryKey: try Self.primaryKey(of: old[oldIndex])) == oldKey
                else { return nil }
                if let current, let newKey {
                    kept.append(Kept(oldIndex: oldIndex, value: current, key: newKey))
                } else {
                    leaving.append(oldIndex)
                }
            } else if let current, let newKey {
                entering.append(Entering(value: current, key: newKey, previous: nil))
            }
            placed[primaryKey] = newKey
        }
        return (leaving, kept, entering)
    }

    /// Which kept records stay in place: those with as many unchanged records before them as they had, in the same
    /// order among themselves (the longest such run); the others move (a deletion and an insertion).
    private static func stayingOrMoving(
        _ kept: [Kept], leaving: [Int], among old: [M], order: ResultOrder<M>
    ) throws(StoreError) -> (staying: [Kept], moving: [Kept]) {
        let changedOld = (leaving + kept.map(\.oldIndex)).sorted()
        var candidates: [Kept] = []
        var moving: [Kept] = []
        for record in kept.sorted(by: { $0.oldIndex < $1.oldIndex }) {
            let slotBefore = record.oldIndex - count(below: record.oldIndex, in: changedOld)
            let bound = try lowerBound(of: record.key, in: old, order: order)
            let slotAfter = bound - count(below: bound, in: changedOld)
            if slotBefore == slotAfter { candidates.append(record) } else { moving.append(record) }
        }
        let byKey = candidates.indices.sorted { candidates[$0].key.lexicographicallyPrecedes(candidates[$1].key) }
        var rank = [Int](repeating: 0, count: candidates.count)
        for (position, index) in byKey.enumerated() { rank[index] = position }
        let inOrder = CollectionChange<M>.longestIncreasingRun(rank)
        var staying: [Kept] = []
        for (position, record) in candidates.enumerated() {
            if inOrder.contains(position) { staying.append(record) } else { moving.append(record) }
        }
        return (staying, moving)
    }

    /// The new results in one copy: `old` less the `removed` indexes, with `entering` (sorted by key) merged in where
    /// their keys fall among the remaining records (the staying ones compared by their new values, which the caller
    /// writes in), and where each entering record went, as an index among the remaining ones.
    private static func merge(
        _ old: [M], removing removed: [Int], replacing staying: [Kept], inserting entering: [Entering],
        order: ResultOrder<M>
    ) throws(StoreError) -> (elements: [M], bounds: [Int]) {
        let remainingCount = old.count - removed.count
        var newValues: [Int: M] = [:]
        for record in staying { newValues[record.oldIndex] = record.value }
        /// The old index of the remaining record at `index`: `index` plus the removed ones before it.
        func oldIndex(ofRemaining index: Int) -> Int {
            var low = 0
            var high = removed.count
            while low < high {
                let middle = (low + high) / 2
                if removed[middle] - middle <= index { low = middle + 1 } else { high = middle }
            }
            return index + low
        }
        var bounds: [Int] = []
        bounds.reserveCapacity(entering.count)
        for record in entering {
            bounds.append(
                try lowerBound(of: record.key, count: remainingCount, order: order) { index in
                    let oldIndex = oldIndex(ofRemaining: index)
                    return newValues[oldIndex] ?? old[oldIndex]
                })
        }
        var elements: [M] = []
        elements.reserveCapacity(remainingCount + entering.count)
        var start = 0
        var nextRemoved = 0
        func appendRemaining(upTo end: Int) {
            while nextRemoved < removed.count, removed[nextRemoved] < end {
                elements += old[start..<removed[nextRemoved]]
                start = removed[nextRemoved] + 1
                nextRemoved += 1
            }
            elements += old[start..<end]
            start = end
        }
        for (record, bound) in zip(entering, bounds) {
            appendRemaining(upTo: bound == remainingCount ? old.count : oldIndex(ofRemaining: bound))
            elements.append(record.value)
        }
        appendRemaining(upTo: old.count)
        return (elements, bounds)
    }

    // MARK: Helpers

    /// The first position in `values` (sorted by `order`) whose key is not below `key`.
    private static func lowerBound(of key: [UInt8], in values: [M], order: ResultOrder<M>) throws(StoreError) -> Int {
        try lowerBound(of: key, count: values.count, order: order) { values[$0] }
    }

    /// The first position among `count` values sorted by `order`, read with `value`, whose key is not below `key`.
    private static func lowerBound(
        of key: [UInt8], count: Int, order: ResultOrder<M>, value: (Int) -> M
    ) throws(StoreError) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            let probe = try order.key(of: value(middle), primaryKey: try primaryKey(of: value(middle)))
            if probe.lexicographicallyPrecedes(key) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// How many of the ascending `sorted` are below `bound`.
    private static func count(below bound: Int, in sorted: [Int]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < bound { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether `old` and `new` encode to the same record bytes; `false` when either cannot be encoded.
    private static func encodeAlike(_ old: M, _ new: M, _ encoder: RecordEncoder) -> Bool {
        guard let before = try? encoder.encodeModel(old), let after = try? encoder.encodeModel(new) else {
            return false
        }
        return before == after
    }

    private static func primaryKey(of value: M) throws(StoreError) -> [UInt8] {
        do { return try KeyEncoding.key(value.id) } catch { throw .invalidKey(model: M.storedName, reason: "\(error)") }
    }

    static func primaryKeys(of results: Results<M>) throws(StoreError) -> [KeyBytes] {
        var keys: [KeyBytes] = []
        keys.reserveCapacity(results.count)
        for value in results { keys.append(KeyBytes(try primaryKey(of: value))) }
        return keys
    }

    /// The order of `plan`, when the query's shape allows placing changes.
    private static func order(of query: Query<M>, plan: QueryPlan) -> ResultOrder<M>? {
        guard query.linkFilter == nil, query.limitCount == nil, query.skipCount == 0, query.distinctKey == nil else {
            return nil
        }
        return ResultOrder(query, plan: plan)
    }
}

/// The properties an observer cares about (`keyPaths:`): a record changed only in others is not reported as
/// modified. Empty: every property.
struct PropertyFilter<M: Model>: Sendable {
    // Key paths are immutable values; `PartialKeyPath` is just not declared `Sendable`.
    nonisolated(unsafe) let paths: [PartialKeyPath<M>]

    static var all: PropertyFilter { PropertyFilter(paths: []) }

    /// Whether `old` and `new` differ in a listed property: compared with `==` where the property's type is
    /// `Equatable`, and counted as changed where it is not.
    func differ(_ old: M, _ new: M) -> Bool {
        guard !paths.isEmpty else { return true }
        return paths.contains { path in
            guard let before = old[keyPath: path] as? any Equatable else { return true }
            return !Self.equal(before, new[keyPath: path])
        }
    }

    private static func equal<T: Equatable>(_ lhs: T, _ rhs: Any) -> Bool { (rhs as? T) == lhs }

    /// The property names, for descriptions.
    var names: [String] { paths.map { Index<M>.propertyName($0) } }
}
