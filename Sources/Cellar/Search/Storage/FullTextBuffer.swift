import LMDB

/// The postings of the documents a transaction adds, kept in memory by term and written when the transaction
/// commits (or sooner: before anything else reads or edits the index, and when they pass `budget` bytes), as
/// SQLite's FTS5 keeps its pending terms: a thousand new documents then rewrite each term's last block once, not a
/// thousand times.
///
/// New documents are numbered after every stored one, so their postings always go at the end of each term's list.
final class FullTextBuffer {
    let storage: FullTextStorage
    /// The bytes kept before they are written.
    static let budget = 64 << 20

    private var statistics: FullTextStorage.Statistics?
    private var pending = PendingPostings()

    init(storage: FullTextStorage) { self.storage = storage }

    var isEmpty: Bool { pending.isEmpty && statistics == nil }

    /// Indexes a new record: its documents entries now, its postings when the buffer is written.
    func add(primaryKey: [UInt8], texts: [String?], in txn: LMDB.WriteTransaction) throws(StoreError) {
        let length = pending.scan(texts)
        var statistics: FullTextStorage.Statistics
        if let known = self.statistics { statistics = known } else { statistics = try storage.statistics(txn) }
        let number = statistics.next
        statistics.next += 1
        statistics.count += 1
        statistics.totalLength += UInt64(length)
        self.statistics = statistics
        try storage.putDocument(number, primaryKey: primaryKey, length: length, in: txn)
        pending.addScanned(document: number)
        if pending.bytes >= Self.budget { try write(in: txn) }
    }

    /// Writes what is kept: the statistics, each term's count of documents, and its postings at the end of its
    /// last block or in new ones.
    func write(in txn: LMDB.WriteTransaction) throws(StoreError) {
        let written = pending
        defer {
            pending = PendingPostings()
            statistics = nil
        }
        if let statistics { try storage.putStatistics(statistics, in: txn) }
        for (term, pending) in written.inTermOrder() {
            try storage.changeFrequency(of: term, by: pending.documents.count, txn)
            var next = 0
            if let last = try storage.lastBlock(of: term, txn),
                let head = last.block.withUnsafeBytes({ PostingBlock.head($0, first: last.first) }),
                let first = pending.documents.first, first > head.last
            {
                // Onto the last block, as far as it stays within the target.
                var added: [UInt8] = []
                var previous = head.last
                var count = head.count
                while next < pending.documents.count {
                    let document = pending.documents[next]
                    let body = pending.bodies[pending.starts[next]..<pending.starts[next + 1]]
                    let delta: UInt64 = document &- previous
                    let size = Varint.encode(delta).count + body.count
                    guard last.block.count + added.count + size <= PostingBlock.targetBytes else { break }
                    Varint.append(delta, to: &added)
                    added.append(contentsOf: body)
                    previous = document
                    count += 1
                    next += 1
                }
                if next > 0 {
                    var rewritten = Varint.encode(count)
                    Varint.append(previous &- last.first, to: &rewritten)
                    rewritten.append(contentsOf: last.block[head.bodyStart...])
                    rewritten.append(contentsOf: added)
                    try storage.putBlock(key: last.key, rewritten, in: txn)
                }
            }
            // The rest in new blocks of about the target size each.
            while next < pending.documents.count {
                let first = pending.documents[next]
                var body: [UInt8] = []
                var previous = first
                var count: UInt64 = 0
                while next < pending.documents.count {
                    let document = pending.documents[next]
                    let posting = pending.bodies[pending.starts[next]..<pending.starts[next + 1]]
                    if count > 0, body.count + posting.count + 2 > PostingBlock.targetBytes { break }
                    let delta: UInt64 = document &- previous
                    Varint.append(delta, to: &body)
                    body.append(contentsOf: posting)
                    previous = document
                    count += 1
                    next += 1
                }
                var block = Varint.encode(count)
                Varint.append(previous &- first, to: &block)
                block.append(contentsOf: body)
                try storage.putBlock(key: PostingBlock.blockKey(term, first: first), block, in: txn)
            }
        }
    }
}

