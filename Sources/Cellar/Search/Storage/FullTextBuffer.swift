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

    private struct Pending {
        var documents: [UInt64] = []
        /// Each posting without its document: its column groups (`PostingBlock.appendOccurrences`).
        var bodies: [UInt8] = []
        var starts: [Int] = [0]
    }

    private var statistics: FullTextStorage.Statistics?
    /// The terms met, numbered, and each one's postings by its number.
    private var table = TermTable()
    private var terms: [Pending] = []
    private var bytes = 0
    /// A document's terms' numbers and occurrences, in one buffer from document to document.
    private var pairs: [(term: Int, occurrence: UInt64)] = []
    private var occurrences: [UInt64] = []

    init(storage: FullTextStorage) { self.storage = storage }

    var isEmpty: Bool { terms.isEmpty && statistics == nil }

    /// The terms of `texts` (one per column), numbered, with each occurrence, sorted by term then occurrence; and
    /// their count.
    private func scan(_ texts: [String?]) -> Int {
        pairs.removeAll(keepingCapacity: true)
        for (column, text) in texts.enumerated() {
            guard let text else { continue }
            TextTokenizer.forEachToken(in: text) { token in
                pairs.append(
                    (table.number(of: token.term), Posting.occurrence(column: column, position: token.position)))
            }
        }
        pairs.sort { $0.term != $1.term ? $0.term < $1.term : $0.occurrence < $1.occurrence }
        return pairs.count
    }

    /// Indexes a new record: its documents entries now, its postings when the buffer is written.
    func add(primaryKey: [UInt8], texts: [String?], in txn: LMDB.WriteTransaction) throws(StoreError) {
        let length = scan(texts)
        var statistics: FullTextStorage.Statistics
        if let known = self.statistics { statistics = known } else { statistics = try storage.statistics(txn) }
        let number = statistics.next
        statistics.next += 1
        statistics.count += 1
        statistics.totalLength += UInt64(length)
        self.statistics = statistics
        try storage.putDocument(number, primaryKey: primaryKey, length: length, in: txn)
        if terms.count < table.count {
            terms.append(contentsOf: repeatElement(Pending(), count: table.count - terms.count))
        }
        var index = 0
        while index < pairs.count {
            let term = pairs[index].term
            occurrences.removeAll(keepingCapacity: true)
            while index < pairs.count, pairs[index].term == term {
                occurrences.append(pairs[index].occurrence)
                index += 1
            }
            let before = terms[term].bodies.count
            PostingBlock.appendOccurrences(occurrences, to: &terms[term].bodies)
            terms[term].documents.append(number)
            terms[term].starts.append(terms[term].bodies.count)
            bytes += terms[term].bodies.count - before + 16
        }
        if bytes >= Self.budget { try write(in: txn) }
    }

    /// Writes what is kept: the statistics, each term's count of documents, and its postings at the end of its
    /// last block or in new ones.
    func write(in txn: LMDB.WriteTransaction) throws(StoreError) {
        defer {
            terms.removeAll()
            table = TermTable()
            statistics = nil
            bytes = 0
        }
        if let statistics { try storage.putStatistics(statistics, in: txn) }
        let order = terms.indices.sorted { table.term($0).lexicographicallyPrecedes(table.term($1)) }
        for number in order {
            let pending = terms[number]
            guard !pending.documents.isEmpty else { continue }
            let term = Array(table.term(number))
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
