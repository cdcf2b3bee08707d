// The raw peer: LMDB's C API called directly, with a hand-written byte layout and no allocation per operation.
// It is the ceiling Cellar is measured against, not a second wrapper: keys live on the stack, values are written
// into one buffer reused for every record, and reads decode straight from the mapped pages.
import CRawLMDB
import Foundation

struct RawLMDBError: Error, CustomStringConvertible {
    let code: Int32
    var description: String { String(cString: mdb_strerror(code)) }
}

@inline(__always)
func check(_ code: Int32) throws {
    if code != MDB_SUCCESS { throw RawLMDBError(code: code) }
}

/// An environment opened as Cellar opens its own (`MDB_NOTLS`, full fsync at every commit), with one database of
/// dogs laid out as in `RawLayout`.
final class RawStore {
    let folder = temporaryFolder()
    let env: OpaquePointer
    let database: MDB_dbi

    init(filled: Bool) throws {
        var env: OpaquePointer?
        try check(mdb_env_create(&env))
        guard let env else { throw RawLMDBError(code: EINVAL) }
        self.env = env
        try check(mdb_env_set_mapsize(env, 512 << 20))
        try check(mdb_env_set_maxdbs(env, 8))
        try check(mdb_env_open(env, folder.path, UInt32(MDB_NOTLS), 0o644))
        var dbi = MDB_dbi()
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn))
        try check(mdb_dbi_open(txn, "dogs", UInt32(MDB_CREATE), &dbi))
        try check(mdb_txn_commit(txn))
        database = dbi
        if filled { try insertAll() }
    }

    deinit {
        mdb_env_close(env)
        try? FileManager.default.removeItem(at: folder)
    }

    /// Opens (creating) another database in this environment.
    func openDatabase(_ name: String, duplicates: Bool = false) throws -> MDB_dbi {
        try write { txn in
            var dbi = MDB_dbi()
            try check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE) | (duplicates ? UInt32(MDB_DUPSORT) : 0), &dbi))
            return dbi
        }
    }

    /// Runs `body` in a write transaction and commits it.
    @inline(__always)
    @discardableResult
    func write<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn))
        guard let txn else { throw RawLMDBError(code: EINVAL) }
        do {
            let result = try body(txn)
            try check(mdb_txn_commit(txn))
            return result
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
    }

    /// Runs `body` in a read-only transaction.
    @inline(__always)
    func read<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        guard let txn else { throw RawLMDBError(code: EINVAL) }
        defer { mdb_txn_abort(txn) }
        return try body(txn)
    }

    func insertAll() throws {
        try write { txn in
            var buffer = RawLayout.Buffer()
            for dog in dogs {
                try RawLayout.withKey(dog.id) { key in
                    try Raw.put(txn, database, key: key, value: buffer.encode(dog))
                }
            }
        }
    }
}

/// The C calls the raw peer makes, with their `MDB_val`s on the stack.
enum Raw {
    @inline(__always)
    static func value(_ bytes: UnsafeRawBufferPointer) -> MDB_val {
        MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
    }

    @inline(__always)
    static func bytes(_ value: MDB_val) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    }

    @inline(__always)
    static func put(
        _ txn: OpaquePointer, _ dbi: MDB_dbi, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) throws {
        var key = Raw.value(key)
        var value = Raw.value(value)
        try check(mdb_put(txn, dbi, &key, &value, 0))
    }

    @inline(__always)
    static func get(_ txn: OpaquePointer, _ dbi: MDB_dbi, key: UnsafeRawBufferPointer) throws
        -> UnsafeRawBufferPointer?
    {
        var key = Raw.value(key)
        var found = MDB_val()
        let code = mdb_get(txn, dbi, &key, &found)
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return bytes(found)
    }

    @inline(__always)
    @discardableResult
    static func delete(
        _ txn: OpaquePointer, _ dbi: MDB_dbi, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer? = nil
    ) throws -> Bool {
        var key = Raw.value(key)
        var code: Int32
        if let value {
            var data = Raw.value(value)
            code = mdb_del(txn, dbi, &key, &data)
        } else {
            code = mdb_del(txn, dbi, &key, nil)
        }
        if code == MDB_NOTFOUND { return false }
        try check(code)
        return true
    }

    /// Runs `body` with a cursor on `dbi`.
    @inline(__always)
    static func withCursor<R>(_ txn: OpaquePointer, _ dbi: MDB_dbi, _ body: (OpaquePointer) throws -> R) throws -> R {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor))
        guard let cursor else { throw RawLMDBError(code: EINVAL) }
        defer { mdb_cursor_close(cursor) }
        return try body(cursor)
    }

    /// Moves `cursor` (`MDB_FIRST`, `MDB_NEXT`, `MDB_SET_RANGE` with `key`…); `nil` at the end.
    @inline(__always)
    static func move(_ cursor: OpaquePointer, _ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil) throws
        -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)?
    {
        var k = key.map(Raw.value) ?? MDB_val()
        var v = MDB_val()
        let code = mdb_cursor_get(cursor, &k, &v, op)
        if code == MDB_NOTFOUND { return nil }
        try check(code)
        return (bytes(k), bytes(v))
    }
}

/// key: id as 8 big-endian bytes; value: age (8), owner flag (1) and owner (8), name length (4) and UTF-8.
enum RawLayout {
    /// Runs `body` with the key of `id`, on the stack.
    @inline(__always)
    @discardableResult
    static func withKey<R>(_ id: Int64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: UInt64(bitPattern: id).bigEndian, body)
    }

    /// The key of `id` as an array, for setup code outside the measured loops.
    static func key(_ id: Int64) -> [UInt8] { withKey(id) { Array($0) } }

    static func id(_ key: UnsafeRawBufferPointer) -> Int64 {
        Int64(bitPattern: UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)))
    }

    /// One buffer every record is written into in turn.
    struct Buffer: ~Copyable {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)

        deinit { storage.deallocate() }

        /// The bytes of `dog`, valid until the next call.
        mutating func encode(_ dog: Dog) -> UnsafeRawBufferPointer {
            storage.storeBytes(of: Int64(dog.age).littleEndian, toByteOffset: 0, as: Int64.self)
            storage[8] = dog.owner == nil ? 0 : 1
            storage.storeBytes(of: (dog.owner ?? 0).littleEndian, toByteOffset: 9, as: Int64.self)
            var name = dog.name
            let length = name.withUTF8 { utf8 in
                UnsafeMutableRawBufferPointer(rebasing: storage[21...]).copyMemory(from: UnsafeRawBufferPointer(utf8))
                return utf8.count
            }
            storage.storeBytes(of: UInt32(length).littleEndian, toByteOffset: 17, as: UInt32.self)
            return UnsafeRawBufferPointer(rebasing: storage[0..<21 + length])
        }
    }

    /// The bytes of `dog` as an array, for setup code outside the measured loops.
    static func value(_ dog: Dog) -> [UInt8] {
        var buffer = Buffer()
        return Array(buffer.encode(dog))
    }

    static func dog(id: Int64, from bytes: UnsafeRawBufferPointer) -> Dog {
        let age = Int(Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: Int64.self)))
        let hasOwner = bytes[8] == 1
        let owner = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 9, as: Int64.self))
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 17, as: UInt32.self)))
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[21..<21 + length]), as: UTF8.self)
        return Dog(id: id, name: name, age: age, owner: hasOwner ? owner : nil)
    }

    /// The owner field of a record, read without decoding the rest: what the raw peer's filter checks.
    static func owner(from bytes: UnsafeRawBufferPointer) -> Int64? {
        bytes[8] == 1 ? Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 9, as: Int64.self)) : nil
    }
}
