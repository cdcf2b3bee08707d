import CLMDB

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a walk of an environment's pages found.
public struct PageCheckReport: Sendable, Hashable {
    /// The transaction whose pages were walked: the newest committed version.
    public var transactionID: UInt64
    /// Pages reachable from that version's trees (branch, leaf and overflow pages, the free list's own included).
    public var pagesInUse: Int
    /// Pages the free list holds for reuse.
    public var freePages: Int
    /// The number of the last page in use; with the two meta pages, every page up to it is in use or free.
    public var lastPage: Int
    /// Free pages past the end of the data file. A write that takes pages and frees them again before it commits
    /// (LMDB calls them loose) lists them as free without writing them, so the file may end before `lastPage`; a
    /// page there that is not free means the file was cut short.
    public var unwrittenFreePages: Int
    /// The named databases walked.
    public var databases: Int
    /// What is wrong, in words, at most as many as the walk was asked for; empty when the pages are sound.
    public var problems: [String]
    /// Whether the walk stopped after the number of problems it was asked for.
    public var stoppedEarly: Bool

    /// Whether the walk found nothing wrong.
    public var isSound: Bool { problems.isEmpty }

    /// The first three problems in one line, and how many more there are: short enough for an error message.
    public var summary: String {
        let more = problems.count - 3
        return problems.prefix(3).joined(separator: "; ")
            + (more > 0 ? "; and \(more)\(stoppedEarly ? " or more" : "") other problems" : "")
    }
}

extension Environment {
    /// Walks every page of the newest version in Swift, bounds-checked, before LMDB trusts any of them.
    ///
    /// LMDB keeps no checksums and believes its pages: a damaged page can crash a reader inside LMDB. This walk reads
    /// the data file with `pread` (never through the map), follows every B-tree from the meta page, and checks what
    /// LMDB relies on: page numbers within the file, page headers and node bounds, the tree depth each page sits at,
    /// key order, overflow runs, duplicate sub-pages and sub-trees, entry and page counts, and that every page is in
    /// use or free exactly once. It holds the writer lock (no commit can change the pages meanwhile; readers go on),
    /// or in a read-only environment a read transaction, and reads the whole file once.
    ///
    /// - Parameters:
    ///   - databases: walk only the main database (which names the others), the free list's tree and these named
    ///     databases: the few pages an opening reads and its first write. `nil` walks everything and also checks
    ///     that every page is in use or free exactly once.
    ///   - problemLimit: stop after this many problems.
    public func checkPages(databases: Set<String>? = nil, problemLimit: Int = 20) throws(LMDBError) -> PageCheckReport {
        func walk() throws -> PageCheckReport {
            try walkPages(fileLength: try dataFileLength, databases: databases, problemLimit: problemLimit)
        }
        do {
            // A read-only environment cannot take the writer lock. A read transaction that began first keeps every
            // page of the newest version from reuse as well: pages a later commit frees wait for the oldest reader.
            return options.readOnly ? try read { _ in try walk() } : try write { _ in try walk() }
        } catch let error as LMDBError {
            throw error
        } catch {
            throw .system(errno: EIO)
        }
    }

    /// The last page of the newest version when every page of it past the end of a data file `fileLength` bytes
    /// long is free (see `PageCheckReport.unwrittenFreePages`); `nil` when one is not, or the walk found damage.
    ///
    /// Walks the main database's and the free list's trees only. A read transaction is held meanwhile where one can
    /// begin, so the pages walked are not reused under the walk.
    func lastPageIfUnwrittenPagesAreFree(fileLength: Int) throws(LMDBError) -> Int? {
        var txn: OpaquePointer?
        if mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn) != 0 { txn = nil }
        defer { if let txn { mdb_txn_abort(txn) } }
        let report = try walkPages(fileLength: fileLength, databases: [], problemLimit: 1)
        return report.isSound ? report.lastPage : nil
    }

    private func walkPages(fileLength: Int, databases: Set<String>?, problemLimit: Int) throws(LMDBError)
        -> PageCheckReport
    {
        var fd: mdb_filehandle_t = 0
        try check(mdb_env_get_fd(handle, &fd))
        var walker = PageWalker(
            fd: fd, pageSize: pageSize, fileLength: fileLength, problemLimit: problemLimit, onlyDatabases: databases)
        return walker.run()
    }
}

