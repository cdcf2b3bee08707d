import CLMDB

/// A handle to one named database (LMDB's "DBI") inside an environment.
///
/// A handle stays valid for the life of the environment once the transaction that opened it has committed.
public struct Database: Sendable, Hashable {
    /// The raw `MDB_dbi`.
    public let handle: MDB_dbi
    /// The flags the database was opened with.
    public let flags: DatabaseFlags
}

/// Flags of a named database (`mdb_dbi_open`).
public struct DatabaseFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_DUPSORT`: a key may hold several sorted values.
    public static let duplicateSort = DatabaseFlags(rawValue: UInt32(MDB_DUPSORT))
    /// `MDB_DUPFIXED`: with `duplicateSort`, all values have one size.
    public static let duplicateFixed = DatabaseFlags(rawValue: UInt32(MDB_DUPFIXED))
    /// `MDB_INTEGERKEY`: keys are native unsigned integers, compared numerically.
    public static let integerKey = DatabaseFlags(rawValue: UInt32(MDB_INTEGERKEY))
    /// `MDB_REVERSEKEY`: keys compare from their last byte.
    public static let reverseKey = DatabaseFlags(rawValue: UInt32(MDB_REVERSEKEY))
}

/// Flags of a put (`mdb_put`, `mdb_cursor_put`).
public struct PutFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `MDB_NOOVERWRITE`: fail with `keyExists` when the key is stored already.
    public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// `MDB_NODUPDATA`: in a DUPSORT database, fail with `keyExists` when the key/value pair is stored already.
    public static let noDuplicateData = PutFlags(rawValue: UInt32(MDB_NODUPDATA))
    /// `MDB_APPEND`: the key sorts after every stored key (a fast bulk load; `keyExists` otherwise).
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
    /// `MDB_APPENDDUP`: like `append`, for the values of one DUPSORT key.
    public static let appendDuplicate = PutFlags(rawValue: UInt32(MDB_APPENDDUP))
}

/// The shape of one database, from `mdb_stat`.
public struct DatabaseStatistics: Sendable, Hashable {
    /// Size of a page in bytes.
    public var pageSize: Int
    /// Depth of the B-tree.
    public var depth: Int
    /// Pages of each kind.
    public var branchPages: Int
    public var leafPages: Int
    public var overflowPages: Int
    /// Number of entries (key/value pairs, counting each duplicate).
    public var entries: Int

    init(_ stat: MDB_stat) {
        pageSize = Int(stat.ms_psize)
        depth = Int(stat.ms_depth)
        branchPages = Int(stat.ms_branch_pages)
        leafPages = Int(stat.ms_leaf_pages)
        overflowPages = Int(stat.ms_overflow_pages)
        entries = Int(stat.ms_entries)
    }
}

/// Turns a byte buffer into the `MDB_val` the C API takes. LMDB never writes through it.
@inline(__always)
func mdbValue(_ bytes: UnsafeRawBufferPointer) -> MDB_val {
    MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
}

/// The bytes an `MDB_val` returned by LMDB points at; valid until the transaction ends or next writes.
@inline(__always)
func bytes(of value: MDB_val) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
}
