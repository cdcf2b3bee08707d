import Foundation
import LMDB

/// How a query reads its records, chosen from the schema's indexes.
struct QueryPlan {
    enum Access {
        /// Every record, in primary-key order (backwards for a descending sort on the id).
        case records
        /// The records whose primary keys lie in key ranges: a condition on the id, answered by the records database
        /// itself.
        case primaryKeyRanges([KeyRange])
        /// The entries of one index within key ranges: the driving condition's answer.
        case indexRanges(position: Int, ranges: [KeyRange])
        /// A whole index, in its order: the query's sort.
        case indexOrder(position: Int)
        /// The records that link to the query's targets, from the backlink index of the link at `position`.
        case backlinks(position: Int)
        /// The records a search matches, from the full-text index at `position`, best first.
        case search(position: Int)

        /// Whether the records come in primary-key order.
        var readsPrimaryKeyOrder: Bool {
            switch self {
            case .records, .primaryKeyRanges: true
            default: false
            }
        }
    }

    let access: Access
    /// The records come out in the order asked for: nothing is sorted in memory, and a limit stops the read.
    let isOrdered: Bool
    /// Read the index backwards, for a descending sort.
    let isDescending: Bool
    /// Which conjunct of the predicate drives an index read, if one does.
    let driver: Int?
    /// Whether the index read alone decides the predicate, so records need no check: the driving condition is the
    /// whole predicate and its index has that one property.
    let indexDecides: Bool
    /// For a query with no sort of its own whose search does not drive (another condition is more selective): the
    /// conjunct whose full-text index ranks the records found, and the index's position.
    var ranking: (conjunct: Int, position: Int)? = nil
}

