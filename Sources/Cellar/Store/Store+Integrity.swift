import LMDB

/// What `Store.verifyIntegrity()` found in a sound store.
public struct IntegrityReport: Sendable, Hashable {
    /// The version whose pages were checked: the newest committed one.
    public let version: StoreVersion
    /// Pages the store's trees use.
    public let pagesInUse: Int
    /// Pages kept free for reuse by later writes.
    public let freePages: Int
    /// The LMDB databases walked: records, indexes and `_meta`.
    public let databases: Int
}

extension Store {
    /// Checks every page of the store's file before LMDB reads it: page numbers, headers and entry bounds, tree
    /// depths, key order, overflow runs, duplicate lists, entry counts, and that each page is in use or free exactly
    /// once.
    ///
    /// LMDB keeps no checksums and trusts its pages, so a page damaged on disk can crash a read inside LMDB. Run this
    /// after a crash of the machine with `durability` other than `.full`, after copying a file by hand, or when a
    /// store acts strangely: it reads the whole file once and holds the writer lock meanwhile (reads go on).
    /// Damage to the bytes of a record inside a sound page is found when the record is decoded, as a
    /// `StoreError.decodingFailed`.
    ///
    /// - Throws: `StoreError.corruptedFile` naming what is wrong.
    public func verifyIntegrity() throws(StoreError) -> IntegrityReport {
        let report = try core.run("check the pages of") { try core.environment.checkPages() }
        guard report.isSound else {
            throw .corruptedFile(path: core.path, reason: report.summary)
        }
        return IntegrityReport(
            version: StoreVersion(rawValue: report.transactionID), pagesInUse: report.pagesInUse,
            freePages: report.freePages, databases: report.databases)
    }
}
