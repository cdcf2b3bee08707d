import CLMDB

/// A read-only view of one committed version of the environment.
///
/// A transaction exists only inside the closure of `Environment.read` or `Environment.write` and must not
/// escape it. Byte buffers it returns point into the memory map: they are valid until the transaction ends
/// (in a write transaction, until the next write to the same database), so copy what must outlive it.
public class ReadTransaction {
    /// The `MDB_txn`.
    let handle: OpaquePointer
    let environment: Environment

    init(handle: OpaquePointer, environment: Environment) {
        self.handle = handle
        self.environment = environment
    }

    /// The transaction's ID: the number of the committed version it reads (or, for a write, will create).
    public var id: UInt64 { UInt64(truncatingIfNeeded: mdb_txn_id(handle)) }

    /// Opens an existing named database; `nil` when the file holds no database of that name.
    public func openDatabase(named name: String?) throws(LMDBError) -> Database? {
        var dbi = MDB_dbi()
        let code = mdb_dbi_open(handle, name, 0, &dbi)
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return Database(handle: dbi, flags: try flags(of: dbi))
    }

    func flags(of dbi: MDB_dbi) throws(LMDBError) -> DatabaseFlags {
        var raw: UInt32 = 0
        try check(mdb_dbi_flags(handle, dbi, &raw))
        return DatabaseFlags(rawValue: raw)
    }

    /// The value stored under `key`, or `nil`. In a DUPSORT database, the first of the key's values.
    public func get(_ database: Database, key: UnsafeRawBufferPointer) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var k = mdbValue(key)
        var v = MDB_val()
        let code = mdb_get(handle, database.handle, &k, &v)
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return bytes(of: v)
    }

    /// Entry counts and B-tree shape of a database (`mdb_stat`); `entries` is exact and costs no scan.
    public func statistics(_ database: Database) throws(LMDBError) -> DatabaseStatistics {
        var stat = MDB_stat()
        try check(mdb_stat(handle, database.handle, &stat))
        return DatabaseStatistics(stat)
    }

    /// Runs `body` with a cursor on `database`, closed when `body` returns.
    public func withCursor<R>(_ database: Database, _ body: (Cursor) throws -> R) throws -> R {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, database.handle, &cursor))
        guard let cursor else { throw LMDBError.badTransaction }
        defer { mdb_cursor_close(cursor) }
        return try body(Cursor(handle: cursor, isDuplicateSorted: database.flags.contains(.duplicateSort)))
    }
}

/// The one write transaction of the environment (LMDB serialises writers across threads and processes).
///
/// Its changes are visible to itself at once and to everyone else after `Environment.write` commits it.
public final class WriteTransaction: ReadTransaction {
    /// Set when any call saw `MDB_MAP_FULL`: the transaction is dead and `Environment.write` grows the map
    /// and runs the closure again, whatever error the closure turned this one into.
    private(set) var ranOutOfSpace = false

    /// Creates (when missing) and opens a named database.
    public func createDatabase(named name: String?, flags: DatabaseFlags = []) throws(LMDBError) -> Database {
        var dbi = MDB_dbi()
        try track(mdb_dbi_open(handle, name, flags.rawValue | UInt32(MDB_CREATE), &dbi))
        let actual = try self.flags(of: dbi)
        // An existing database keeps the flags it was created with; a mismatch means the file is not ours.
        if actual.intersection([.duplicateSort, .integerKey]) != flags.intersection([.duplicateSort, .integerKey]) {
            throw .incompatible
        }
        return Database(handle: dbi, flags: actual)
    }

    /// Stores `value` under `key`. Throws `keyExists` when `flags` forbid overwriting and the key is there.
    public func put(
        _ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []
    ) throws(LMDBError) {
        var k = mdbValue(key)
        var v = mdbValue(value)
        try track(mdb_put(handle, database.handle, &k, &v, flags.rawValue))
    }

    /// Stores `value` under `key` through `cursor`, which is left on the new entry. A bulk load puts through one
    /// cursor rather than `put`, which makes a cursor for each entry; an `appendDuplicate` then finds the key on the
    /// cursor's page without searching the tree.
    public func put(
        through cursor: Cursor, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []
    ) throws(LMDBError) {
        var k = mdbValue(key)
        var v = mdbValue(value)
        try track(mdb_cursor_put(cursor.handle, &k, &v, flags.rawValue))
    }

