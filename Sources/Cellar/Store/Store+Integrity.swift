import LMDB

/// What `Store.verifyIntegrity()` found in a store whose pages are sound.
public struct IntegrityReport: Sendable, Hashable {
    /// The version whose pages were checked: the newest committed one.
    public let version: StoreVersion
    /// Pages the store's trees use.
    public let pagesInUse: Int
    /// Pages kept free for reuse by later writes.
    public let freePages: Int
    /// The LMDB databases walked: records, indexes, backlinks and `_meta`.
    public let databases: Int
    /// Where the indexes, unique indexes and backlink databases disagree with the records, links that lead to
    /// records that do not exist, and records that cannot be decoded, in words; empty when everything agrees.
    /// The first hundred are listed, then how many more there are.
    public let problems: [String]

    /// Whether every page is sound and every index and link agrees with the records.
    public var isConsistent: Bool { problems.isEmpty }
}

extension Store {
    /// Checks every page of the store's file before LMDB reads it, then every index, unique index and backlink
    /// database of the registered models against their records, and that no link dangles.
    ///
    /// The page walk checks page numbers, headers and entry bounds, tree depths, key order, overflow runs, duplicate
    /// lists, entry counts, and that each page is in use or free exactly once. LMDB keeps no checksums and trusts its
    /// pages, so a page damaged on disk can crash a read inside LMDB; that is why the walk comes first. Run this
    /// after a crash of the machine with `durability` other than `.full`, after copying a file by hand, or when a
    /// store acts strangely. It reads the whole file: the page walk holds the writer lock meanwhile (reads go on),
    /// the comparison reads one snapshot.
    ///
    /// - Throws: `StoreError.corruptedFile` naming what is wrong with the pages. Disagreements between records and
    ///   their indexes are returned in `problems`, not thrown.
    public func verifyIntegrity() throws(StoreError) -> IntegrityReport {
        let report = try core.run("check the pages of") { try core.environment.checkPages() }
        guard report.isSound else {
            throw .corruptedFile(path: core.path, reason: report.summary)
        }
        var problems = IntegrityProblems()
        try withSnapshot { (snapshot) throws(StoreError) in
            for info in registeredModels.sorted(by: { $0.name < $1.name }) {
                try info.operations.verify(snapshot, info, &problems)
            }
        }
        return IntegrityReport(
            version: StoreVersion(rawValue: report.transactionID), pagesInUse: report.pagesInUse,
            freePages: report.freePages, databases: report.databases, problems: problems.summary)
    }
}
