import LMDB

/// The entries of one index or backlink database that a build gathers while it walks a model's records (a new
/// index, a migration's rebuild), written in key order once the walk is done.
///
/// Put in record order, each entry would search its tree and split pages all over it. Sorted, into a database that
/// is still empty, each is appended at the tree's end (`MDB_APPEND`, and `MDB_APPENDDUP` for another record with the
/// same key), and every page is filled once. The entries are kept in one buffer, not an array each; a build whose
/// entries pass `budget` bytes writes what it has (sorted, then searched for, since the database is no longer empty)
/// and gathers on: a large store needs about that much for each database being built, and up to twice that while an
/// array grows.
struct IndexLoad {
    /// The bytes kept before they are written (the entries and their places): a part of a large store, a whole small
    /// one.
    static let budget = 64 << 20

    /// The unique index's name, when two records may not share a key.
    private let unique: String?
    /// The entries' keys and primary keys, one after the other.
    private var bytes: [UInt8] = []
    private var entries: [Entry] = []
    /// Whether nothing was written into the database yet: entries can then be appended.
    private var isEmpty = true

    /// An entry's place in `bytes`, and its first bytes loaded big-endian and padded with zeros: the sort compares
    /// those integers, and reads the bytes only where they tie (zero is the smallest byte, so where the padded words
    /// tie, the bytes are equal up to the shorter one's end).
    private struct Entry {
        let start: Int
        let keyCount: Int
        let valueCount: Int
        let mustBeUnique: Bool
        /// The key's first 16 bytes: the whole of an integer's or a short string's key.
        let keyWords: (UInt64, UInt64)
        /// The value's (the record's key's) first 16 bytes: the whole of an integer id's key (9 bytes).
        let valueWords: (UInt64, UInt64)

        static func words(_ bytes: some Collection<UInt8>) -> (UInt64, UInt64) {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                let copied: Bool? = bytes.withContiguousStorageIfAvailable { buffer in
                    if let source = buffer.baseAddress, let target = raw.baseAddress {
                        target.copyMemory(from: source, byteCount: min(buffer.count, raw.count))
                    }
                    return true
                }
                if copied == nil {
                    for (position, byte) in zip(raw.indices, bytes) { raw[position] = byte }
                }
            }
            return (UInt64(bigEndian: words.0), UInt64(bigEndian: words.1))
        }
    }

    /// How many bytes of entries are gathered before they are written.
    private let budget: Int

    /// The load of an empty database; `unique` names a unique index.
    init(unique: String?, budget: Int = IndexLoad.budget) {
        self.unique = unique
        self.budget = budget
    }

    /// Whether the gathered entries should be written now: their bytes and their places in the buffer, counted.
    var isFull: Bool { bytes.count + entries.count * MemoryLayout<Entry>.stride >= budget }

    mutating func add(
        _ key: some Collection<UInt8>, primaryKey: some Collection<UInt8>, mustBeUnique: Bool = false
    ) {
        entries.append(
            Entry(
                start: bytes.count, keyCount: key.count, valueCount: primaryKey.count, mustBeUnique: mustBeUnique,
                keyWords: Entry.words(key), valueWords: Entry.words(primaryKey)))
        bytes.append(contentsOf: key)
        bytes.append(contentsOf: primaryKey)
    }

    /// Writes the gathered entries into `database` in key order, then primary-key order (LMDB's own for DUPSORT
    /// values), each pair once. Throws `uniqueConstraintViolated` when two records share a key of a unique index.
    mutating func write(to database: Database, writer: IndexWriter, in txn: LMDB.WriteTransaction) throws(StoreError) {
        defer {
            bytes.removeAll(keepingCapacity: true)
            entries.removeAll(keepingCapacity: true)
        }
        let bytes = bytes
        let loaded: Result<Void, StoreError>
        do {
            // One cursor for the whole load: no cursor made for each entry, and a key's values appended on its page.
            loaded = try txn.withCursor(database) { cursor in
                bytes.withUnsafeBytes { raw in
                    Result { () throws(StoreError) in
                        try sortAndPut(raw, through: cursor, into: database, writer: writer, in: txn)
                    }
                }
            }
        } catch {
            throw writer.core.error(error as? LMDBError ?? .badTransaction, "write an index entry")
        }
        try loaded.get()
        if !entries.isEmpty { isEmpty = false }
    }

    private mutating func sortAndPut(
        _ raw: UnsafeRawBufferPointer, through cursor: Cursor, into database: Database, writer: IndexWriter,
        in txn: LMDB.WriteTransaction
    ) throws(StoreError) {
        func key(_ entry: Entry) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: raw[entry.start..<entry.start + entry.keyCount])
        }
        func value(_ entry: Entry) -> UnsafeRawBufferPointer {
            let start = entry.start + entry.keyCount
            return UnsafeRawBufferPointer(rebasing: raw[start..<start + entry.valueCount])
        }
        func compareKeys(_ first: Entry, _ second: Entry) -> Int {
            if first.keyWords.0 != second.keyWords.0 { return first.keyWords.0 < second.keyWords.0 ? -1 : 1 }
            if first.keyWords.1 != second.keyWords.1 { return first.keyWords.1 < second.keyWords.1 ? -1 : 1 }
            guard first.keyCount > 16 || second.keyCount > 16 else { return first.keyCount - second.keyCount }
            return SortedKeys.compare(key(first), key(second))
        }
        func compareValues(_ first: Entry, _ second: Entry) -> Int {
            if first.valueWords.0 != second.valueWords.0 { return first.valueWords.0 < second.valueWords.0 ? -1 : 1 }
            if first.valueWords.1 != second.valueWords.1 { return first.valueWords.1 < second.valueWords.1 ? -1 : 1 }
            guard first.valueCount > 16 || second.valueCount > 16 else { return first.valueCount - second.valueCount }
            return SortedKeys.compare(value(first), value(second))
        }
        entries.sort { first, second in
            let keys = compareKeys(first, second)
            return keys != 0 ? keys < 0 : compareValues(first, second) < 0
        }
        var previous: Entry?
        for entry in entries {
            var flags: PutFlags = []
            if let previous, compareKeys(previous, entry) == 0 {
                if compareValues(previous, entry) == 0 { continue }
                if let unique, entry.mustBeUnique {
                    throw .uniqueConstraintViolated(
                        model: writer.model, index: unique, value: KeyEncoding.describe(Array(key(entry))))
                }
                if isEmpty { flags = .appendDuplicate }
            } else if isEmpty {
                flags = .append
            } else if let unique, entry.mustBeUnique {
                try writer.checkUnique(
                    unique, key: Array(key(entry)), primaryKey: Array(value(entry)), in: database, txn: txn)
            }
            do throws(LMDBError) {
                try txn.put(through: cursor, key: key(entry), value: value(entry), flags: flags)
            } catch {
                throw writer.core.error(error, "write an index entry")
            }
            previous = entry
        }
    }
}
