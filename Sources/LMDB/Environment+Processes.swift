import CLMDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension Environment {
    /// The id of a process that has the environment in the folder at `path` open, or `nil` when none has.
    ///
    /// Every process that opens an environment holds a shared lock on the first byte of its `lock.mdb` until it closes
    /// it (LMDB takes it to tell whether it is the first user of the lock file). `F_GETLK` reports a lock another
    /// process holds there.
    ///
    /// - Throws: `alreadyOpen` when this process has the environment open: it cannot see its own lock, and closing the
    ///   descriptor this opens would drop that lock.
    public static func openingProcess(path: String) throws(LMDBError) -> Int32? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let folder = FolderIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        guard !openFolders.withLock({ $0.contains(folder) }) else { throw .alreadyOpen }
        let descriptor = open(path + "/lock.mdb", O_RDWR)
        guard descriptor >= 0 else { return nil }
        defer { closeDescriptor(descriptor) }
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = 0
        probe.l_len = 1
        guard fcntl(descriptor, F_GETLK, &probe) == 0 else { throw .system(errno: errno) }
        return probe.l_type == Int16(F_UNLCK) ? nil : probe.l_pid
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    #if canImport(Glibc)
        _ = Glibc.close(descriptor)
    #else
        _ = Darwin.close(descriptor)
    #endif
}

/// One slot of LMDB's reader table: a read transaction of some process, running or reset for reuse.
public struct ReaderSlot: Sendable, Hashable {
    /// The process that holds the slot.
    public let process: Int32
    /// The version its transaction reads; `nil` while the transaction is reset, kept for reuse.
    public let transactionID: UInt64?
    /// Whether the process still runs. A slot of a process that ended is stale: it holds no pages back once a writer
    /// clears it, which every writable opening does.
    public let processIsAlive: Bool
}

extension Environment {
    /// The reader table's slots in use (`mdb_reader_list`), this process's own included; empty without a lock file.
    public var readers: [ReaderSlot] {
        get throws(LMDBError) {
            guard usesLockFile else { return [] }
            final class Lines { var text = "" }
            let lines = Lines()
            let code = withExtendedLifetime(lines) {
                mdb_reader_list(
                    handle,
                    { message, context in
                        guard let message, let context else { return 0 }
                        Unmanaged<Lines>.fromOpaque(context).takeUnretainedValue().text += String(cString: message)
                        return 0
                    }, Unmanaged.passUnretained(lines).toOpaque())
            }
            guard code >= 0 else { throw LMDBError(code: code) }
            // Each line is "pid thread txnid", with "-" for a reset transaction, after a header line.
            return lines.text.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count == 3, let process = Int32(fields[0]) else { return nil }
                return ReaderSlot(
                    process: process, transactionID: UInt64(fields[2]),
                    processIsAlive: kill(process, 0) == 0 || errno != ESRCH)
            }
        }
    }
}
