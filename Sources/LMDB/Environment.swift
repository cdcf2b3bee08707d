import CLMDB
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How much of a commit reaches the disk before `write` returns.
public enum SyncMode: Sendable, Hashable {
    /// Data and metadata are flushed with `fsync` on every commit: a committed transaction survives a crash
    /// or power loss.
    case full
    /// `MDB_NOMETASYNC`: the metadata page is flushed with the next commit. A crash may lose the last
    /// transaction, but the file stays sound.
    case noMetaSync
    /// `MDB_NOSYNC`: nothing is flushed; the operating system writes pages when it likes. A crash of the
    /// process loses nothing, but a power loss may lose recent transactions, and on some filesystems can
    /// corrupt the file.
    case noSync
}

/// How an environment is opened.
public struct EnvironmentOptions: Sendable, Hashable {
    /// The initial map size in bytes. The map grows by itself when a write needs more room.
    public var mapSize: Int = 64 << 20
    /// How many named databases the environment may hold.
    public var maxDatabases: Int = 256
    /// How many read transactions may be open at once across every process using the file.
    public var maxReaders: Int = 512
    /// How far each commit is flushed to disk.
    public var sync: SyncMode = .full
    /// How many finished read transactions are kept (reset) for reuse instead of being freed.
    public var readTransactionPoolSize: Int = 16
    /// Permissions of newly created files.
    public var fileMode: UInt32 = 0o644
    /// `MDB_RDONLY`: the files are opened for reading only and `write` throws `LMDBError.readOnly`. The data file
    /// must exist. When the lock file cannot be opened for writing or created (a folder or file that belongs to
    /// another user), the environment is opened without it (`MDB_NOLOCK`): see `Environment.usesLockFile`. Stale
    /// reader slots are left as they are, for `readers` to report; a writer clears them.
    public var readOnly = false

    public init() {}
}

/// Numbers about an environment (`mdb_env_info`).
public struct EnvironmentInfo: Sendable, Hashable {
    /// The current size of the map in bytes.
    public var mapSize: Int
    /// The number of the last page in use; `(lastPage + 1) * pageSize` bytes of the map are used.
    public var lastPage: Int
    /// The ID of the last committed transaction: the newest version.
    public var lastTransactionID: UInt64
    /// The reader slot table's size and how many slots are in use.
    public var maxReaders: Int
    public var readersInUse: Int
}

/// One LMDB environment: a memory-mapped file holding named databases.
///
/// Every transaction runs through `read` or `write`. `read` reuses reset read transactions (`mdb_txn_reset` /
/// `mdb_txn_renew`), so reader slots are never used up by a loop of short reads. `write` grows the map and runs
/// its closure again when the file is full, and adopts a size grown by another process. `MDB_NOTLS` is always on:
/// reader slots belong to transactions, not threads, so any thread or task may read.
///
/// Before any page is read, the data file must be as long as its newest meta page says: LMDB maps the file and
/// would die of `SIGBUS` on a page past its end, so a truncated file is `LMDBError.truncated` instead.
///
/// Open an environment once per file per process: LMDB's locks break when one process opens a file twice.
public final class Environment: @unchecked Sendable {
    let handle: OpaquePointer
    /// The directory holding `data.mdb` and `lock.mdb`.
    public let path: String
    /// The options the environment was opened with.
    public let options: EnvironmentOptions
    /// The size of a database page in bytes.
    public let pageSize: Int
    /// Whether the environment takes part in LMDB's locking through `lock.mdb`. Only a read-only environment whose
    /// lock file could not be opened for writing goes without: its reads then cannot tell a writer in another
    /// process which pages they still use, so the file must not be written while it is open (a file in an app
    /// bundle, on a read-only volume, or that belongs to another user and is left alone meanwhile).
    public let usesLockFile: Bool

    /// Held shared by every transaction and every call that reads the map; exclusively while the map is resized.
    private let mapLock = MapLock()
    /// Whether this thread is inside `write`: LMDB's writer lock is not reentrant, so a nested write would hang.
    private let writeHolds = ThreadCounter()
    /// Reset read transactions waiting to be renewed.
    private let idleReaders = Lock<[IdleReader]>([])
    /// How many bytes of the map the last check found safe to read: written in the file, or free pages past its end.
    private let checkedFileLength = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    /// The folder's identity in `openFolders`.
    private let folder: FolderIdentity