/// The on-disk layout of LMDB 0.9 on a 64-bit machine (`mdb.c`).
private enum Layout {
    static let pageHeader = 16
    static let nodeHeader = 8
    static let databaseRecord = 48
    static let magic: UInt32 = 0xBEEF_C0DE
    static let dataVersion: UInt32 = 1
    static let invalidPage = UInt64.max
    static let maximumDepth = 32

    // Page flags.
    static let branch: UInt16 = 0x01
    static let leaf: UInt16 = 0x02
    static let overflow: UInt16 = 0x04
    static let meta: UInt16 = 0x08
    static let leaf2: UInt16 = 0x20
    static let subPage: UInt16 = 0x40

    // Node flags.
    static let bigData: UInt16 = 0x01
    static let subData: UInt16 = 0x02
    static let duplicateData: UInt16 = 0x04

    // Database flags whose key order is not plain byte order.
    static let reverseKey: UInt16 = 0x02
    static let duplicateSort: UInt16 = 0x04
    static let integerKey: UInt16 = 0x08
    static let integerDuplicates: UInt16 = 0x20
    static let reverseDuplicates: UInt16 = 0x40
}

/// What opening checks of a meta page before LMDB reads it (`Environment.checkMetaPages`).
struct MetaPage {
    /// The bytes LMDB reads of a meta page before it trusts it (`sizeof(MDB_metabuf)`): the page header and the meta
    /// fields, through the transaction's number. A shorter file LMDB refuses itself.
    static let size = 152
    /// The page sizes LMDB writes: powers of two, from the smallest a system pages memory in to `MAX_PAGESIZE`.
    static let smallestPageSize = 512
    static let largestPageSize = 1 << 15

    /// `mm_psize`: the page size, kept in the free list's tree record.
    let pageSize: Int
    /// `mm_last_pg`, negative when it does not fit in an `Int`.
    let lastPage: Int

    /// `nil` when `bytes` lack a meta page's flag, LMDB's magic number or its data version.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.size else { return nil }
        let fields = bytes.withUnsafeBytes { raw in
            (
                flags: raw.loadUnaligned(fromByteOffset: 10, as: UInt16.self),
                magic: raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self),
                version: raw.loadUnaligned(fromByteOffset: 20, as: UInt32.self),
                pageSize: raw.loadUnaligned(fromByteOffset: 40, as: UInt32.self),
                lastPage: raw.loadUnaligned(fromByteOffset: 136, as: UInt64.self)
            )
        }
        guard fields.flags & Layout.meta != 0, fields.magic == Layout.magic, fields.version == Layout.dataVersion
        else { return nil }
        pageSize = Int(fields.pageSize)
        lastPage = Int(truncatingIfNeeded: fields.lastPage)
    }
}

/// An `MDB_db` record: a tree's root, depth and counts.
private struct TreeRecord {
    /// The key size of `MDB_DUPFIXED` pages.
    var fixedKeySize: Int
    var flags: UInt16
    var depth: Int
    var branchPages: Int
    var leafPages: Int
    var overflowPages: Int
    var entries: Int
    var root: UInt64

