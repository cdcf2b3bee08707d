import LMDB

extension StoreCore {
    /// Stamps, as this device's change, what a migration changed in the records of the synced models among `models`
    /// (a property added with a default, one renamed, records deleted), in the migration's transaction. The server
    /// then gets the migrated records, and a device still on the older model is told to update instead of pulling
    /// records it would misread. Each change is stamped just after the newest stamp its record had: every device makes
    /// the same migrated values from the same record, and an edit made after that record, on any device, wins.
    func trackMigratedRecords(of models: Set<String>, in txn: LMDB.WriteTransaction) throws(StoreError) {
        guard !models.isEmpty, let session = try SyncSession.load(core: self, in: txn) else { return }
        session.stampsAfterRecord = true
        for model in models.sorted() where session.models.contains(model) {
            let dictionary: KeyDictionary
            var keys = Set<[UInt8]>()
            let found = try run("read the records of") { () throws -> Database? in
                guard let records = try txn.openDatabase(named: DatabaseName.records(model)) else { return nil }
                try txn.walk(records) { entry in
                    keys.insert(Array(entry.key))
                    return true
                }
                // Records the migration deleted have a tracked state and no record: they become tombstones.
                let prefix = SyncStorage.key(model: model, primaryKey: [])
                try txn.walk(session.databases.records, range: KeyRange(lower: prefix)) { entry in
                    guard entry.key.starts(with: prefix) else { return false }
                    keys.insert(Array(entry.key.dropFirst(prefix.count)))
                    return true
                }
                return records
            }
            guard let records = found else { continue }
            let stored = try run("read the key dictionary of") {
                try txn.get(meta, key: ModelInfo.dictionaryKey(of: model)).map { Array($0) }
            }
            if let stored {
                guard let decoded = stored.withUnsafeBytes(KeyDictionary.deserialize) else {
                    throw .corruptedFile(path: path, reason: "the key dictionary of \(model) is damaged")
                }
                dictionary = decoded
            } else {
                dictionary = .empty
            }
            for key in keys.sorted(by: SortedKeys.precedes) {
                try session.track(key, model: model, records: records, dictionary: dictionary, core: self, in: txn)
            }
        }
        do { try session.flush(core: self, in: txn) } catch { throw self.error(error, "write") }
    }
}
