import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Calls a handler soon after any process writes to a file, without polling: inotify on Linux.
///
/// LMDB writes a commit's pages and its meta page with `pwrite` (Cellar does not map the file writable), so each
/// commit of any process on the store shows as a modification of `data.mdb`. Events that arrive together are read
/// together and handled once.
final class FileWriteWatch: Sendable {
    // A dispatch source is safe to use from any thread; it is only not declared `Sendable`.
    nonisolated(unsafe) private let source: any DispatchSourceRead

    private init(source: any DispatchSourceRead) { self.source = source }

    /// Starts watching `path`, or returns `nil` where the system cannot (not Linux, no inotify, a file system it
    /// does not cover): the caller then polls.
    static func start(path: String, on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void)
        -> FileWriteWatch?
    {
        #if canImport(Glibc)
            let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard descriptor >= 0 else { return nil }
            guard inotify_add_watch(descriptor, path, UInt32(IN_MODIFY)) >= 0 else {
                close(descriptor)
                return nil
            }
            let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            source.setEventHandler {
                // Drain the queued events; what they say is always "written", so only their arrival matters.
                var buffer = [UInt8](repeating: 0, count: 4_096)
                while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
                handler()
            }
            source.setCancelHandler { close(descriptor) }
            source.resume()
            return FileWriteWatch(source: source)
        #else
            return nil
        #endif
    }

    deinit { source.cancel() }
}
