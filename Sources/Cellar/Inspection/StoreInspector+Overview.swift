import CellarSyncProtocol
import Foundation
import LMDB

/// The file-level facts `cellar info` shows: format, schema version, pages, map and readers.
package struct StoreOverview: Sendable {
    /// The Cellar format marker in `_meta`.
    package let formatVersion: Int
    /// The schema version the store was last opened with; `nil` before any model was stored.
    package let schemaVersion: Int?
    /// The newest committed version (LMDB's transaction id).
    package let version: UInt64
    /// The data file's length in bytes.
    package let fileSize: Int
    package let pageSize: Int
    /// Pages the newest version's trees use, and pages kept free for reuse, from a walk of every page.
    package let pagesInUse: Int
    package let freePages: Int
    /// What the page walk found wrong; empty for a sound file.
    package let pageProblems: [String]
    /// The map size the file was opened with: the largest the file may grow before the map is grown.
    package let mapSize: Int
    package let maxReaders: Int
    /// Reader slots of other processes (this one's left out); those of processes that ended are stale.
    package let readers: [ReaderSlot]
    /// Whether the reader table could be read: not when the lock file cannot be opened for writing.
    package let usesLockFile: Bool
    /// What sync keeps in the store, when it syncs.
    package let sync: SyncOverview?
}

/// What sync keeps in a store: its device, its synced models, and how far it is.
package struct SyncOverview: Sendable {
    package let device: String
    package let models: [String]
    /// Records with a tracked state (tombstones included).
    package let trackedRecords: Int
    /// Records changed here and not pushed yet.
    package let pendingRecords: Int
    /// The furthest server sequence a client of the store pulled up to.
    package let cursor: Int64
}

extension StoreInspector {
    /// The file's facts, after a walk of every page (which also finds damage before anything reads it).
    package func overview() throws(StoreError) -> StoreOverview {
        let environment = core.environment
        let pages = try core.run("check the pages of") { try environment.checkPages() }
        let (format, schemaVersion) = try read("read") { txn in
            (Int(try txn.get(core.meta, key: StoreCore.formatKey)?.first ?? 0), try core.storedSchemaVersion(in: txn))
        }
        let sync = try read("read the sync state of") { txn -> SyncOverview? in
            guard let session = try SyncSession.load(core: core, in: txn) else { return nil }
            let lower = Array(SyncStorage.cursorPrefix.utf8)
            var cursor: Int64 = 0
            try txn.walk(core.meta, range: KeyRange(lower: lower)) { entry in
                guard entry.key.starts(with: lower) else { return false }
                if case .object(let members)? = try? JSONValue(parsing: entry.value),
                    case .number(let number)? = members["sequence"], let sequence = number.int64Value
                {
                    cursor = max(cursor, sequence)
                }
                return true
            }
            return SyncOverview(
                device: session.device, models: session.models.sorted(),
                trackedRecords: try txn.statistics(session.databases.records).entries,
                pendingRecords: try txn.statistics(session.databases.outbox).entries, cursor: cursor)
        }
        let info = environment.info
        let process = getpid()
        return StoreOverview(
            formatVersion: format, schemaVersion: schemaVersion, version: info.lastTransactionID,
            fileSize: try core.run("read the size of") { try environment.dataFileLength },
            pageSize: environment.pageSize, pagesInUse: pages.pagesInUse, freePages: pages.freePages,
            pageProblems: pages.problems, mapSize: info.mapSize, maxReaders: info.maxReaders,
            readers: try core.run("read the reader table of") { try environment.readers }.filter {
                $0.process != process
            },
            usesLockFile: environment.usesLockFile, sync: sync)
    }
}

/// One record of a model, read without its type.
package struct StoredRecord {
    /// The primary key, as a person reads it (`42`, `"taro"`).
    package let id: String
    /// The record's fields; `nil` when its bytes are not a record.
    package let value: RecordValue?
    /// Why its bytes are not a record (a checksum that does not match, a value cut short); `nil` when they are.
    package let unreadable: String?

    init(id: String, bytes: UnsafeRawBufferPointer, dictionary: KeyDictionary) {
        self.id = id
        do {
            (value, unreadable) = (try RecordValue(record: bytes, dictionary: dictionary), nil)
        } catch {
            (value, unreadable) = (nil, (error as? RecordValue.Malformed ?? RecordValue.Malformed()).description)
        }
    }
}

extension StoreInspector {
    /// Hands `body` each record of `model` in primary-key order, from one snapshot, until it returns `false`. Each
    /// record is read when it is handed over, so a store of any size streams.
    ///
    /// - Throws: a `StoreError` reading the store, or what `body` throws.
    package func forEachRecord(of model: StoredModel, _ body: (StoredRecord) throws -> Bool) throws {
        do {
            try core.environment.read { txn in
                guard let records = try txn.openDatabase(named: DatabaseName.records(model.name)) else { return }
                try txn.walk(records) { entry in
                    try body(
                        StoredRecord(
                            id: KeyEncoding.describe(entry.key), bytes: entry.value, dictionary: model.dictionary))
                }
            }
        } catch let error as LMDBError {
            throw core.error(error, "read the records of")
        }
    }

    /// Writes a compacted copy of the store (free pages left out) into `directory`, which must not hold a store.
    package func compact(to directory: URL) throws(StoreError) { try core.compact(to: directory) }
}