extension Query {
    /// Picks the plan: the most selective condition that an index answers drives; otherwise a sort that an index
    /// matches is read from it; otherwise the records are scanned. Every other condition is checked per record.
    func plan(info: ModelInfo, context: ReadScope) throws(StoreError) -> QueryPlan {
        if let linkFilter {
            // Following the link is the query's restriction; it drives, and everything else is checked per record.
            // A search among the conditions ranks the records found, unless the query sorts them.
            let search = try searchConjunct(predicate?.node.conjuncts ?? [], info: info)
            if search != nil { try context.prepareFullTextRead(info) }
            var plan = QueryPlan(
                access: .backlinks(position: try linkFilter.position.get()),
                isOrdered: ordering.isEmpty && search == nil, isDescending: false, driver: nil, indexDecides: false)
            if let search, ordering.isEmpty { plan.ranking = (search.conjunct, search.position) }
            return plan
        }
        let indexes = M.schema.indexes
        // The id's key is the record's key: the records database is an index on it.
        func isID(_ path: PartialKeyPath<M>?) -> Bool { path.map(namesID) ?? false }
        /// The index that answers a condition on `path` whose keys are of text folded as `folding` says (`nil`:
        /// values as they are): a folded index answers only conditions folded alike, and orders no sort.
        func indexPosition(
            for path: PartialKeyPath<M>, folding: String.CompareOptions? = nil, elements: Bool = false
        ) -> Int? {
            indexes.firstIndex {
                $0.keyPaths.count == 1 && $0.keyPaths[0] == path && $0.folding == folding && $0.isMultiEntry == elements
            }
                ?? (folding == nil && !elements
                    ? indexes.firstIndex { $0.keyPaths.first == path && $0.folding == nil && !$0.isMultiEntry } : nil)
        }
        let conjuncts = predicate?.node.conjuncts ?? []
        let search = try searchConjunct(conjuncts, info: info)
        if search != nil { try context.prepareFullTextRead(info) }
        /// A condition an index answers; `position` is `nil` for a condition on the id, answered by the records.
        typealias Candidate = (condition: Comparison<M>, position: Int?, ranges: [KeyRange], conjunct: Int)
        var candidates: [Candidate] = []
        for (number, node) in conjuncts.enumerated() {
            guard case .condition(let condition) = node, let found = condition.ranges, let path = condition.path
            else { continue }
            if isID(path), condition.folding == nil, !condition.matchesElements {
                candidates.append((condition, nil, try found.get(), number))
            } else if let position = indexPosition(
                for: path, folding: condition.folding, elements: condition.matchesElements)
            {
                candidates.append((condition, position, try found.get(), number))
            }
        }
        // With a choice, the condition whose index holds the fewest entries drives (counted up to a cap, reading no
        // records); the kind of comparison breaks ties.
        var driver = candidates.min { $0.condition.rank < $1.condition.rank }
        if let search {
            // A search drives unless another condition's index holds fewer entries than the search's words have
            // documents: then its records are read, the search checked on each, and ranked in memory.
            let estimate = try searchEstimate(search.query, position: search.position, info: info, context: context)
            var fewest = Int.max
            let txn = try context.lmdb
            for candidate in candidates {
                fewest = Swift.min(
                    fewest,
                    try Self.countEntries(
                        in: candidate.position.map { info.indexes[$0] } ?? info.records, ranges: candidate.ranges,
                        txn: txn, context: context, cap: estimate))
            }
            if fewest >= estimate || candidates.isEmpty {
                return QueryPlan(
                    access: .search(position: search.position), isOrdered: ordering.isEmpty, isDescending: false,
                    driver: search.conjunct, indexDecides: conjuncts.count == 1)
            }
        }
        if candidates.count > 1 {
            let txn = try context.lmdb
            var best = (count: Int.max, rank: Int.max)
            for candidate in candidates {
                let count = try Self.countEntries(
                    in: candidate.position.map { info.indexes[$0] } ?? info.records, ranges: candidate.ranges,
                    txn: txn, context: context, cap: 512)
                if (count, candidate.condition.rank) < best {
                    best = (count, candidate.condition.rank)
                    driver = candidate
                }
            }
        }
        let firstSort = ordering.first
        let access: QueryPlan.Access
        let isOrdered: Bool
        if let driver, let position = driver.position {
            access = .indexRanges(position: position, ranges: Self.normalized(driver.ranges))
            isOrdered =
                ordering.isEmpty
                || (ordering.count == 1 && indexes[position].folding == nil && !indexes[position].isMultiEntry
                    && indexes[position].keyPaths.first == firstSort?.path)
        } else if let driver {
            access = .primaryKeyRanges(Self.normalized(driver.ranges))
            isOrdered = ordering.isEmpty || (ordering.count == 1 && isID(firstSort?.path))
        } else if let firstSort, ordering.count == 1, isID(firstSort.path) {
            access = .records
            isOrdered = true
        } else if let firstSort, ordering.count == 1, let position = indexPosition(for: firstSort.path) {
            access = .indexOrder(position: position)
            isOrdered = true
        } else {
            access = .records
            isOrdered = ordering.isEmpty
        }
        let indexDecides =
            driver.map { conjuncts.count == 1 && $0.position.map { indexes[$0].keyPaths.count == 1 } ?? true } ?? false
        var plan = QueryPlan(
            access: access, isOrdered: isOrdered && (search == nil || !ordering.isEmpty),
            isDescending: isOrdered && firstSort?.ascending == false, driver: driver?.conjunct,
            indexDecides: indexDecides)
        if let search, ordering.isEmpty { plan.ranking = (search.conjunct, search.position) }
        return plan
    }

    /// The search of the conjunct `plan` names, and what the full-text index at `position` needs to run it.
    private func searchParts(_ plan: QueryPlan, position: Int) -> (
        query: SearchQuery, columns: UInt32, weights: [Double]
    ) {
        let index = M.schema.fullTextIndexes[position]
        let conjuncts = predicate?.node.conjuncts ?? []
        guard let driver = plan.driver ?? plan.ranking?.conjunct, driver < conjuncts.count,
            case .condition(let condition) = conjuncts[driver], let query = condition.search
        else { return (SearchQuery(""), 0, index.weights) }
        return (query, index.columns(for: condition.path), index.weights)
    }