    /// The folders this process has an environment open in: LMDB's locks break when one process opens a file
    /// twice, so a second opening is refused instead.
    static let openFolders = Lock<Set<FolderIdentity>>([])

    struct FolderIdentity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// Opens (creating when missing) the environment in the directory at `path`, which must exist.
    ///
    /// Stale reader slots of processes that died are cleared (`mdb_reader_check`).
    ///
    /// - Throws: `LMDBError.truncated` when the data file is shorter than its pages in use;
    ///   `alreadyOpen` when this process has an environment open in the folder.
    public init(path: String, options: EnvironmentOptions = .init()) throws(LMDBError) {
        var status = stat()
        guard stat(path, &status) == 0 else { throw .system(errno: errno) }
        let folder = FolderIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        guard Self.openFolders.withLock({ $0.insert(folder).inserted }) else { throw .alreadyOpen }
        self.folder = folder
        do {
            try Self.checkMetaPages(of: path + "/data.mdb")
            (handle, pageSize, usesLockFile) = try Self.open(path: path, options: options)
        } catch {
            _ = Self.openFolders.withLock { $0.remove(folder) }
            throw error
        }
        self.path = path
        self.options = options
        do {
            try checkFileLength()
        } catch {
            close()
            throw error
        }
    }

    /// Throws `damagedMetaPage` for a data file whose meta pages LMDB would accept and then could not survive.
    ///
    /// LMDB checks a meta page's flags, magic number and version (`mdb_env_read_header`), then trusts its page size
    /// and last page: it divides by the one and multiplies the two, and a page size of 0 stops the process with a
    /// division by zero. A meta page LMDB would refuse itself is left to it, so that its error names the file as
    /// foreign; a missing or empty file is a new store.
    static func checkMetaPages(of dataFile: String) throws(LMDBError) {
        let fd = openForReading(dataFile)
        guard fd >= 0 else { return }
        defer { closeDescriptor(fd) }
        var offset = 0
        for _ in 0..<2 {
            var meta = [UInt8](repeating: 0, count: MetaPage.size)
            let got = meta.withUnsafeMutableBytes { pread(fd, $0.baseAddress, MetaPage.size, off_t(offset)) }
            guard got == MetaPage.size, let page = MetaPage(meta) else { return }
            guard page.pageSize >= MetaPage.smallestPageSize, page.pageSize <= MetaPage.largestPageSize,
                page.pageSize & (page.pageSize - 1) == 0
            else { throw .damagedMetaPage(reason: "its page size is \(page.pageSize), not a power of two from 512 on") }
            guard usedBytes(lastPage: page.lastPage, pageSize: page.pageSize) != nil else {
                throw .damagedMetaPage(reason: "its last page in use, \(page.lastPage), is past any file")
            }
            // LMDB reads the second meta page one page size (the first's) into the file.
            if offset == 0 { offset = page.pageSize }
        }
    }

    /// `(lastPage + 1) * pageSize`, the bytes of the pages in use; `nil` when a damaged meta page names a last page
    /// no file could reach (the product does not fit in an `Int`).
    static func usedBytes(lastPage: Int, pageSize: Int) -> Int? {
        guard lastPage >= 0, lastPage < Int.max else { return nil }
        let (bytes, overflow) = (lastPage + 1).multipliedReportingOverflow(by: pageSize)
        return overflow ? nil : bytes
    }

    private static func open(
        path: String, options: EnvironmentOptions
    ) throws(LMDBError) -> (OpaquePointer, pageSize: Int, usesLockFile: Bool) {
        var flags = UInt32(MDB_NOTLS)
        switch options.sync {
        case .full: break
        case .noMetaSync: flags |= UInt32(MDB_NOMETASYNC)
        case .noSync: flags |= UInt32(MDB_NOSYNC)
        }
        guard options.readOnly else { return try open(path: path, options: options, flags: flags, locking: true) }
        flags |= UInt32(MDB_RDONLY)
        do {
            return try open(path: path, options: options, flags: flags, locking: true)
        } catch LMDBError.system(errno: EACCES) {
            // LMDB opens the lock file for writing even to read (on a read-only filesystem it goes without by
            // itself); a lock file or folder this user may not write leaves only the lock-free way.
            return try open(path: path, options: options, flags: flags | UInt32(MDB_NOLOCK), locking: false)
        }
    }

