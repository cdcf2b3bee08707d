import LMDB

/// The two databases of one full-text index, and how a write keeps them in step with a record.
///
/// `t/<Model>.<name>` holds the postings (`PostingBlock`). `d/<Model>.<name>` holds the documents: under `0x00` the
/// next document number, the count of documents and of their terms (three little-endian `UInt64`s, what BM25's
/// average length needs); under `0x01` and a document's number (big-endian) its length (a varint) and its record's
/// primary key; under the primary key itself (whose first byte, a key tag, is never `0x00` or `0x01`) the document's
/// number. A record is numbered when it is first indexed and keeps its number while it lives; numbers are not reused.
struct FullTextStorage {
    let databases: FullTextDatabases
    /// The open file, for errors.
    let core: StoreCore

    var postings: Database { databases.postings }
    var documents: Database { databases.documents }

    struct Statistics: Equatable {
        var next: UInt64 = 1
        var count: UInt64 = 0
        var totalLength: UInt64 = 0

        var bytes: [UInt8] {
            withUnsafeBytes(of: next.littleEndian, Array.init) + withUnsafeBytes(of: count.littleEndian, Array.init)
                + withUnsafeBytes(of: totalLength.littleEndian, Array.init)
        }

        init() {}

        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count == 24 else { return nil }
            next = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            count = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            totalLength = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        }
    }

    static let statisticsKey: [UInt8] = [0x00]
    /// Where the index's definition is kept (`FullTextIndex.definition`).
    static let definitionKey: [UInt8] = [0x00, 0x01]

    static func documentKey(_ document: UInt64) -> [UInt8] {
        var key: [UInt8] = [0x01]
        PostingBlock.appendBigEndian(document, to: &key)
        return key
    }

    func damaged(_ what: String) -> StoreError {
        .corruptedFile(
            path: core.path,
            reason: "the full-text index \(databases.name) holds \(what); rebuild it: remove it from the Schema, "
                + "open the store, and declare it again")
    }

    // MARK: Reading

    func statistics(_ txn: ReadTransaction) throws(StoreError) -> Statistics {
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(documents, key: Self.statisticsKey) } catch { throw core.error(error, "read") }
        guard let stored else { return Statistics() }
        guard let statistics = Statistics(stored) else { throw damaged("damaged statistics") }
        return statistics
    }

    /// The number of the document indexed for the record with `primaryKey`.
    func document(of primaryKey: [UInt8], _ txn: ReadTransaction) throws(StoreError) -> UInt64? {
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(documents, key: primaryKey) } catch { throw core.error(error, "read") }
        guard let stored else { return nil }
        guard let number = PostingBlock.readBigEndian(stored) else { throw damaged("a damaged document number") }
        return number
    }

    /// How many documents hold `term`.
    func documentFrequency(of term: [UInt8], _ txn: ReadTransaction) throws(StoreError) -> UInt64 {
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(postings, key: PostingBlock.termKey(term)) } catch { throw core.error(error, "read") }
        guard let stored else { return 0 }
        var reader = Varint.Reader(stored)
        guard let count = reader.next(), reader.isAtEnd else { throw damaged("a damaged document count") }
        return count
    }

    // MARK: Writing

    func putStatistics(_ statistics: Statistics, in txn: LMDB.WriteTransaction) throws(StoreError) {
        try put(documents, Self.statisticsKey, statistics.bytes, txn)
    }

    /// Writes both entries of a document: its number → its length and record, the record → its number.
    func putDocument(_ document: UInt64, primaryKey: [UInt8], length: Int, in txn: LMDB.WriteTransaction)
        throws(StoreError)
    {
        try put(documents, Self.documentKey(document), Varint.encode(UInt64(length)) + primaryKey, txn)
        try put(documents, primaryKey, Self.bigEndian(document), txn)
    }

    func putBlock(key: [UInt8], _ block: [UInt8], in txn: LMDB.WriteTransaction) throws(StoreError) {
        try put(postings, key, block, txn)
    }

    /// Removes a record's document, whose texts were `texts`; `nil` when they cannot be read (a damaged record): its
    /// terms are then found by reading every block.
    func remove(primaryKey: [UInt8], texts: [String?]?, in txn: LMDB.WriteTransaction) throws(StoreError) {
        guard let document = try document(of: primaryKey, txn) else { return }
        let terms: [[UInt8]]
        let length: UInt64
        if let texts {
            let found = DocumentTerms(texts: texts)
            (terms, length) = (Array(found.occurrences.keys), UInt64(found.length))
        } else {
            (terms, length) = try termsAndLength(of: document, txn)
        }
        for term in terms {
            try edit(term: term, document: document, to: nil, txn)
            try changeFrequency(of: term, by: -1, txn)
        }
        var statistics = try statistics(txn)
        statistics.count -= min(statistics.count, 1)
        statistics.totalLength -= min(statistics.totalLength, length)
        try put(documents, Self.statisticsKey, statistics.bytes, txn)
        try delete(documents, Self.documentKey(document), txn)
        try delete(documents, primaryKey, txn)
    }

    /// Moves a record's document from `old` texts to `new` ones, touching only the terms whose occurrences changed.
    func update(primaryKey: [UInt8], old: [String?], new: [String?], in txn: LMDB.WriteTransaction) throws(StoreError) {
        guard old != new else { return }
        guard let document = try document(of: primaryKey, txn) else {
            // A record without a document (an index repaired by hand): indexed as a new one, the way inserts are.
            let buffer = FullTextBuffer(storage: self)
            try buffer.add(primaryKey: primaryKey, texts: new, in: txn)
            return try buffer.write(in: txn)
        }
        let before = DocumentTerms(texts: old)
        let after = DocumentTerms(texts: new)
        for term in before.occurrences.keys where after.occurrences[term] == nil {
            try edit(term: term, document: document, to: nil, txn)
            try changeFrequency(of: term, by: -1, txn)
        }
        for (term, occurrences) in after.occurrences where before.occurrences[term] != occurrences {
            try edit(term: term, document: document, to: Posting(document: document, occurrences: occurrences), txn)
            if before.occurrences[term] == nil { try changeFrequency(of: term, by: 1, txn) }
        }
        if before.length != after.length {
            var statistics = try statistics(txn)
            statistics.totalLength =
                statistics.totalLength - min(statistics.totalLength, UInt64(before.length))
                + UInt64(after.length)
            try put(documents, Self.statisticsKey, statistics.bytes, txn)
            try put(documents, Self.documentKey(document), Varint.encode(UInt64(after.length)) + primaryKey, txn)
        }
    }

    /// The terms of `document`, found in every block, and its length as its documents entry gives it.
    private func termsAndLength(of document: UInt64, _ txn: LMDB.WriteTransaction) throws(StoreError)
        -> ([[UInt8]], UInt64)
    {
        var terms: [[UInt8]] = []
        var length: UInt64 = 0
        try core.run("read the full-text index") {
            try txn.walk(postings) { entry in
                guard let (term, first) = PostingBlock.parse(key: entry.key), first <= document else { return true }
                if PostingBlock.decode(entry.value, first: first)?.contains(where: { $0.document == document }) == true
                {
                    terms.append(Array(term))
                }
                return true
            }
            if let stored = try txn.get(documents, key: Self.documentKey(document)) {
                var reader = Varint.Reader(stored)
                length = reader.next() ?? 0
            }
        }
        return (terms, length)
    }

    /// The key, first document and bytes (copied) of the term's last block.
    func lastBlock(of term: [UInt8], _ txn: LMDB.WriteTransaction) throws(StoreError)
        -> (key: [UInt8], first: UInt64, block: [UInt8])?
    {
        do {
            return try txn.withCursor(postings) { cursor -> (key: [UInt8], first: UInt64, block: [UInt8])? in
                let bound = term + [1]
                let after = try bound.withUnsafeBytes { try cursor.seek(atLeast: $0) }
                guard let entry = after == nil ? try cursor.last() : try cursor.previous(),
                    let parsed = PostingBlock.parse(key: entry.key), parsed.term.elementsEqual(term)
                else { return nil }
                return (Array(entry.key), parsed.first, Array(entry.value))
            }
        } catch let error as LMDBError {
            throw core.error(error, "read")
        } catch {
            throw core.error(.badTransaction, "read")
        }
    }

    /// The block that holds (or would hold) `document` among the term's: the last one starting at or before it, else
    /// the first.
    private func block(of term: [UInt8], holding document: UInt64, _ txn: LMDB.WriteTransaction) throws(StoreError)
        -> (key: [UInt8], first: UInt64, postings: [Posting])?
    {
        let found: (key: [UInt8], first: UInt64, block: [UInt8])?
        do {
            found = try txn.withCursor(postings) { cursor -> (key: [UInt8], first: UInt64, block: [UInt8])? in
                let bound = PostingBlock.blockKey(term, first: document)
                var entry = try bound.withUnsafeBytes { try cursor.seek(atLeast: $0) }
                if let current = entry, current.key.elementsEqual(bound) {
                    return (bound, document, Array(current.value))
                }
                // The block before, when it is the term's; else the one found, when it is the term's.
                let next = entry
                entry = next == nil ? try cursor.last() : try cursor.previous()
                for candidate in [entry, next] {
                    if let candidate, let parsed = PostingBlock.parse(key: candidate.key),
                        parsed.term.elementsEqual(term)
                    {
                        return (Array(candidate.key), parsed.first, Array(candidate.value))
                    }
                }
                return nil
            }
        } catch let error as LMDBError {
            throw core.error(error, "read")
        } catch {
            throw core.error(.badTransaction, "read")
        }
        guard let found else { return nil }
        guard let decoded = found.block.withUnsafeBytes({ PostingBlock.decode($0, first: found.first) }) else {
            throw damaged("a damaged block of postings")
        }
        return (found.key, found.first, decoded)
    }

    /// Sets the term's posting for `document` to `posting`, or removes it (`nil`), rewriting the block that holds
    /// it: split in two when it grew past twice the target, deleted when emptied.
    private func edit(term: [UInt8], document: UInt64, to posting: Posting?, _ txn: LMDB.WriteTransaction)
        throws(StoreError)
    {
        var postingsOfBlock: [Posting] = []
        var oldKey: [UInt8]?
        if let found = try block(of: term, holding: document, txn) {
            postingsOfBlock = found.postings
            oldKey = found.key
        }
        let place = postingsOfBlock.firstIndex { $0.document >= document } ?? postingsOfBlock.endIndex
        let present = place < postingsOfBlock.endIndex && postingsOfBlock[place].document == document
        switch (posting, present) {
        case (let posting?, true): postingsOfBlock[place] = posting
        case (let posting?, false): postingsOfBlock.insert(posting, at: place)
        case (nil, true): postingsOfBlock.remove(at: place)
        case (nil, false): return
        }
        if let oldKey { try delete(postings, oldKey, txn) }
        var start = 0
        while start < postingsOfBlock.count {
            // Greedy blocks of about the target size; one block when the whole fits in twice the target.
            var end = start + 1
            var size = PostingBlock.encode(postingsOfBlock[start..<end]).count
            let whole = PostingBlock.encode(postingsOfBlock[start...]).count
            if whole <= 2 * PostingBlock.targetBytes {
                end = postingsOfBlock.count
            } else {
                while end < postingsOfBlock.count, size < PostingBlock.targetBytes {
                    end += 1
                    size = PostingBlock.encode(postingsOfBlock[start..<end]).count
                }
            }
            try put(
                postings, PostingBlock.blockKey(term, first: postingsOfBlock[start].document),
                PostingBlock.encode(postingsOfBlock[start..<end]), txn)
            start = end
        }
    }

    func changeFrequency(of term: [UInt8], by change: Int, _ txn: LMDB.WriteTransaction) throws(StoreError) {
        let count = try documentFrequency(of: term, txn)
        let changed = change < 0 ? count - min(count, UInt64(-change)) : count + UInt64(change)
        if changed == 0 {
            try delete(postings, PostingBlock.termKey(term), txn)
        } else {
            try put(postings, PostingBlock.termKey(term), Varint.encode(changed), txn)
        }
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        PostingBlock.appendBigEndian(value, to: &bytes)
        return bytes
    }

    private func put(_ database: Database, _ key: [UInt8], _ value: [UInt8], _ txn: LMDB.WriteTransaction)
        throws(StoreError)
    {
        do { try txn.put(database, key: key, value: value) } catch {
            throw core.error(error, "write the full-text index")
        }
    }

    private func delete(_ database: Database, _ key: [UInt8], _ txn: LMDB.WriteTransaction) throws(StoreError) {
        do { _ = try txn.delete(database, key: key) } catch { throw core.error(error, "write the full-text index") }
    }
}