    /// `values` best first, as the search of `ranking` scores them with the statistics of its full-text index: what
    /// a search that does not drive the query gives when the query has no sort of its own.
    private func rankedInMemory(
        _ values: [M], ranking: (conjunct: Int, position: Int), in context: ReadScope, info: ModelInfo
    ) throws(StoreError) -> [M] {
        guard
            let scores = try searchScores(values, conjunct: ranking.conjunct, position: ranking.position, context, info)
        else { return values }
        return values.indices.sorted { scores[$0] != scores[$1] ? scores[$0] > scores[$1] : $0 < $1 }.map { values[$0] }
    }

    /// The BM25 score of each of `values` for the search of the first conjunct a full-text index answers; `nil` when
    /// there is none.
    func searchScores(_ values: [M], in context: ReadScope, info: ModelInfo) throws(StoreError) -> [Double]? {
        guard let search = try searchConjunct(predicate?.node.conjuncts ?? [], info: info) else { return nil }
        try context.prepareFullTextRead(info)
        return try searchScores(values, conjunct: search.conjunct, position: search.position, context, info)
    }

    /// The score of each value for the search of `conjunct`, from each record's own texts and the index's statistics:
    /// the same number the index's postings give, whichever way the query ran.
    private func searchScores(
        _ values: [M], conjunct: Int, position: Int, _ context: ReadScope, _ info: ModelInfo
    ) throws(StoreError) -> [Double]? {
        let conjuncts = predicate?.node.conjuncts ?? []
        guard conjunct < conjuncts.count, case .condition(let condition) = conjuncts[conjunct],
            let query = condition.search
        else { return nil }
        let index = M.schema.fullTextIndexes[position]
        let columns = index.columns(for: condition.path)
        let storage = FullTextStorage(databases: info.fullText[position], core: context.store.core)
        let txn = try context.lmdb
        let phrases = query.phrases
        var found: [Int] = []
        for phrase in phrases {
            // A term's count of documents is stored, for the index's every column.
            if phrase.terms.count == 1, let term = phrase.terms.first, !term.isPrefix,
                columns == index.columns(for: nil)
            {
                found.append(Int(clamping: try storage.documentFrequency(of: term.bytes, txn)))
            } else {
                found.append(try storage.postings(of: phrase, columns: columns, txn).count)
            }
        }
        let statistics = try storage.statistics(txn)
        let ranking = BM25(
            documentCount: statistics.count, totalLength: statistics.totalLength, frequencies: found)
        let weights = index.weights
        return values.map { value in
            let document = DocumentTerms(texts: index.texts(of: value))
            let frequencies = phrases.map { phrase in
                BM25.frequency(of: document.starts(of: phrase, columns: columns), columnWeights: weights)
            }
            return ranking.score(length: document.length, frequencies: frequencies)
        }
    }

    /// The search of the first conjunct a full-text index answers, for highlighting.
    var firstSearch: SearchQuery? {
        for node in predicate?.node.conjuncts ?? [] {
            if case .condition(let condition) = node, let search = condition.search { return search }
        }
        return nil
    }

    /// The first conjunct that is a search a full-text index answers, with the index's position. A search of the
    /// whole index (`.matches("…")`) with no full-text index declared is refused.
    private func searchConjunct(_ conjuncts: [Condition<M>.Node], info: ModelInfo) throws(StoreError)
        -> (conjunct: Int, position: Int, query: SearchQuery, columns: UInt32)?
    {
        let indexes = M.schema.fullTextIndexes
        for (number, node) in conjuncts.enumerated() {
            guard case .condition(let condition) = node, let query = condition.search else { continue }
            if let position = indexes.firstIndex(where: { $0.columns(for: condition.path) != 0 }) {
                return (number, position, query, indexes[position].columns(for: condition.path))
            }
            if condition.path == nil {
                throw .invalidSchema(
                    model: info.name,
                    reason: "a search of the whole model (.matches(\(query.text.debugDescription))) needs a full-text "
                        + "index; declare one: Schema(indexes: [.fullText(\\.title, \\.body)])")
            }
        }
        return nil
    }

