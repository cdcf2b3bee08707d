import LMDB

/// A search run on a full-text index: the documents it matches, ranked.
struct RankedDocument {
    /// The record's primary key, in the map: valid until the read transaction ends.
    let primaryKey: UnsafeRawBufferPointer
    let score: Double
}

extension FullTextStorage {
    /// The documents `query` matches in `columns` (a bit per column), best first (ties: in the order they were
    /// indexed); the first `limit` of them when it is given.
    func search(
        _ query: SearchQuery, columns: UInt32, weights: [Double], limit: Int? = nil, in txn: ReadTransaction
    ) throws(StoreError) -> [RankedDocument] {
        let phrases = query.phrases
        guard !phrases.isEmpty, limit != 0 else { return [] }
        var lists: [PostingList] = []
        for phrase in phrases { lists.append(try postings(of: phrase, columns: columns, txn)) }
        let matched = query.documents(lists)
        guard !matched.isEmpty else { return [] }
        let statistics = try statistics(txn)
        let ranking = BM25(
            documentCount: statistics.count, totalLength: statistics.totalLength, frequencies: lists.map(\.count))
        var cursors = Array(repeating: 0, count: lists.count)
        var found: [(document: Int, score: Double)] = []
        found.reserveCapacity(matched.count)
        var keys: [UnsafeRawBufferPointer] = []
        keys.reserveCapacity(matched.count)
        var frequencies = Array(repeating: 0.0, count: lists.count)
        try core.run("search") {
            try txn.withCursor(documents) { cursor in
                for (number, document) in matched.enumerated() {
                    let key = Self.documentKey(document)
                    guard let entry = try key.withUnsafeBytes({ try cursor.seek(to: $0) }) else {
                        throw damaged("postings of document \(document), which it does not list")
                    }
                    var reader = Varint.Reader(entry.value)
                    guard let length = reader.next() else { throw damaged("a damaged document entry") }
                    keys.append(UnsafeRawBufferPointer(rebasing: entry.value[reader.offset...]))
                    for (list, postings) in lists.enumerated() {
                        while cursors[list] < postings.count, postings.documents[cursors[list]] < document {
                            cursors[list] += 1
                        }
                        frequencies[list] =
                            cursors[list] < postings.count && postings.documents[cursors[list]] == document
                            ? BM25.frequency(of: postings.occurrences(at: cursors[list]), columnWeights: weights) : 0
                    }
                    found.append((number, ranking.score(length: Int(clamping: length), frequencies: frequencies)))
                }
            }
        }
        let best = Self.best(found, keys: keys, limit: limit)
        return best.map { RankedDocument(primaryKey: keys[$0.document], score: $0.score) }
    }

    /// The entries with the highest scores first, ties in their records' primary-key order (as a ranking in memory
    /// breaks them, whichever plan ran); only the first `limit` when given.
    private static func best(
        _ entries: [(document: Int, score: Double)], keys: [UnsafeRawBufferPointer], limit: Int?
    ) -> [(document: Int, score: Double)] {
        func precedes(_ a: (document: Int, score: Double), _ b: (document: Int, score: Double)) -> Bool {
            a.score != b.score ? a.score > b.score : SortedKeys.compare(keys[a.document], keys[b.document]) < 0
        }
        guard let limit, limit < entries.count / 4 else { return entries.sorted(by: precedes) }
        // A bounded selection: the worst kept entry first, replaced by any better one.
        var kept: [(document: Int, score: Double)] = []
        kept.reserveCapacity(limit + 1)
        for entry in entries {
            if kept.count < limit {
                kept.append(entry)
                if kept.count == limit { kept.sort(by: precedes) }
            } else if let worst = kept.last, precedes(entry, worst) {
                let place = kept.partitioningIndex { !precedes($0, entry) }
                kept.insert(entry, at: place)
                kept.removeLast()
            }
        }
        return kept.count < limit ? kept.sorted(by: precedes) : kept
    }

    /// The list of a phrase: its one term's postings, or the documents where its terms follow each other.
    func postings(of phrase: SearchQuery.Phrase, columns: UInt32, _ txn: ReadTransaction) throws(StoreError)
        -> PostingList
    {
        var lists: [PostingList] = []
        for term in phrase.terms { lists.append(try postings(of: term, columns: columns, txn)) }
        if lists.count == 1 { return lists[0] }
        return PostingList.phrase(lists, offsets: phrase.terms.map(\.offset))
    }

    /// The postings of a term, or of every term that starts with it when it is a prefix.
    func postings(of term: SearchQuery.Term, columns: UInt32, _ txn: ReadTransaction) throws(StoreError)
        -> PostingList
    {
        let range =
            term.isPrefix
            ? KeyRange(lower: term.bytes, upper: term.bytes + [0xFF])
            : KeyRange(lower: PostingBlock.blockKey(term.bytes, first: 0), upper: term.bytes + [1])
        var lists: [PostingList] = []
        var current = PostingList()
        var currentTerm: [UInt8]?
        var damagedBlock = false
        try core.run("search") {
            try txn.walk(postings, range: range) { entry in
                guard let (stored, first) = PostingBlock.parse(key: entry.key) else { return true }
                if currentTerm.map({ !stored.elementsEqual($0) }) ?? true {
                    if currentTerm != nil { lists.append(current) }
                    current = PostingList()
                    currentTerm = Array(stored)
                }
                guard current.appendBlock(entry.value, first: first, columns: columns) else {
                    damagedBlock = true
                    return false
                }
                return true
            }
        }
        if damagedBlock { throw damaged("a damaged block of postings") }
        if currentTerm != nil { lists.append(current) }
        return PostingList.union(lists)
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, for an array where those elements come last.
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
