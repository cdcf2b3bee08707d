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
        /// Each posting without its document: the column groups and the `0` that ends them.
        var bodies: [UInt8] = []
        var starts: [Int] = [0]
    }

    private var statistics: FullTextStorage.Statistics?
    private var terms: [[UInt8]: Pending] = [:]
    private var bytes = 0

    init(storage: FullTextStorage) { self.storage = storage }

    var isEmpty: Bool { terms.isEmpty && statistics == nil }

    /// Indexes a new record: its documents entries now, its postings when the buffer is written.
    func add(primaryKey: [UInt8], texts: [String?], in txn: LMDB.WriteTransaction) throws(StoreError) {
        let document = DocumentTerms(texts: texts)
        var statistics: FullTextStorage.Statistics
        if let known = self.statistics { statistics = known } else { statistics = try storage.statistics(txn) }
        let number = statistics.next
        statistics.next += 1
        statistics.count += 1
        statistics.totalLength += UInt64(document.length)
        self.statistics = statistics
        try storage.putDocument(number, primaryKey: primaryKey, length: document.length, in: txn)
        for (term, occurrences) in document.occurrences {
            var pending = terms.removeValue(forKey: term) ?? Pending()
            let before = pending.bodies.count
            PostingBlock.appendOccurrences(occurrences, to: &pending.bodies)
            pending.documents.append(number)
            pending.starts.append(pending.bodies.count)
            bytes += pending.bodies.count - before + 16
            terms[term] = pending
        }
        if bytes >= Self.budget { try write(in: txn) }
    }

    /// Writes what is kept: the statistics, each term's count of documents, and its postings at the end of its
    /// last block or in new ones.
    func write(in txn: LMDB.WriteTransaction) throws(StoreError) {
        defer {
            terms.removeAll()
            statistics = nil
            bytes = 0
        }
        if let statistics { try storage.putStatistics(statistics, in: txn) }
        for term in terms.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            guard let pending = terms[term] else { continue }
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
                    let size = Varint.encode(document - previous).count + body.count
                    guard last.block.count + added.count + size <= PostingBlock.targetBytes else { break }
                    Varint.append(document - previous, to: &added)
                    added.append(contentsOf: body)
                    previous = document
                    count += 1
                    next += 1
                }
                if next > 0 {
                    var rewritten = Varint.encode(count) + Varint.encode(previous - last.first)
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
                    Varint.append(document - previous, to: &body)
                    body.append(contentsOf: posting)
                    previous = document
                    count += 1
                    next += 1
                }
                let block = Varint.encode(count) + Varint.encode(previous - first) + body
                try storage.putBlock(key: PostingBlock.blockKey(term, first: first), block, in: txn)
            }
        }
    }
}
