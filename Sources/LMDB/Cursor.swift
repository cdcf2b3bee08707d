import CLMDB

/// One key/value entry as LMDB returns it: both buffers point into the map (see `ReadTransaction`).
public typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

/// A position in one database, for ordered scans, ranges and duplicate lists.
///
/// Every move returns the entry it lands on, or `nil` when there is none.
public final class Cursor {
    let handle: OpaquePointer
    /// Whether the database keeps several sorted values per key.
    let isDuplicateSorted: Bool

    init(handle: OpaquePointer, isDuplicateSorted: Bool) {
        self.handle = handle
        self.isDuplicateSorted = isDuplicateSorted
    }

    private func move(
        _ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil,
        value: UnsafeRawBufferPointer? = nil
    ) throws(LMDBError) -> Entry? {
        var k = key.map(mdbValue) ?? MDB_val()
        var v = value.map(mdbValue) ?? MDB_val()
        let code = mdb_cursor_get(handle, &k, &v, op)
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return (bytes(of: k), bytes(of: v))
    }

    /// The first entry of the database.
    public func first() throws(LMDBError) -> Entry? { try move(MDB_FIRST) }
    /// The last entry of the database.
    public func last() throws(LMDBError) -> Entry? { try move(MDB_LAST) }
    /// The entry after the current one (the next duplicate first, in a DUPSORT database).
    public func next() throws(LMDBError) -> Entry? { try move(MDB_NEXT) }
    /// The entry before the current one.
    public func previous() throws(LMDBError) -> Entry? { try move(MDB_PREV) }
    /// The current entry.
    public func current() throws(LMDBError) -> Entry? { try move(MDB_GET_CURRENT) }
    /// The first entry whose key is `key` exactly.
    public func seek(to key: UnsafeRawBufferPointer) throws(LMDBError) -> Entry? { try move(MDB_SET_KEY, key: key) }
    /// The first entry whose key is at least `key`: the start of a range scan.
    public func seek(atLeast key: UnsafeRawBufferPointer) throws(LMDBError) -> Entry? {
        try move(MDB_SET_RANGE, key: key)
    }
    /// The first key/value pair at least `key`/`value` (DUPSORT), for ranges within one key's values.
    public func seek(key: UnsafeRawBufferPointer, valueAtLeast value: UnsafeRawBufferPointer) throws(LMDBError)
        -> Entry?
    {
        try move(MDB_GET_BOTH_RANGE, key: key, value: value)
    }
    /// The next value of the current key (DUPSORT), `nil` after its last one.
    public func nextDuplicate() throws(LMDBError) -> Entry? { try move(MDB_NEXT_DUP) }
    /// The first entry of the next key, skipping the current key's other values (DUPSORT).
    public func nextKey() throws(LMDBError) -> Entry? { try move(MDB_NEXT_NODUP) }
    /// The last entry of the previous key (DUPSORT).
    public func previousKey() throws(LMDBError) -> Entry? { try move(MDB_PREV_NODUP) }

    /// How many values the current key holds (DUPSORT; 1 otherwise).
    public func duplicateCount() throws(LMDBError) -> Int {
        guard isDuplicateSorted else { return 1 }
        var count: Int = 0
        try check(mdb_cursor_count(handle, &count))
        return count
    }
}