    /// About how many documents a search matches, at most: a phrase, its first term's documents (a prefix, every
    /// document); all of an `AND`, the fewest; any of an `OR`, their sum; `a NOT b`, a's.
    private func searchEstimate(_ query: SearchQuery, position: Int, info: ModelInfo, context: ReadScope)
        throws(StoreError) -> Int
    {
        let storage = FullTextStorage(databases: info.fullText[position], core: context.store.core)
        let txn = try context.lmdb
        func estimate(_ node: SearchQuery.Node) throws(StoreError) -> Int {
            switch node {
            case .phrase(let phrase):
                guard let first = phrase.terms.first, !first.isPrefix else { return .max }
                return Int(clamping: try storage.documentFrequency(of: first.bytes, txn))
            case .and(let nodes):
                var fewest = Int.max
                for node in nodes { fewest = Swift.min(fewest, try estimate(node)) }
                return fewest
            case .or(let nodes):
                var total = 0
                for node in nodes {
                    let (sum, overflow) = total.addingReportingOverflow(try estimate(node))
                    total = overflow ? .max : sum
                }
                return total
            case .not(let kept, _):
                return try estimate(kept)
            }
        }
        return try query.root.map(estimate) ?? 0
    }

    /// The plan in words, for `explain()`.
    func describe(_ plan: QueryPlan, info: ModelInfo, context: ReadScope) throws(StoreError) -> String {
        let indexes = M.schema.indexes
        let conjuncts = predicate?.node.conjuncts ?? []
        var words: [String] = []
        switch plan.access {
        case .indexRanges(let position, _):
            let driving = plan.driver.map { conjuncts[$0].description } ?? ""
            words.append("use index \(indexes[position].databaseName(model: info.name)) for \(driving)")
        case .indexOrder(let position):
            words.append(
                "read index \(indexes[position].databaseName(model: info.name)) in "
                    + (plan.isDescending ? "descending" : "ascending") + " order")
        case .records:
            words.append(
                plan.isOrdered && !ordering.isEmpty
                    ? "read r/\(info.name) in " + (plan.isDescending ? "descending" : "ascending") + " id order"
                    : "scan r/\(info.name)")
        case .primaryKeyRanges:
            let driving = plan.driver.map { conjuncts[$0].description } ?? ""
            words.append("look up r/\(info.name) by id for \(driving)")
        case .backlinks(let position):
            let targets = try linkFilter.map { (filter) throws(StoreError) in try filter.describeTargets(context) }
            words.append("read backlink index \(info.links[position].databaseName) for \(targets ?? "")")
        case .search(let position):
            let driving = plan.driver.map { conjuncts[$0].description } ?? ""
            words.append(
                "search full-text index \(info.fullText[position].name) for \(driving)"
                    + (plan.isOrdered ? ", best first (BM25)" : ""))
        }
        for exclusion in exclusions {
            let link = try exclusion.link(context.store)
            words.append("skip the records in backlink index \(link.databaseName)")
        }
        let checked = conjuncts.enumerated().filter { $0.offset != plan.driver }.map(\.element)
        let onBytes = checked.filter(\.checksBytes).map(\.description)
        let decoded = checked.filter { !$0.checksBytes }.map(\.description)
        if !onBytes.isEmpty {
            words.append("check each record's bytes for \(onBytes.joined(separator: " && ")) before decoding it")
        }
        if !decoded.isEmpty { words.append("check each record for \(decoded.joined(separator: " && "))") }
        if let ranking = plan.ranking {
            words.append("rank in memory by BM25 from full-text index \(info.fullText[ranking.position].name)")
        } else if !plan.isOrdered {
            let keys = ordering.map { $0.name + ($0.ascending ? "" : " descending") }
            words.append("sort in memory by \(keys.joined(separator: ", "))")
        }
        if let distinctKey { words.append("keep the first record of each \(distinctKey.name)") }
        if skipCount > 0 { words.append("skip \(skipCount)") }
        if let limitCount { words.append(plan.isOrdered ? "stop after \(limitCount)" : "keep \(limitCount)") }
        return words.joined(separator: ", then ")
    }

