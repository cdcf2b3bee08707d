import LMDB

/// Compares a full-text index with what its records' texts say it should hold, in words: the documents (one per
/// record, its length, both directions of its number), the statistics, every block (readable, in order, under the
/// right key) and, term by term, the postings and the count of documents that hold the term.
///
/// The postings are compared through one sum of hashes per term, each posting hashed with its record's primary key
/// and its occurrences: memory for the vocabulary, not for every posting of a large store.
///
/// A check made without the texts (`readsTexts: false`, for a tool that cannot read the indexed properties without the
/// model's type) checks the index's structure alone: documents both ways and against the records, statistics, blocks,
/// and counts against the postings.
struct FullTextCheck {
    let name: String
    let readsTexts: Bool
    private var expected: [[UInt8]: (hash: Int, documents: Int)] = [:]
    private var lengths: [[UInt8]: UInt64] = [:]
    /// Records that could not be read, whose postings are not compared.
    private var unreadable = Set<[UInt8]>()

    init(name: String, readsTexts: Bool = true) {
        self.name = name
        self.readsTexts = readsTexts
    }

    private static func hash(_ primaryKey: some Sequence<UInt8>, _ occurrences: some Sequence<UInt64>) -> Int {
        var hasher = Hasher()
        for byte in primaryKey { hasher.combine(byte) }
        hasher.combine(0xFFFF as UInt16)
        for occurrence in occurrences { hasher.combine(occurrence) }
        return hasher.finalize()
    }

    /// Notes a record that could not be read (reported as such): what the index holds for it is left uncompared.
    mutating func skip(primaryKey: [UInt8]) {
        unreadable.insert(primaryKey)
    }

    /// Adds what a record with `texts` should have in the index.
    mutating func add(primaryKey: [UInt8], texts: [String?]) {
        let terms = DocumentTerms(texts: texts)
        lengths[primaryKey] = UInt64(terms.length)
        for (term, occurrences) in terms.occurrences {
            let hash = Self.hash(primaryKey, occurrences)
            expected[term, default: (0, 0)].hash &+= hash
            expected[term, default: (0, 0)].documents += 1
        }
    }

    /// Checks the stored index against what was added; `records` are the model's primary keys.
    func finish(
        _ storage: FullTextStorage, records: Set<[UInt8]>, in txn: ReadTransaction,
        into problems: inout IntegrityProblems
    )
        throws(StoreError)
    {
        var problemCount = 0
        func report(_ line: String) {
            problemCount += 1
            problems.add("full-text index \(name): \(line)")
        }
        // The documents, both ways.
        var forward: [UInt64: [UInt8]] = [:]
        var backward: [[UInt8]: UInt64] = [:]
        var statistics: FullTextStorage.Statistics?
        var totalLength: UInt64 = 0
        try storage.core.run("verify") {
            try txn.walk(storage.documents) { entry in
                if entry.key.elementsEqual(FullTextStorage.statisticsKey) {
                    statistics = FullTextStorage.Statistics(entry.value)
                    if statistics == nil { report("its statistics are damaged") }
                } else if entry.key.first == 0x00 {
                    // The index's definition, compared at open.
                } else if entry.key.first == 0x01 {
                    var reader = Varint.Reader(entry.value)
                    guard let document = PostingBlock.readBigEndian(entry.key.dropFirst()), let length = reader.next()
                    else {
                        report("a document entry is damaged")
                        return true
                    }
                    let primaryKey = Array(entry.value[reader.offset...])
                    forward[document] = primaryKey
                    totalLength &+= length
                    if let expected = lengths[primaryKey], expected != length {
                        report(
                            "the document of \(KeyEncoding.describe(primaryKey)) counts \(length) terms, not \(expected)"
                        )
                    }
                } else if let document = PostingBlock.readBigEndian(entry.value) {
                    backward[Array(entry.key)] = document
                } else {
                    report("the document number of \(KeyEncoding.describe(entry.key)) is damaged")
                }
                return true
            }
        }
        for (document, primaryKey) in forward where backward[primaryKey] != document {
            report("document \(document) names \(KeyEncoding.describe(primaryKey)), which names another number")
        }
        for (primaryKey, document) in backward where forward[document] != primaryKey {
            report("\(KeyEncoding.describe(primaryKey)) names document \(document), which names another record")
        }
        for primaryKey in backward.keys where !records.contains(primaryKey) {
            report("it indexes \(KeyEncoding.describe(primaryKey)), which has no record")
        }
        let indexed = readsTexts ? Set(lengths.keys) : records
        for primaryKey in indexed where backward[primaryKey] == nil {
            report("\(KeyEncoding.describe(primaryKey)) has no document")
        }
        if let statistics {
            if statistics.count != UInt64(forward.count) {
                report("its statistics count \(statistics.count) documents, and it holds \(forward.count)")
            }
            if statistics.totalLength != totalLength {
                report("its statistics count \(statistics.totalLength) terms, and its documents \(totalLength)")
            }
            if let last = forward.keys.max(), statistics.next <= last {
                report("its next document number, \(statistics.next), is already used")
            }
        } else if !forward.isEmpty {
            report("it has no statistics")
        }
        // The postings, term by term: `stored` of the records that were read, `documents` of all.
        var stored: [[UInt8]: Int] = [:]
        var documents: [[UInt8]: Int] = [:]
        var frequencies: [[UInt8]: UInt64] = [:]
        var previous: (term: [UInt8], last: UInt64)?
        try storage.core.run("verify") {
            try txn.walk(storage.postings) { entry in
                guard let (termBytes, first) = PostingBlock.parse(key: entry.key) else {
                    var reader = Varint.Reader(entry.value)
                    guard entry.key.last == 0, let count = reader.next(), reader.isAtEnd else {
                        report("an entry is neither a block nor a count of documents")
                        return true
                    }
                    frequencies[Array(entry.key.dropLast())] = count
                    return true
                }
                let term = Array(termBytes)
                guard let postings = PostingBlock.decode(entry.value, first: first),
                    let head = PostingBlock.head(entry.value, first: first), postings.first?.document == first,
                    postings.last?.document == head.last,
                    zip(postings, postings.dropFirst()).allSatisfy({ $0.document < $1.document })
                else {
                    report("a block of \(describe(term)) is damaged")
                    return true
                }
                if let previous, previous.term == term, previous.last >= first {
                    report("the blocks of \(describe(term)) overlap")
                }
                previous = (term, head.last)
                for posting in postings {
                    guard let primaryKey = forward[posting.document] else {
                        report("\(describe(term)) names document \(posting.document), which it does not hold")
                        continue
                    }
                    documents[term, default: 0] += 1
                    guard !unreadable.contains(primaryKey) else { continue }
                    stored[term, default: 0] &+= Self.hash(primaryKey, posting.occurrences)
                }
                return true
            }
        }
        if readsTexts {
            for (term, found) in stored where expected[term]?.hash != found {
                report("the postings of \(describe(term)) differ from the records' texts")
            }
            for term in expected.keys where stored[term] == nil {
                report("\(describe(term)) is missing")
            }
        }
        for (term, found) in documents where frequencies[term] != UInt64(found) {
            report("\(describe(term)) is counted in \(frequencies[term] ?? 0) documents, and it is in \(found)")
        }
        for term in frequencies.keys where documents[term] == nil {
            report("\(describe(term)) is counted in documents, and has no postings")
        }
    }

    private func describe(_ term: [UInt8]) -> String { String(decoding: term, as: UTF8.self).debugDescription }
}
