import LMDB

extension WriteTransaction {
    /// Writes this transaction's change log under the version it creates, and now and then drops the entries older
    /// than the log keeps, so that it stays the same size.
    func writeChangeLog(_ txn: LMDB.WriteTransaction) throws(StoreError) {
        guard !changes.isEmpty else { return }
        let version = txn.id
        committedVersion = version
        let log = store.core.changeLog
        try store.core.run("write the change log") {
            try txn.put(log, key: ChangeLog.key(version), value: changes.serialized)
            // Pruned every `pruneInterval` versions, in one cursor walk: the log holds between `retainedVersions` and
            // `retainedVersions + pruneInterval` versions.
            guard version > ChangeLog.retainedVersions, version % ChangeLog.pruneInterval == 0 else { return }
            try txn.deleteLeading(log, through: ChangeLog.key(version - ChangeLog.retainedVersions))
        }
    }
}

extension WriteTransaction {
    /// The stored names of the models this transaction changed.
    var changedModels: Set<String> { Set(changes.byModel.keys) }
}

extension ChangeLog {
    /// The log's key for a version: big-endian, so the log is in version order.
    static func key(_ version: UInt64) -> [UInt8] { withUnsafeBytes(of: version.bigEndian, Array.init) }
}

extension StoreCore {
    /// Drops change-log entries of versions this file never committed: a compacted copy (`compact(to:)`) starts again
    /// at version 1 with the log of the original, whose entries would otherwise be read as changes of the copy.
    static func dropChangeLogFromAnotherLife(_ log: Database, in txn: LMDB.WriteTransaction) throws {
        let newest = ChangeLog.key(txn.id - 1)
        var stale: [[UInt8]] = []
        try txn.walk(log, descending: true) { entry in
            guard newest.lexicographicallyPrecedes(entry.key) else { return false }
            stale.append(Array(entry.key))
            return true
        }
        for key in stale { _ = try txn.delete(log, key: key) }
    }

    /// What any process committed after version `after`: the newest version and the models its change log names
    /// (`nil`: the log cannot say, or the store could not be read).
    func committed(after: UInt64) -> (version: UInt64, models: Set<String>?) {
        let newest = environment.info.lastTransactionID
        guard newest > after else { return (newest, []) }
        let read = try? environment.read { txn in (txn.id, try changedRecords(after: after, through: txn.id, in: txn)) }
        guard let read else { return (newest, nil) }
        return (read.0, read.1.map { Set($0.byModel.keys) })
    }

    /// The records changed after version `after` up to and including `through`, read in `txn` (which sees
    /// `through`); `nil` when the log no longer reaches back that far or is damaged: read everything again then.
    func changedRecords(after: UInt64, through: UInt64, in txn: ReadTransaction) throws -> ChangedRecords? {
        guard through > after else { return ChangedRecords() }
        guard through - after < ChangeLog.retainedVersions else { return nil }
        var changed = ChangedRecords()
        var sound = true
        let range = KeyRange(lower: ChangeLog.key(after + 1), upper: ChangeLog.key(through + 1))
        try txn.walk(changeLog, range: range) { entry in
            sound = changed.add(entry.value)
            return sound
        }
        return sound ? changed : nil
    }
}