/// The postings a buffer keeps, by term: a struct the buffer changes in one access a document, not one a word.
private struct PendingPostings {
    struct Postings {
        var documents: [UInt64] = []
        /// Each posting without its document: its column groups (`PostingBlock.appendOccurrences`).
        var bodies: [UInt8] = []
        var starts: [Int] = [0]
    }

    /// The terms met, numbered, and each one's postings by its number.
    private var table = TermTable()
    private var terms: [Postings] = []
    /// The bytes kept, about.
    private(set) var bytes = 0
    /// The document being read: each occurrence's term number, in the order read, then the occurrences grouped by
    /// term (`grouped`, the terms in `distinct` in the order first met, each one's group at `groupStarts`), each
    /// group ascending as the text was read. `slot` holds, by term number, the term's place in `distinct` while the
    /// document is read, -1 otherwise.
    private var read: [(term: Int, occurrence: UInt64)] = []
    private var distinct: [Int] = []
    private var groupStarts: [Int] = []
    private var grouped: [UInt64] = []
    private var cursors: [Int] = []
    private var slot: [Int32] = []

    var isEmpty: Bool { terms.isEmpty }

    /// Reads the terms of `texts` (one per column) and groups their occurrences by term; returns their count.
    mutating func scan(_ texts: [String?]) -> Int {
        read.removeAll(keepingCapacity: true)
        for (column, text) in texts.enumerated() {
            guard let text else { continue }
            TextTokenizer.forEachToken(in: text) { token in
                read.append(
                    (table.number(of: token.term), Posting.occurrence(column: column, position: token.position)))
            }
        }
        // A counting sort by term, which keeps each term's occurrences in the order read: ascending.
        if slot.count < table.count { slot.append(contentsOf: repeatElement(-1, count: table.count - slot.count)) }
        distinct.removeAll(keepingCapacity: true)
        groupStarts.removeAll(keepingCapacity: true)
        for (term, _) in read {
            if slot[term] < 0 {
                slot[term] = Int32(distinct.count)
                distinct.append(term)
                groupStarts.append(0)
            }
            groupStarts[Int(slot[term])] += 1
        }
        var start = 0
        for index in groupStarts.indices {
            let count = groupStarts[index]
            groupStarts[index] = start
            start += count
        }
        groupStarts.append(start)
        grouped.removeAll(keepingCapacity: true)
        grouped.append(contentsOf: repeatElement(0, count: read.count))
        cursors.removeAll(keepingCapacity: true)
        cursors.append(contentsOf: groupStarts)
        for (term, occurrence) in read {
            let place = Int(slot[term])
            grouped[cursors[place]] = occurrence
            cursors[place] += 1
        }
        for term in distinct { slot[term] = -1 }
        return read.count
    }

    /// Adds the postings of the document `scan(_:)` read last, numbered `document`.
    mutating func addScanned(document: UInt64) {
        if terms.count < table.count {
            terms.append(contentsOf: repeatElement(Postings(), count: table.count - terms.count))
        }
        for (place, term) in distinct.enumerated() {
            let before = terms[term].bodies.count
            PostingBlock.appendOccurrences(
                grouped[groupStarts[place]..<groupStarts[place + 1]], to: &terms[term].bodies)
            terms[term].documents.append(document)
            terms[term].starts.append(terms[term].bodies.count)
            bytes += terms[term].bodies.count - before + 16
        }
    }

    /// Each term with postings and its postings, in the order of the terms' bytes (the order of their keys).
    func inTermOrder() -> [([UInt8], Postings)] {
        terms.indices.filter { !terms[$0].documents.isEmpty }
            .sorted { table.term($0).lexicographicallyPrecedes(table.term($1)) }
            .map { (Array(table.term($0)), terms[$0]) }
    }
}