    private static func open(
        path: String, options: EnvironmentOptions, flags: UInt32, locking: Bool
    ) throws(LMDBError) -> (OpaquePointer, pageSize: Int, usesLockFile: Bool) {
        var env: OpaquePointer?
        try check(mdb_env_create(&env))
        guard let env else { throw .system(errno: ENOMEM) }
        var stat = MDB_stat()
        do {
            try check(mdb_env_set_mapsize(env, options.mapSize))
            try check(mdb_env_set_maxdbs(env, MDB_dbi(options.maxDatabases)))
            try check(mdb_env_set_maxreaders(env, UInt32(options.maxReaders)))
            try check(mdb_env_open(env, path, flags, mdb_mode_t(options.fileMode)))
            try check(mdb_env_stat(env, &stat))
            if !options.readOnly {
                var dead: Int32 = 0
                try check(mdb_reader_check(env, &dead))
            }
        } catch {
            mdb_env_close(env)
            throw error
        }
        return (env, Int(stat.ms_psize), locking)
    }

    deinit { close() }

    /// Closes the environment: its handle, and every buffer and database handle from it, are invalid afterwards.
    /// Call it only when no transaction is running; closing twice does nothing, and a later `read` or `write` throws
    /// `system(errno: EBADF)`.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for idle in idleReaders.withLock({ $0 }) { mdb_txn_abort(idle.txn) }
        mdb_env_close(handle)
        _ = Self.openFolders.withLock { $0.remove(folder) }
    }

    /// Throws `EBADF` after `close()`: LMDB would use a freed handle.
    private func checkOpen() throws(LMDBError) {
        guard !closed.load(ordering: .acquiring) else { throw .system(errno: EBADF) }
    }

    // MARK: Transactions

    /// Runs `body` in a read transaction on the newest committed version.
    ///
    /// The transaction and every buffer it returned end when `body` returns. A read waits only while this process
    /// grows the map, which waits for the reads already running to end: as long as the longest of them.
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        while true {
            mapLock.lockShared()
            let txn: OpaquePointer
            do {
                txn = try beginRead()
            } catch .mapResized {
                mapLock.unlockShared()
                try adoptGrownMap()
                continue
            } catch {
                mapLock.unlockShared()
                throw error
            }
            defer {
                finishRead(txn)
                mapLock.unlockShared()
            }
            try checkFileLength()
            return try body(ReadTransaction(handle: txn, environment: self))
        }
    }

    /// Runs `body` in a read transaction whose opened databases stay open after it: the way to open databases when
    /// the environment is read-only. (A database opened in a read transaction that is reset or aborted, as `read`
    /// does, closes with it; this one is committed, which keeps them.)
    public func readOpeningDatabases<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        while true {
            mapLock.lockShared()
            var raw: OpaquePointer?
            let begin = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &raw)
            guard begin == 0, let raw else {
                mapLock.unlockShared()
                guard begin == MDB_MAP_RESIZED else { throw LMDBError(code: begin) }
                try adoptGrownMap()
                continue
            }
            defer { mapLock.unlockShared() }
            let result: R
            do {
                try checkFileLength()
                result = try body(ReadTransaction(handle: raw, environment: self))
            } catch {
                mdb_txn_abort(raw)
                throw error
            }
            try check(mdb_txn_commit(raw))
            return result
        }
    }

    /// Runs `body` in the write transaction and commits it; a throw from `body` aborts and writes nothing.
    ///
    /// When the map is full, the transaction is aborted, the map grown and `body` run again, so `body` must not
    /// have effects outside the transaction that cannot be repeated. That holds even when `body` caught the
    /// map-full error and went on: the transaction is dead either way. Calls from several threads or processes
    /// wait for each other. A `write` inside a `write` on one thread throws `system(errno: EDEADLK)` instead of
    /// waiting for itself forever.
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        try checkOpen()
        guard !options.readOnly else { throw LMDBError.readOnly }
        guard writeHolds.value == 0 else { throw LMDBError.system(errno: EDEADLK) }
        writeHolds.value = 1
        defer { writeHolds.value = 0 }
        if !mapLock.isHeldShared { try growIfNearlyFull() }
        while true {
            mapLock.lockShared()
            var raw: OpaquePointer?
            let begin = mdb_txn_begin(handle, nil, 0, &raw)
            guard begin == 0, let raw else {
                mapLock.unlockShared()
                if begin == MDB_MAP_RESIZED {
                    try adoptGrownMap()
                    continue
                }
                throw LMDBError(code: begin)
            }
            let txn = WriteTransaction(handle: raw, environment: self)
            let sizeAtStart = info.mapSize
            let result: R
            do {
                try checkFileLength()
                result = try body(txn)
            } catch {
                mdb_txn_abort(raw)
                mapLock.unlockShared()
                guard txn.ranOutOfSpace else { throw error }
                try grow(beyond: sizeAtStart)
                continue
            }
            if txn.ranOutOfSpace {
                // `body` swallowed the map-full error; the transaction cannot commit, so grow and run it again.
                mdb_txn_abort(raw)
                mapLock.unlockShared()
                try grow(beyond: sizeAtStart)
                continue
            }
            // A commit frees the transaction whether it succeeds or fails.
            let commit = mdb_txn_commit(raw)
            mapLock.unlockShared()
            if commit == 0 { return result }
            guard commit == MDB_MAP_FULL else { throw LMDBError(code: commit) }
            try grow(beyond: sizeAtStart)
        }
    }

    private func beginRead() throws(LMDBError) -> OpaquePointer {
        if let idle = idleReaders.withLock({ $0.popLast() })?.txn {
            let code = mdb_txn_renew(idle)
            if code == 0 { return idle }
            mdb_txn_abort(idle)
            throw LMDBError(code: code)
        }
        var txn: OpaquePointer?
        var code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
        if code == MDB_READERS_FULL {
            // Slots of crashed processes are freed by a reader check; then one more try.
            var dead: Int32 = 0
            if mdb_reader_check(handle, &dead) == 0, dead > 0 {
                code = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
            }
        }
        try check(code)
        guard let txn else { throw .badTransaction }
        return txn
    }

    private func finishRead(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        let kept = idleReaders.withLock { idle in
            guard idle.count < options.readTransactionPoolSize else { return false }
            idle.append(IdleReader(txn: txn))
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    /// The data file's length in bytes.
    public var dataFileLength: Int {
        get throws(LMDBError) {
            var fd: mdb_filehandle_t = 0
            try check(mdb_env_get_fd(handle, &fd))
            var status = stat()
            guard fstat(fd, &status) == 0 else { throw .system(errno: errno) }
            return Int(status.st_size)
        }
    }

    /// Throws `truncated` when the data file is shorter than the pages the newest version uses: the file was cut
    /// (a full disk, a bad copy), here or by another process, and reading those pages would raise `SIGBUS`.
    /// Costs a comparison unless the pages in use have grown since the last check.
    ///
    /// A file may end before the last page in use without damage: pages a write took and freed again before it
    /// committed are listed as free but never written. When the file is short, the main database's and the free
    /// list's trees are walked (with `pread`), and the file is cut only if a page past its end is not free. A walk
    /// that meets a commit of another process halfway may see a torn meta page, so a failed one is tried again.
    private func checkFileLength() throws(LMDBError) {
        guard let needed = Self.usedBytes(lastPage: info.lastPage, pageSize: pageSize) else {
            throw .damagedMetaPage(reason: "its last page in use, \(info.lastPage), is past any file")
        }
        if needed <= checkedFileLength.load(ordering: .relaxed) { return }
        var length = try dataFileLength
        for _ in 0..<3 {
            if length >= needed {
                checkedFileLength.store(length, ordering: .relaxed)
                return
            }
            if let lastPage = try lastPageIfUnwrittenPagesAreFree(fileLength: length),
                let used = Self.usedBytes(lastPage: lastPage, pageSize: pageSize), used >= needed
            {
                // Every page up to `lastPage` is written or free: reading the trees reaches none past the end.
                checkedFileLength.store(used, ordering: .relaxed)
                return
            }
            length = try dataFileLength
        }
        throw .truncated(expectedBytes: needed, actualBytes: length)
    }

    // MARK: Map size

    /// Numbers about the environment: map size, pages used, newest version, readers.
    public var info: EnvironmentInfo {
        var raw = MDB_envinfo()
        // The meta pages live in the map, which a growth replaces: read them under the lock.
        mapLock.withShared { _ = mdb_env_info(handle, &raw) }
        return EnvironmentInfo(
            mapSize: raw.me_mapsize, lastPage: raw.me_last_pgno,
            lastTransactionID: UInt64(truncatingIfNeeded: raw.me_last_txnid),
            maxReaders: Int(raw.me_maxreaders), readersInUse: Int(raw.me_numreaders))
    }

    /// The longest key (and DUPSORT value) LMDB accepts, in bytes: 511 in a default build.
    public var maxKeySize: Int { Int(mdb_env_get_maxkeysize(handle)) }

    /// Grows the map to at least `size` bytes. Waits for this process's transactions to finish.
    public func setMapSize(_ size: Int) throws(LMDBError) {
        try withMapExclusive { () throws(LMDBError) in
            var raw = MDB_envinfo()
            mdb_env_info(handle, &raw)
            if raw.me_mapsize < size { try check(mdb_env_set_mapsize(handle, size)) }
        }
    }

    /// Grows the map ahead of a write when more than three quarters of it are used, which saves most writes
    /// the abort-and-retry of a full map.
    private func growIfNearlyFull() throws(LMDBError) {
        let now = info
        guard let used = Self.usedBytes(lastPage: now.lastPage, pageSize: pageSize) else {
            throw .damagedMetaPage(reason: "its last page in use, \(now.lastPage), is past any file")
        }
        if used > now.mapSize / 4 * 3 { try grow(beyond: now.mapSize) }
    }

    /// Doubles the map (by 1 GiB at most a step), unless another thread already grew it past `size`.
    private func grow(beyond size: Int) throws(LMDBError) {
        let step = min(size, 1 << 30)
        try setMapSize(size + max(step, 1 << 20))
    }

    /// Another process grew the file: take its size (`mdb_env_set_mapsize(0)`).
    private func adoptGrownMap() throws(LMDBError) {
        try withMapExclusive { () throws(LMDBError) in try check(mdb_env_set_mapsize(handle, 0)) }
    }

    private func withMapExclusive(_ body: () throws(LMDBError) -> Void) throws(LMDBError) {
        // Waiting for the lock while this thread holds it shared (a write inside a read) would never end.
        guard !mapLock.isHeldShared else { throw .mapFull }
        mapLock.lockExclusive()
        defer { mapLock.unlockExclusive() }
        try body()
    }

    // MARK: Maintenance

    /// Clears reader slots left by processes that died (`mdb_reader_check`); returns how many were cleared.
    @discardableResult
    public func checkReaders() throws(LMDBError) -> Int {
        var dead: Int32 = 0
        try check(mdb_reader_check(handle, &dead))
        return Int(dead)
    }

    /// Writes a consistent copy of the environment into the existing, empty directory `path`;
    /// with `compacting`, free pages are left out and the copy is as small as its data.
    public func copy(to path: String, compacting: Bool) throws(LMDBError) {
        // The copy reads the map page by page: a growth must wait until it is done.
        try mapLock.withShared { () throws(LMDBError) in
            try checkFileLength()
            try check(mdb_env_copy2(handle, path, compacting ? UInt32(MDB_CP_COMPACT) : 0))
        }
    }

    /// Flushes buffers to disk; needed only with a relaxed `SyncMode`.
    public func sync() throws(LMDBError) {
        try mapLock.withShared { () throws(LMDBError) in try check(mdb_env_sync(handle, 1)) }
    }
}

/// A reset read transaction in the pool. The pool hands each one to a single thread at a time, which is all
/// `MDB_NOTLS` asks.
private struct IdleReader: @unchecked Sendable {
    let txn: OpaquePointer
}

/// `open(2)` for reading and `close(2)`, out of the reach of `Environment`'s own `open` and `close` methods.
private func openForReading(_ path: String) -> Int32 { open(path, O_RDONLY) }
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