    /// Ranges in key order without repeats, so an `in` list reads each key once and in order.
    private static func normalized(_ ranges: [KeyRange]) -> [KeyRange] {
        guard ranges.count > 1 else { return ranges }
        var seen = Set<[UInt8]?>()
        return
            ranges
            .sorted { ($0.lower ?? []).lexicographicallyPrecedes($1.lower ?? []) }
            .filter { seen.insert($0.lower).inserted || $0.lower == nil }
    }

    // MARK: Execution

    func execute(in context: ReadScope, info: ModelInfo) throws(StoreError) -> [M] {
        let plan = try plan(info: info, context: context)
        var dictionary = try context.dictionary(for: info)
        let mayMatch = bytesCheck(plan, context: context, dictionary: dictionary)
        if plan.isOrdered, limitCount != nil || !context.decodesInParallel(M.self) {
            // In order, and on this thread: each record is decoded as the walk reaches it, and a limit stops the
            // walk as soon as the page is full.
            let limit = limitCount ?? .max
            guard limit > 0 else { return [] }
            let values = DecodedValues<M>()
            let checks = !plan.indexDecides && predicate != nil
            if !checks, distinctKey == nil, skipCount == 0 {
                if mayMatch == nil, let count = try candidateCount(plan, in: context, info: info) {
                    // Every candidate is a result, and how many there are is known: each is decoded straight
                    // into the result's storage.
                    return try decodeEach(plan, in: context, info: info, upTo: Swift.min(count, limit))
                }
                try forEachCandidate(plan, in: context, info: info, prefilter: mayMatch) {
                    (key, bytes) throws(StoreError) -> Bool in
                    values.append(try context.decode(M.self, bytes, key: key, info: info, dictionary: &dictionary))
                    return values.count < limit
                }
                return values.moveToArray()
            }
            var skipped = 0
            var seen = Set<[UInt8]>()
            try forEachCandidate(plan, in: context, info: info, prefilter: mayMatch) {
                (key, bytes) throws(StoreError) -> Bool in
                values.append(try context.decode(M.self, bytes, key: key, info: info, dictionary: &dictionary))
                let value = values.last
                var kept = !checks || predicate?.evaluate(value.pointee) ?? true
                if kept, let distinctKey { kept = seen.insert(try distinctKey.key(value.pointee)).inserted }
                if kept, skipped < skipCount {
                    skipped += 1
                    kept = false
                }
                if !kept { values.removeLast() }
                return values.count < limit
            }
            return values.moveToArray()
        }
        var entries: [Entry] = []
        try forEachCandidate(plan, in: context, info: info, prefilter: mayMatch) {
            (key, bytes) throws(StoreError) -> Bool in
            entries.append((key, bytes))
            return true
        }
        if !plan.isOrdered, !plan.access.readsPrimaryKeyOrder {
            // The in-memory sort breaks ties by primary key, so the order does not depend on the plan.
            entries.sort { Self.precedes($0.key, $1.key) }
        }
        let keep =
            plan.indexDecides
            ? nil : predicate.map { predicate in { @Sendable (value: M) in predicate.evaluate(value) } }
        var values = try context.decodeAll(M.self, entries, info: info, keeping: keep)
        if let ranking = plan.ranking {
            values = try rankedInMemory(values, ranking: ranking, in: context, info: info)
        } else if !plan.isOrdered {
            values = try sortedInMemory(values)
        }
        if let distinctKey {
            var seen = Set<[UInt8]>()
            var kept: [M] = []
            for value in values where seen.insert(try distinctKey.key(value)).inserted { kept.append(value) }
            values = kept
        }
        // `offset(1).limit(.max)` is a fair request: the end saturates instead of overflowing.
        let end =
            limitCount.map { Swift.min(values.count - Swift.min(skipCount, values.count), $0) + skipCount }
            ?? values.count
        return skipCount >= end ? [] : Array(values[skipCount..<end])
    }

