import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// File operations whose failures must name the real cause: Foundation reports most of them as one generic error.
enum FileSystem {
    /// What is at a path, as `stat` sees it.
    enum Entry: Equatable {
        case folder
        case file
        /// Nothing that can be reached: `errno` says why (`ENOENT`, `EACCES`…).
        case unreachable(errno: Int32)
    }

    /// What is at `path`, following symbolic links.
    static func entry(at path: String) -> Entry {
        var status = stat()
        guard stat(path, &status) == 0 else { return .unreachable(errno: errno) }
        return status.st_mode & S_IFMT == S_IFDIR ? .folder : .file
    }

    /// Why a store cannot be opened at `path`, a file; `creates` when opening would create the store's folder.
    static func fileIsNotAFolder(_ path: String, creates: Bool) -> String {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let isStoreFile = path.hasSuffix("/data.mdb") || path.hasSuffix("/lock.mdb")
        let hint =
            isStoreFile
            ? "pass the folder that holds it, \(folder)"
            : "pass the URL of the folder that holds data.mdb and lock.mdb"
                + (creates ? ", or of a folder to create" : "")
        return "it is a file, and a store is a folder: \(hint)"
    }

    /// Creates the folder at `directory` and any missing parents, as `mkdir -p` does.
    ///
    /// - Throws: `StoreError.incompatibleFile` when the path itself is a file, `StoreError.io` with `ENOTDIR` when a
    ///   part of it is a file, or the `errno` of the `mkdir` that failed.
    static func createDirectories(at directory: URL) throws(StoreError) {
        // Nearly always the folder is there already: one `stat` says so.
        if entry(at: directory.path) == .folder { return }
        let target = directory.standardizedFileURL.path
        var prefix = target.hasPrefix("/") ? "" : "."
        let parts = target.split(separator: "/", omittingEmptySubsequences: true)
        for (position, part) in parts.enumerated() {
            prefix += "/" + part
            let isLast = position == parts.count - 1
            var status = stat()
            if stat(prefix, &status) == 0 {
                if status.st_mode & S_IFMT == S_IFDIR { continue }
                throw isLast
                    ? .incompatibleFile(path: prefix, reason: fileIsNotAFolder(prefix, creates: true))
                    : .io(
                        errno: ENOTDIR, operation: "create the store's folder \(target) under", path: prefix)
            }
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                throw .io(errno: errno, operation: "create the folder", path: prefix)
            }
        }
    }
}
