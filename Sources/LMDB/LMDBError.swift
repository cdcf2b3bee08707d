import CLMDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every failure the LMDB C API can report, one case per `MDB_*` return code, plus operating-system errors.
///
/// The layer above turns these into user-facing errors; this type keeps LMDB's own vocabulary.
public enum LMDBError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `MDB_KEYEXIST`: the key (or key/value pair) is already stored and the put asked not to overwrite.
    case keyExists
    /// `MDB_NOTFOUND`: no matching key or data.
    case notFound
    /// `MDB_PAGE_NOTFOUND`: a requested page was not found; the file is damaged.
    case pageNotFound
    /// `MDB_CORRUPTED`: a page has an invalid type; the file is damaged.
    case corrupted
    /// `MDB_PANIC`: an earlier fatal error left the environment unusable; it must be reopened.
    case panic
    /// `MDB_VERSION_MISMATCH`: the environment was written by an incompatible LMDB version.
    case versionMismatch
    /// `MDB_INVALID`: the file is not an LMDB data file.
    case invalidFile
    /// `MDB_MAP_FULL`: the map size is reached; the transaction must be aborted and the map grown.
    case mapFull
    /// `MDB_DBS_FULL`: more named databases than `maxDatabases` allows.
    case databasesFull
    /// `MDB_READERS_FULL`: every reader slot is taken.
    case readersFull
    /// `MDB_TLS_FULL`: too many thread-local slots (never with `MDB_NOTLS`).
    case threadLocalStorageFull
    /// `MDB_TXN_FULL`: the write transaction has too many dirty pages.
    case transactionFull
    /// `MDB_CURSOR_FULL`: the cursor stack is too deep (an internal limit).
    case cursorFull
    /// `MDB_PAGE_FULL`: a page has no more room (an internal error).
    case pageFull
    /// `MDB_MAP_RESIZED`: another process grew the map past this process's size; adopt it and retry.
    case mapResized
    /// `MDB_INCOMPATIBLE`: the operation does not fit the database's flags (for example DUPSORT on a plain one).
    case incompatible
    /// `MDB_BAD_RSLOT`: a reader slot was used wrongly.
    case badReaderSlot
    /// `MDB_BAD_TXN`: the transaction must be aborted after an earlier error, or it is used on the wrong thread.
    case badTransaction
    /// `MDB_BAD_VALSIZE`: a key is empty or too long, or a DUPSORT value is too long.
    case badValueSize
    /// `MDB_BAD_DBI`: the database handle changed unexpectedly.
    case badDatabaseHandle
    /// An operating-system error (`errno`), such as `ENOENT`, `EACCES` or `ENOSPC`.
    case system(errno: Int32)
    /// The data file ends before pages its newest version uses (found before LMDB reads them, so no `SIGBUS`):
    /// it was cut, by a full disk or a bad copy. (Free pages past its end are no damage.) Reported with LMDB's `MDB_CORRUPTED` code.
    case truncated(expectedBytes: Int, actualBytes: Int)
    /// A meta page that LMDB would accept (its flags, magic number and version are right) holds a value LMDB would
    /// act on and could not survive: a page size of 0 or not a power of two, a last page past any file. Found before
    /// LMDB reads the file. Reported with LMDB's `MDB_CORRUPTED` code.
    case damagedMetaPage(reason: String)
    /// This process has an environment open in the folder already; a second one would break LMDB's locks.
    /// Reported with `EBUSY`.
    case alreadyOpen
    /// A write was asked of an environment opened with `EnvironmentOptions.readOnly`. Reported with `EACCES`.
    case readOnly

    /// The error for a nonzero return code of an `mdb_*` call.
    public init(code: Int32) {
        switch code {
        case MDB_KEYEXIST: self = .keyExists
        case MDB_NOTFOUND: self = .notFound
        case MDB_PAGE_NOTFOUND: self = .pageNotFound
        case MDB_CORRUPTED: self = .corrupted
        case MDB_PANIC: self = .panic
        case MDB_VERSION_MISMATCH: self = .versionMismatch
        case MDB_INVALID: self = .invalidFile
        case MDB_MAP_FULL: self = .mapFull
        case MDB_DBS_FULL: self = .databasesFull
        case MDB_READERS_FULL: self = .readersFull
        case MDB_TLS_FULL: self = .threadLocalStorageFull
        case MDB_TXN_FULL: self = .transactionFull
        case MDB_CURSOR_FULL: self = .cursorFull
        case MDB_PAGE_FULL: self = .pageFull
        case MDB_MAP_RESIZED: self = .mapResized
        case MDB_INCOMPATIBLE: self = .incompatible
        case MDB_BAD_RSLOT: self = .badReaderSlot
        case MDB_BAD_TXN: self = .badTransaction
        case MDB_BAD_VALSIZE: self = .badValueSize
        case MDB_BAD_DBI: self = .badDatabaseHandle
        default: self = .system(errno: code)
        }
    }

    /// The `MDB_*` code or `errno` value behind this error.
    public var code: Int32 {
        switch self {
        case .keyExists: MDB_KEYEXIST
        case .notFound: MDB_NOTFOUND
        case .pageNotFound: MDB_PAGE_NOTFOUND
        case .corrupted: MDB_CORRUPTED
        case .panic: MDB_PANIC
        case .versionMismatch: MDB_VERSION_MISMATCH
        case .invalidFile: MDB_INVALID
        case .mapFull: MDB_MAP_FULL
        case .databasesFull: MDB_DBS_FULL
        case .readersFull: MDB_READERS_FULL
        case .threadLocalStorageFull: MDB_TLS_FULL
        case .transactionFull: MDB_TXN_FULL
        case .cursorFull: MDB_CURSOR_FULL
        case .pageFull: MDB_PAGE_FULL
        case .mapResized: MDB_MAP_RESIZED
        case .incompatible: MDB_INCOMPATIBLE
        case .badReaderSlot: MDB_BAD_RSLOT
        case .badTransaction: MDB_BAD_TXN
        case .badValueSize: MDB_BAD_VALSIZE
        case .badDatabaseHandle: MDB_BAD_DBI
        case .system(let errno): errno
        case .truncated, .damagedMetaPage: MDB_CORRUPTED
        case .alreadyOpen: EBUSY
        case .readOnly: EACCES
        }
    }

    /// LMDB's own message for the code (`mdb_strerror`), which covers `errno` values too.
    public var description: String {
        if case .truncated(let expected, let actual) = self {
            return "the data file is \(actual) bytes long, but its pages in use need \(expected) bytes"
        }
        if case .damagedMetaPage(let reason) = self { return "a meta page of the data file is damaged: \(reason)" }
        if case .alreadyOpen = self { return "this process has the environment open already" }
        if case .readOnly = self { return "the environment is open read-only" }
        return String(cString: mdb_strerror(code))
    }
}

/// Runs an `mdb_*` call and throws its nonzero return code as an `LMDBError`.
@inline(__always)
func check(_ code: Int32) throws(LMDBError) {
    if code != 0 { throw LMDBError(code: code) }
}