    /// How many records the plan reads, when the database can tell without reading them.
    private func candidateCount(_ plan: QueryPlan, in context: ReadScope, info: ModelInfo) throws(StoreError)
        -> Int?
    {
        guard exclusions.isEmpty else { return nil }
        switch plan.access {
        case .records:
            return try context.recordCount(info)
        case .primaryKeyRanges(let ranges):
            return try Self.countEntries(
                in: info.records, ranges: ranges, txn: try context.lmdb, context: context, cap: .max)
        case .indexRanges(let position, let ranges):
            return try Self.countEntries(
                in: info.indexes[position], ranges: ranges, txn: try context.lmdb, context: context, cap: .max)
        case .indexOrder, .backlinks, .search:
            return nil
        }
    }

    /// The first `count` candidates of the plan, each decoded into the array's storage as the walk reaches it.
    private func decodeEach(_ plan: QueryPlan, in context: ReadScope, info: ModelInfo, upTo count: Int)
        throws(StoreError) -> [M]
    {
        var dictionary = try context.dictionary(for: info)
        var failure: StoreError?
        let values = [M](initializingUpTo: count) { base, initialized in
            do throws(StoreError) {
                try forEachCandidate(plan, in: context, info: info, prefilter: nil) {
                    (key, bytes) throws(StoreError) -> Bool in
                    (base + initialized).initialize(
                        to: try context.decode(M.self, bytes, key: key, info: info, dictionary: &dictionary))
                    initialized += 1
                    return initialized < count
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return values
    }

    /// A check of the predicate on a record's bytes that leaves out the records it shows cannot match before they
    /// are decoded, where the model's fields are known (`StoredFields`); what it cannot tell, the decoded test still
    /// checks.
    private func bytesCheck(_ plan: QueryPlan, context: ReadScope, dictionary: KeyDictionary) -> BytesFilter? {
        guard !plan.indexDecides, let predicate, predicate.node.checksBytes, let keys = StoredFields.keys(of: M.self)
        else { return nil }
        return BytesFilter(predicate.node, keys: keys, decoder: context.recordDecoder, dictionary: dictionary)
    }

    /// Sorts by the order-preserving keys of the sort properties, component by component, then by primary key in
    /// the direction of the last sort key (as reading a one-property index in either direction does). `values` come in
    /// primary-key order.
    private func sortedInMemory(_ values: [M]) throws(StoreError) -> [M] {
        let lastAscending = ordering.last?.ascending ?? true
        let keys = try values.map { (value) throws(StoreError) in
            try ordering.map { (sort) throws(StoreError) in try sort.key(value) }
        }
        let order = values.indices.sorted { lhs, rhs in
            for (position, sort) in ordering.enumerated() {
                let (a, b) = (keys[lhs][position], keys[rhs][position])
                if a == b { continue }
                return a.lexicographicallyPrecedes(b) == sort.ascending
            }
            return lastAscending ? lhs < rhs : lhs > rhs
        }
        return order.map { values[$0] }
    }

    /// Whether key bytes `a` sort before `b`, as LMDB orders keys.
    private static func precedes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        let common = Swift.min(a.count, b.count)
        if common > 0, let x = a.baseAddress, let y = b.baseAddress {
            let compared = memcmp(x, y, common)
            if compared != 0 { return compared < 0 }
        }
        return a.count < b.count
    }

    /// Hands `body` each candidate record (primary key and bytes) in the plan's order until it returns `false`,
    /// leaving out those `prefilter` shows cannot match. Both buffers point into the map, never into memory of this
    /// call: a caller may keep them (the in-memory sort keeps every candidate) until the read transaction ends.
    private func forEachCandidate(
        _ plan: QueryPlan, in context: ReadScope, info: ModelInfo, prefilter: BytesFilter?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(StoreError) -> Bool
    ) throws(StoreError) {
        let txn = try context.lmdb
        var body = body
        let excluded = try exclusions.map { (exclusion) throws(StoreError) in try exclusion.link(context.store) }
        if !excluded.isEmpty {
            let inner = body
            body = { (key, bytes) throws(StoreError) -> Bool in
                for link in excluded {
                    let linked: Bool
                    do throws(LMDBError) { linked = try txn.get(link.database, key: key) != nil } catch {
                        throw context.lmdbError(error, "read")
                    }
                    if linked { return true }
                }
                return try inner(key, bytes)
            }
        }
        var linking = SortedKeys()
        if case .backlinks(let position) = plan.access, let linkFilter {
            linking = try linkingKeys(linkFilter, link: info.links[position], in: context)
        }
        try context.store.core.run("read") {
            switch plan.access {
            case .records:
                // The filter first, in the walk itself: most records of a filtered scan stop there.
                if let prefilter {
                    try txn.walk(info.records, descending: plan.isDescending) { entry in
                        prefilter.mayMatch(entry.value) ? try body(entry.key, entry.value) : true
                    }
                } else {
                    try txn.walk(info.records, descending: plan.isDescending) { entry in
                        try body(entry.key, entry.value)
                    }
                }
                return
            case .primaryKeyRanges(let ranges):
                for range in plan.isDescending ? ranges.reversed() : ranges {
                    let goOn = try txn.walk(info.records, range: range, descending: plan.isDescending) { entry in
                        prefilter?.mayMatch(entry.value) == false ? true : try body(entry.key, entry.value)
                    }
                    if !goOn { return }
                }
                return
            default:
                break
            }
            // Records named by an index or backlinks are looked up with one cursor: ids come in order, and LMDB
            // looks for the next one on the cursor's page before it descends from the root again.
            try txn.withCursor(info.records) { records in
                switch plan.access {
                case .records, .primaryKeyRanges:
                    break
                case .indexRanges(let position, let ranges):
                    for range in plan.isDescending ? ranges.reversed() : ranges {
                        let goOn = try txn.walk(info.indexes[position], range: range, descending: plan.isDescending) {
                            entry in
                            let bytes = try Self.record(entry.value, info: info, in: records, context: context).value
                            return prefilter?.mayMatch(bytes) == false ? true : try body(entry.value, bytes)
                        }
                        if !goOn { return }
                    }
                case .indexOrder(let position):
                    try txn.walk(info.indexes[position], descending: plan.isDescending) { entry in
                        let bytes = try Self.record(entry.value, info: info, in: records, context: context).value
                        return prefilter?.mayMatch(bytes) == false ? true : try body(entry.value, bytes)
                    }
                case .search(let position):
                    let search = searchParts(plan, position: position)
                    let storage = FullTextStorage(databases: info.fullText[position], core: context.store.core)
                    // Only the best are ranked in full when the search alone decides the page.
                    let limit =
                        plan.indexDecides && plan.isOrdered && distinctKey == nil && exclusions.isEmpty
                        ? limitCount.map { $0.addingReportingOverflow(skipCount).overflow ? .max : $0 + skipCount }
                        : nil
                    let ranked = try storage.search(
                        search.query, columns: search.columns, weights: search.weights, limit: limit, in: txn)
                    for document in ranked {
                        let bytes = try Self.record(document.primaryKey, info: info, in: records, context: context)
                            .value
                        if prefilter?.mayMatch(bytes) == false { continue }
                        guard try body(document.primaryKey, bytes) else { return }
                    }
                case .backlinks:
                    // The key handed on is the record's own, in the map: `linking` is freed when this call returns,
                    // and the candidates may be kept longer.
                    try linking.forEachSorted { (key) throws(StoreError) in
                        let record = try Self.record(key, info: info, in: records, context: context)
                        return prefilter?.mayMatch(record.value) == false ? true : try body(record.key, record.value)
                    }
                }
            }
        }
    }

    /// The record whose primary key is `primaryKey`: its key and bytes as the map holds them.
    private static func record(
        _ primaryKey: UnsafeRawBufferPointer, info: ModelInfo, in records: Cursor, context: ReadScope
    ) throws(StoreError) -> Entry {
        let found: Entry?
        do { found = try records.seek(to: primaryKey) } catch { throw context.lmdbError(error, "read") }
        guard let found else {
            throw .corruptedFile(
                path: context.store.core.path,
                reason: "an index of \(info.name) names id \(KeyEncoding.describe(primaryKey)), which has no record")
        }
        return found
    }

    /// The count of an index range (or of ids in the records database) without reading records, when one indexed
    /// condition is the whole predicate.
    func countWithoutReading(in context: ReadScope, info: ModelInfo) throws(StoreError) -> Int? {
        guard distinctKey == nil, exclusions.isEmpty else { return nil }
        if let linkFilter {
            guard predicate == nil else { return nil }
            let link = info.links[try linkFilter.position.get()]
            let targets = try linkFilter.targets(context)
            // One target's sources are counted by LMDB, without visiting them.
            if targets.count == 1, let target = targets.sorted().first {
                return try context.linkCount(to: target, via: link)
            }
            return try linkingKeys(to: targets, link: link, in: context).distinctCount()
        }
        guard let predicate else { return try context.recordCount(info) }
        let plan = try plan(info: info, context: context)
        guard predicate.node.conjuncts.count == 1 else { return nil }
        switch plan.access {
        case .indexRanges(let position, let ranges):
            return try Self.countEntries(
                in: info.indexes[position], ranges: ranges, txn: try context.lmdb, context: context, cap: .max)
        case .primaryKeyRanges(let ranges):
            return try Self.countEntries(
                in: info.records, ranges: ranges, txn: try context.lmdb, context: context, cap: .max)
        default:
            return nil
        }
    }

    /// How many entries of an index lie in `ranges`, counting up to about `cap`: one step per distinct key.
    static func countEntries(
        in database: Database, ranges: [KeyRange], txn: ReadTransaction, context: ReadScope, cap: Int
    ) throws(StoreError) -> Int {
        try context.store.core.run("count") { try txn.countEntries(database, in: ranges, cap: cap) }
    }
}

/// Whether each key path a plan has met names its model's `id`. (`\M.id` names the protocol's requirement, a key path
/// that never equals the model's own `\.id`, so the property's name tells; naming a key path costs about two
/// microseconds, a lookup here a few dozen nanoseconds.)
private let idKeyPaths = Lock<[KnownKeyPath: Bool]>([:])

/// A key path as a dictionary key shared across threads: key paths are immutable, only not declared `Sendable`.
private struct KnownKeyPath: Hashable, @unchecked Sendable {
    let path: AnyKeyPath
}

private func namesID<M: Model>(_ path: PartialKeyPath<M>) -> Bool {
    let key = KnownKeyPath(path: path)
    if let known = idKeyPaths.withLock({ $0[key] }) { return known }
    let isID = Index<M>.propertyName(path) == "id"
    idKeyPaths.withLock { $0[key] = isID }
    return isID
}