    init(_ bytes: UnsafeRawBufferPointer) {
        fixedKeySize = Int(bytes.loadUnaligned(as: UInt32.self))
        flags = bytes.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        depth = Int(bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self))
        branchPages = Int(truncatingIfNeeded: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        leafPages = Int(truncatingIfNeeded: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        overflowPages = Int(truncatingIfNeeded: bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        entries = Int(truncatingIfNeeded: bytes.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
        root = bytes.loadUnaligned(fromByteOffset: 40, as: UInt64.self)
    }
}

/// What a tree walk counted, to compare with its record.
private struct TreeCount {
    var branchPages = 0
    var leafPages = 0
    var overflowPages = 0
    var entries = 0
}

/// What kind of tree a walk is in, which decides what its leaf values are.
private enum TreeKind {
    /// The main database: values name other databases (or are plain values in a foreign file).
    case main
    /// The free list: values are lists of free page numbers.
    case free
    /// A named database, plain or with sorted duplicates.
    case named(duplicates: Bool)
    /// The duplicates of one key: keys only.
    case duplicates
}

/// The problems a walk found.
private final class ProblemList {
    var items: [String] = []
}

private struct PageWalker {
    let fd: Int32
    let pageSize: Int
    let fileLength: Int
    let problemLimit: Int
    /// The named databases to walk; `nil` for all of them and the free list.
    let onlyDatabases: Set<String>?
    var lastPage = 0
    /// One bit per page: reached from a tree.
    var inUse: [UInt64] = []
    var pagesInUse = 0
    var freePages: [UInt64] = []
    var databases = 0
    /// Kept in a box, so that reporting needs no exclusive access to the walker whose state it describes.
    let found = ProblemList()
    var problems: [String] { found.items }
    /// One page buffer per tree level, so a page stays readable while its children are walked.
    var buffers: [[UInt8]] = []

    init(fd: Int32, pageSize: Int, fileLength: Int, problemLimit: Int, onlyDatabases: Set<String>?) {
        self.fd = fd
        self.pageSize = pageSize
        self.fileLength = fileLength
        self.problemLimit = max(1, problemLimit)
        self.onlyDatabases = onlyDatabases
    }

    var full: Bool { problems.count >= problemLimit }
    /// The pages the file holds whole.
    var pagesInFile: Int { fileLength / pageSize }

    /// Records a problem; its words are built only then, so a sound walk formats no text.
    func report(_ problem: @autoclosure () -> String) {
        if !full { found.items.append(problem()) }
    }

    mutating func run() -> PageCheckReport {
        var report = PageCheckReport(
            transactionID: 0, pagesInUse: 0, freePages: 0, lastPage: 0, unwrittenFreePages: 0, databases: 0,
            problems: [], stoppedEarly: false)
        guard let (txnID, free, main) = newestMeta() else {
            report.problems = problems
            return report
        }
        report.transactionID = txnID
        report.lastPage = lastPage
        // Only pages inside the file can be in use: a damaged meta page's count never sizes an allocation.
        inUse = [UInt64](repeating: 0, count: min(lastPage, pagesInFile - 1) / 64 + 1)
        walkTree(main, kind: .main, name: "the main database")
        // Every write reads the free list to reuse pages, so its tree is always checked.
        walkTree(free, kind: .free, name: "the free list")
        report.unwrittenFreePages = checkUnwrittenPages()
        if onlyDatabases == nil { checkFreePages() }
        report.pagesInUse = pagesInUse
        report.freePages = freePages.count
        report.databases = databases
        report.problems = problems
        report.stoppedEarly = full
        return report
    }

    // MARK: Reading

    /// Reads `count` bytes at `offset` of the file into `buffer`; `false` (and a problem) when the file ends first.
    mutating func read(
        into buffer: inout [UInt8], count: Int, at offset: Int, what: @autoclosure () -> String
    ) -> Bool {
        guard offset >= 0, count >= 0, offset <= fileLength - count else {
            report("\(what()) lies past the end of the file (\(fileLength) bytes)")
            return false
        }
        if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
        var done = 0
        while done < count {
            let got = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pread(fd, base + done, count - done, off_t(offset + done))
            }
            if got <= 0 {
                report("\(what()) could not be read (errno \(got < 0 ? errno : 0))")
                return false
            }
            done += got
        }
        return true
    }

    /// The newest of the two meta pages, checked: its transaction, free list tree and main tree.
    mutating func newestMeta() -> (UInt64, TreeRecord, TreeRecord)? {
        var best: (UInt64, TreeRecord, TreeRecord, Int)?
        var buffer: [UInt8] = []
        for page in 0..<2 {
            guard read(into: &buffer, count: 160, at: page * pageSize, what: "meta page \(page)") else { return nil }
            let meta = buffer.withUnsafeBytes { raw -> (UInt16, UInt32, UInt32, TreeRecord, TreeRecord, Int, UInt64) in
                (
                    raw.loadUnaligned(fromByteOffset: 10, as: UInt16.self),
                    raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self),
                    raw.loadUnaligned(fromByteOffset: 20, as: UInt32.self),
                    TreeRecord(UnsafeRawBufferPointer(rebasing: raw[40..<88])),
                    TreeRecord(UnsafeRawBufferPointer(rebasing: raw[88..<136])),
                    Int(truncatingIfNeeded: raw.loadUnaligned(fromByteOffset: 136, as: UInt64.self)),
                    raw.loadUnaligned(fromByteOffset: 144, as: UInt64.self)
                )
            }
            guard meta.0 & Layout.meta != 0, meta.1 == Layout.magic, meta.2 == Layout.dataVersion else {
                report("meta page \(page) is damaged (its flags, magic number or version are wrong)")
                continue
            }
            if let current = best, current.0 >= meta.6 { continue }
            best = (meta.6, meta.3, meta.4, meta.5)
        }
        guard let best else { return nil }
        guard best.3 >= 1 else {
            report("the meta page says \(best.3 + 1) pages are in use, fewer than the two meta pages")
            return nil
        }
        lastPage = best.3
        return (best.0, best.1, best.2)
    }

    // MARK: Trees

    /// Walks one tree and compares what it holds with its record; returns what it counted.
    @discardableResult
    mutating func walkTree(_ record: TreeRecord, kind: TreeKind, name: String) -> TreeCount {
        var count = TreeCount()
        if record.root == Layout.invalidPage {
            if record.entries != 0 || record.depth != 0 {
                report("\(name) has no root page but says it holds \(record.entries) entries")
            }
            return count
        }
        guard record.depth >= 1, record.depth <= Layout.maximumDepth else {
            report("\(name) says its tree is \(record.depth) levels deep")
            return count
        }
        walkPage(record.root, level: 1, record: record, kind: kind, name: name, count: &count)
        guard !full else { return count }
        if count.entries != record.entries {
            report("\(name) says it holds \(record.entries) entries; its pages hold \(count.entries)")
        }
        if (count.branchPages, count.leafPages, count.overflowPages)
            != (record.branchPages, record.leafPages, record.overflowPages)
        {
            report(
                "\(name) says it has \(record.branchPages) branch, \(record.leafPages) leaf and "
                    + "\(record.overflowPages) overflow pages; its tree has \(count.branchPages), "
                    + "\(count.leafPages) and \(count.overflowPages)")
        }
        return count
    }

    /// Marks `page` in use; `false` (and a problem) when it is not a page a tree may use, or is used twice.
    mutating func claim(_ page: UInt64, name: @autoclosure () -> String) -> Bool {
        guard page >= 2, page <= UInt64(lastPage) else {
            report("\(name()) points to page \(page), outside the pages in use (2...\(lastPage))")
            return false
        }
        guard page < UInt64(pagesInFile) else {
            report("\(name()) points to page \(page), past the end of the file (\(fileLength) bytes): it was cut short")
            return false
        }
        let number = Int(page)
        let bit = UInt64(1) << UInt64(number % 64)
        guard inUse[number / 64] & bit == 0 else {
            report("\(name()) reaches page \(page) a second time")
            return false
        }
        inUse[number / 64] |= bit
        pagesInUse += 1
        return true
    }

    mutating func walkPage(
        _ page: UInt64, level: Int, record: TreeRecord, kind: TreeKind, name: String, count: inout TreeCount
    ) {
        guard !full, claim(page, name: name) else { return }
        if buffers.count < level { buffers.append([]) }
        var buffer = buffers[level - 1]
        buffers[level - 1] = []
        defer { buffers[level - 1] = buffer }
        guard read(into: &buffer, count: pageSize, at: Int(page) * pageSize, what: "page \(page) of \(name)") else {
            return
        }
        // Every read below is checked against the page's bounds, so damage is a problem, never a crash.
        let pageSize = self.pageSize
        let header = buffer.withUnsafeBytes {
            (
                number: $0.loadUnaligned(as: UInt64.self), flags: $0.loadUnaligned(fromByteOffset: 10, as: UInt16.self),
                lower: Int($0.loadUnaligned(fromByteOffset: 12, as: UInt16.self)),
                upper: Int($0.loadUnaligned(fromByteOffset: 14, as: UInt16.self))
            )
        }
        func at() -> String { "page \(page) of \(name)" }
        guard header.number == page else {
            report("\(at()) calls itself page \(header.number)")
            return
        }
        let isBranch = header.flags & Layout.branch != 0
        let isLeaf = header.flags & Layout.leaf != 0
        guard isBranch != isLeaf, header.flags & (Layout.overflow | Layout.meta | Layout.subPage) == 0 else {
            report("\(at()) has page flags \(header.flags), not those of a branch or leaf page")
            return
        }
        guard isLeaf == (level == record.depth) else {
            report("\(at()) is a \(isLeaf ? "leaf" : "branch") at level \(level) of a tree \(record.depth) deep")
            return
        }
        guard header.lower >= Layout.pageHeader, header.lower <= header.upper, header.upper <= pageSize,
            (header.lower - Layout.pageHeader) % 2 == 0
        else {
            report("\(at()) has a damaged header (free space \(header.lower)..<\(header.upper))")
            return
        }
        let keys = (header.lower - Layout.pageHeader) / 2
        guard keys >= 1 else {
            report("\(at()) holds no entries")
            return
        }
        if isBranch { count.branchPages += 1 } else { count.leafPages += 1 }
        if isLeaf, header.flags & Layout.leaf2 != 0 {
            if fixedKeysFit(keys: keys, keySize: record.fixedKeySize, in: pageSize, at: at()) { count.entries += keys }
            return
        }
        let ordered = isOrdered(kind: kind, record: record)
        var previousKey: Range<Int>?
        for index in 0..<keys {
            guard !full else { return }
            let node = buffer.withUnsafeBytes {
                raw -> (start: Int, lo: UInt16, hi: UInt16, flags: UInt16, keySize: Int)? in
                let start = Int(raw.loadUnaligned(fromByteOffset: Layout.pageHeader + 2 * index, as: UInt16.self))
                guard start >= header.upper, start + Layout.nodeHeader <= pageSize else { return nil }
                return (
                    start, raw.loadUnaligned(fromByteOffset: start, as: UInt16.self),
                    raw.loadUnaligned(fromByteOffset: start + 2, as: UInt16.self),
                    raw.loadUnaligned(fromByteOffset: start + 4, as: UInt16.self),
                    Int(raw.loadUnaligned(fromByteOffset: start + 6, as: UInt16.self))
                )
            }
            guard let node else {
                report("\(at()): entry \(index) starts outside the page")
                return
            }
            let keyStart = node.start + Layout.nodeHeader
            guard keyStart + node.keySize <= pageSize else {
                report("\(at()): the key of entry \(index) runs past the page")
                return
            }
            let key = keyStart..<(keyStart + node.keySize)
            // A branch page's first key is never compared: it stands for everything before the second.
            if ordered, !(isBranch && index == 0) {
                if let previousKey, !precedes(buffer, previousKey, key) {
                    report("\(at()): entry \(index) is out of key order")
                    return
                }
                previousKey = key
            }
            if isBranch {
                let child = UInt64(node.lo) | UInt64(node.hi) << 16 | UInt64(node.flags) << 32
                walkPage(child, level: level + 1, record: record, kind: kind, name: name, count: &count)
                continue
            }
            let dataSize = Int(node.lo) | Int(node.hi) << 16
            let dataStart = key.upperBound
            let stored = node.flags & Layout.bigData != 0 ? 8 : dataSize
            guard dataStart + stored <= pageSize else {
                report("\(at()): the value of entry \(index) runs past the page")
                return
            }
            let data = dataStart..<(dataStart + stored)
            leafValue(
                buffer, key: key, data: data, dataSize: dataSize, flags: node.flags, record: record, kind: kind,
                name: name, at: "\(at()), entry \(index)", count: &count)
        }
    }

    /// Checks one leaf entry's value: an overflow run, a named database, or a key's duplicates.
    mutating func leafValue(
        _ page: [UInt8], key: Range<Int>, data: Range<Int>, dataSize: Int, flags: UInt16, record: TreeRecord,
        kind: TreeKind, name: String, at: @autoclosure () -> String, count: inout TreeCount
    ) {
        lazy var keyText = keyText(page, key)
        if flags & Layout.bigData != 0 {
            let first = page.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: data.lowerBound, as: UInt64.self) }
            var isFreeList = false
            if case .free = kind { isFreeList = true }
            let bytes = overflowRun(first, dataSize: dataSize, at: at(), reading: isFreeList, count: &count)
            count.entries += 1
            if let bytes { freeListValue(bytes, at: at()) }
            return
        }
        // Copied only for the entries whose value is looked into.
        lazy var value = Array(page[data])
        switch kind {
        case .main where flags & Layout.subData != 0:
            count.entries += 1
            guard value.count == Layout.databaseRecord else {
                report("\(at()) names database \(keyText) with a record of \(value.count) bytes")
                return
            }
            databases += 1
            if let only = onlyDatabases, !only.contains(String(decoding: page[key], as: UTF8.self)) { return }
            let named = value.withUnsafeBytes { TreeRecord($0) }
            walkTree(
                named, kind: .named(duplicates: named.flags & Layout.duplicateSort != 0), name: "database \(keyText)")
        case .named(duplicates: true) where flags & Layout.duplicateData != 0:
            if flags & Layout.subData != 0 {
                guard value.count == Layout.databaseRecord else {
                    report("\(at()): the duplicates of key \(keyText) have a record of \(value.count) bytes")
                    return
                }
                // A duplicates tree keeps its own page counts, checked against its own record; its parent counts
                // only its entries.
                let duplicates = value.withUnsafeBytes { TreeRecord($0) }
                count.entries += walkTree(duplicates, kind: .duplicates, name: "\(name), key \(keyText)").entries
            } else {
                count.entries += subPageEntries(value, record: record, at: at())
            }
        case .free:
            count.entries += 1
            freeListValue(value, at: at())
        default:
            guard flags & (Layout.subData | Layout.duplicateData) == 0 else {
                report("\(at()) has entry flags \(flags), which this database does not use")
                return
            }
            count.entries += 1
        }
    }

    /// Checks an overflow run starting at `first`; with `reading`, returns the value it holds (the free list's).
    mutating func overflowRun(
        _ first: UInt64, dataSize: Int, at: @autoclosure () -> String, reading: Bool, count: inout TreeCount
    ) -> [UInt8]? {
        guard claim(first, name: at()) else { return nil }
        var header: [UInt8] = []
        guard read(into: &header, count: Layout.pageHeader, at: Int(first) * pageSize, what: "overflow page \(first)")
        else { return nil }
        let (number, flags, pages) = header.withUnsafeBytes {
            (
                $0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 10, as: UInt16.self),
                Int($0.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
            )
        }
        guard number == first, flags & Layout.overflow != 0 else {
            report("\(at()): page \(first) is not the overflow page its value needs")
            return nil
        }
        guard pages >= 1, dataSize <= pages * pageSize - Layout.pageHeader else {
            report("\(at()): an overflow run of \(pages) pages cannot hold \(dataSize) bytes")
            return nil
        }
        count.overflowPages += pages
        for extra in 1..<pages {
            guard claim(first + UInt64(extra), name: at()) else { return nil }
        }
        guard reading else { return nil }
        var value: [UInt8] = []
        guard
            read(
                into: &value, count: dataSize, at: Int(first) * pageSize + Layout.pageHeader,
                what: "the value on overflow page \(first)")
        else { return nil }
        return Array(value.prefix(dataSize))
    }

    /// Checks a sub-page of duplicates stored inside a leaf entry; returns how many it holds.
    mutating func subPageEntries(_ bytes: [UInt8], record: TreeRecord, at: @autoclosure () -> String) -> Int {
        guard bytes.count >= Layout.pageHeader else {
            report("\(at()): a duplicates sub-page of \(bytes.count) bytes")
            return 0
        }
        let (flags, lower, upper) = bytes.withUnsafeBytes {
            (
                $0.loadUnaligned(fromByteOffset: 10, as: UInt16.self),
                Int($0.loadUnaligned(fromByteOffset: 12, as: UInt16.self)),
                Int($0.loadUnaligned(fromByteOffset: 14, as: UInt16.self))
            )
        }
        guard flags & Layout.subPage != 0, flags & Layout.leaf != 0, lower >= Layout.pageHeader, lower <= upper,
            upper <= bytes.count, (lower - Layout.pageHeader) % 2 == 0
        else {
            report("\(at()): a damaged duplicates sub-page")
            return 0
        }
        let keys = (lower - Layout.pageHeader) / 2
        if flags & Layout.leaf2 != 0 {
            return fixedKeysFit(keys: keys, keySize: record.fixedKeySize, in: bytes.count, at: at()) ? keys : 0
        }
        let ordered = record.flags & (Layout.integerDuplicates | Layout.reverseDuplicates) == 0
        var previous: Range<Int>?
        for index in 0..<keys {
            let start = bytes.withUnsafeBytes {
                Int($0.loadUnaligned(fromByteOffset: Layout.pageHeader + 2 * index, as: UInt16.self))
            }
            guard start >= upper, start + Layout.nodeHeader <= bytes.count else {
                report("\(at()): duplicate \(index) starts outside its sub-page")
                return keys
            }
            let size = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: start + 6, as: UInt16.self)) }
            let key = (start + Layout.nodeHeader)..<(start + Layout.nodeHeader + size)
            guard key.upperBound <= bytes.count else {
                report("\(at()): duplicate \(index) runs past its sub-page")
                return keys
            }
            if ordered, let previous, !precedes(bytes, previous, key) {
                report("\(at()): duplicate \(index) is out of order")
                return keys
            }
            previous = key
        }
        return keys
    }

    /// Whether `keys` fixed-size keys (`MDB_DUPFIXED`, which Cellar never writes) fit in a page of `size` bytes.
    mutating func fixedKeysFit(keys: Int, keySize: Int, in size: Int, at: @autoclosure () -> String) -> Bool {
        guard keySize >= 1, Layout.pageHeader + keys * keySize <= size else {
            report("\(at()): \(keys) keys of \(keySize) bytes do not fit in their page")
            return false
        }
        return true
    }

    /// Collects the page numbers of one free-list entry: a count, then that many page numbers.
    mutating func freeListValue(_ bytes: [UInt8], at: @autoclosure () -> String) {
        guard bytes.count >= 8, bytes.count % 8 == 0 else {
            report("\(at()): a free-list entry of \(bytes.count) bytes")
            return
        }
        let listed = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        guard listed == UInt64(bytes.count / 8 - 1) else {
            report("\(at()): a free-list entry says it lists \(listed) pages in \(bytes.count) bytes")
            return
        }
        bytes.withUnsafeBytes { raw in
            for index in 1..<(bytes.count / 8) {
                freePages.append(raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
            }
        }
    }

    /// Checks that every page between the end of the file and the last page in use is free (see
    /// `PageCheckReport.unwrittenFreePages`); returns how many there are.
    mutating func checkUnwrittenPages() -> Int {
        let firstMissing = pagesInFile
        guard !full, lastPage >= firstMissing else { return 0 }
        var unwritten = Set<UInt64>()
        for page in freePages where page >= UInt64(firstMissing) && page <= UInt64(lastPage) {
            unwritten.insert(page)
        }
        let missing = lastPage - firstMissing + 1
        if unwritten.count != missing {
            report(
                "the file ends after page \(firstMissing - 1), but the meta page counts \(lastPage + 1) pages and "
                    + "\(missing - unwritten.count) of those past the end are not free: the file was cut short")
        }
        return unwritten.count
    }

    /// Every free page lies among the pages in use, is listed once and is not reachable; with the meta pages, the
    /// pages in use and the free pages account for every page.
    mutating func checkFreePages() {
        guard !full else { return }
        var seen = Set<UInt64>()
        let lastPage = self.lastPage
        for page in freePages {
            guard page >= 2, page <= UInt64(lastPage) else {
                report("the free list holds page \(page), outside the pages in use (2...\(lastPage))")
                return
            }
            guard seen.insert(page).inserted else {
                report("the free list holds page \(page) twice")
                return
            }
            let number = Int(page)
            // A page past the end of the file was never claimed (`inUse` does not reach it).
            if number < pagesInFile, inUse[number / 64] & (UInt64(1) << UInt64(number % 64)) != 0 {
                report("page \(page) is both in use and on the free list: a write would overwrite live data")
                return
            }
        }
        let (inUse, free) = (pagesInUse, freePages.count)
        if 2 + inUse + free != lastPage + 1 {
            report(
                "\(lastPage + 1) pages are in the file's used part, but the trees use \(inUse), the free list "
                    + "holds \(free) and 2 are meta pages")
        }
    }

    // MARK: Keys

    /// Whether the tree's keys are in plain byte order (a duplicates tree carries its parent's order as its own
    /// key flags); the free list's integer keys are not.
    func isOrdered(kind: TreeKind, record: TreeRecord) -> Bool {
        if case .free = kind { return false }
        return record.flags & (Layout.integerKey | Layout.reverseKey) == 0
    }

    /// Whether key `a` sorts strictly before key `b` in LMDB's default order (bytes, then length).
    func precedes(_ page: [UInt8], _ a: Range<Int>, _ b: Range<Int>) -> Bool {
        page[a].lexicographicallyPrecedes(page[b])
    }

    func keyText(_ page: [UInt8], _ key: Range<Int>) -> String {
        let bytes = page[key].prefix(48)
        if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return "\"" + String(decoding: bytes, as: UTF8.self) + "\"" }
        return "0x" + bytes.map { String($0, radix: 16) }.joined()
    }
}