    /// Replaces the value of the entry `cursor` stands on when that entry's key is `key`, without searching the tree
    /// (`MDB_CURRENT`), and returns `true`; returns `false` and writes nothing when the cursor no longer stands on
    /// `key`: its entry was deleted, or its database emptied, by another write since the cursor reached it. The cursor
    /// stays on the entry. `key` must not point into the map: LMDB moves the entry while it writes a value of another
    /// size. Not for a DUPSORT database, where a value is also its place.
    public func replaceCurrent(
        of cursor: Cursor, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) throws(LMDBError) -> Bool {
        guard !cursor.isDuplicateSorted else { throw .incompatible }
        // LMDB's MDB_CURRENT trusts the cursor: after a delete it would rewrite the next entry, or a slot past the
        // page's last one. Where the cursor stands is read first.
        var current = MDB_val()
        var currentValue = MDB_val()
        let code = mdb_cursor_get(cursor.handle, &current, &currentValue, MDB_GET_CURRENT)
        guard code == 0, bytes(of: current).elementsEqual(key) else { return false }
        var k = mdbValue(key)
        var v = mdbValue(value)
        try track(mdb_cursor_put(cursor.handle, &k, &v, UInt32(MDB_CURRENT)))
        return true
    }

    /// Removes `key` (in a DUPSORT database, all its values). Returns `false` when it was not stored.
    @discardableResult
    public func delete(_ database: Database, key: UnsafeRawBufferPointer) throws(LMDBError) -> Bool {
        var k = mdbValue(key)
        let code = mdb_del(handle, database.handle, &k, nil)
        if code == MDB_NOTFOUND { return false }
        try track(code)
        return true
    }

    /// Removes one key/value pair of a DUPSORT database. Returns `false` when it was not stored.
    @discardableResult
    public func delete(
        _ database: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) throws(LMDBError) -> Bool {
        var k = mdbValue(key)
        var v = mdbValue(value)
        let code = mdb_del(handle, database.handle, &k, &v)
        if code == MDB_NOTFOUND { return false }
        try track(code)
        return true
    }

    /// Deletes the entries at the start of `database` whose keys are at most `last`, walking one cursor (no lookup per
    /// entry), and returns how many it deleted: how a log keyed by version drops its oldest entries.
    @discardableResult
    public func deleteLeading(_ database: Database, through last: [UInt8]) throws(LMDBError) -> Int {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(handle, database.handle, &cursor))
        guard let cursor else { throw .badTransaction }
        defer { mdb_cursor_close(cursor) }
        var k = MDB_val()
        var v = MDB_val()
        var code = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        var deleted = 0
        while code == 0 {
            let key = UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)
            guard !last.lexicographicallyPrecedes(key) else { return deleted }
            try track(mdb_cursor_del(cursor, 0))
            deleted += 1
            // After a delete the cursor stands on the next entry.
            code = mdb_cursor_get(cursor, &k, &v, MDB_GET_CURRENT)
        }
        if code != MDB_NOTFOUND { try track(code) }
        return deleted
    }

    /// Deletes `database` and its entries from the file. Its handle must not be used afterwards.
    public func drop(_ database: Database) throws(LMDBError) {
        try track(mdb_drop(handle, database.handle, 1))
    }

    /// Removes every entry of `database`, keeping the database itself.
    public func empty(_ database: Database) throws(LMDBError) {
        try track(mdb_drop(handle, database.handle, 0))
    }

    @inline(__always)
    func track(_ code: Int32) throws(LMDBError) {
        if code == 0 { return }
        if code == MDB_MAP_FULL { ranOutOfSpace = true }
        throw LMDBError(code: code)
    }
}

// MARK: - Byte-array conveniences

extension ReadTransaction {
    /// The value stored under `key`, or `nil`.
    public func get(_ database: Database, key: [UInt8]) throws(LMDBError) -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { raw in Result { () throws(LMDBError) in try get(database, key: raw) } }.get()
    }
}

extension WriteTransaction {
    /// Stores `value` under `key`.
    public func put(_ database: Database, key: [UInt8], value: [UInt8], flags: PutFlags = []) throws(LMDBError) {
        try key.withUnsafeBytes { rawKey in
            value.withUnsafeBytes { rawValue in
                Result { () throws(LMDBError) in try put(database, key: rawKey, value: rawValue, flags: flags) }
            }
        }.get()
    }

    /// Removes `key`; `false` when it was not stored.
    @discardableResult
    public func delete(_ database: Database, key: [UInt8]) throws(LMDBError) -> Bool {
        try key.withUnsafeBytes { raw in Result { () throws(LMDBError) in try delete(database, key: raw) } }.get()
    }
}
