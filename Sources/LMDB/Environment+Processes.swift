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
