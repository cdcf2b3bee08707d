import LMDB

// What a client reset and a sign-out do to a store (`CellarSync`'s `SyncClient`): put back in the outbox what this
// device holds, or forget it.

extension WriteTransaction {
    /// Puts every record of `models` (stored names) that sync tracks, tombstones too, back in the outbox, each with
    /// the stamps it has: a client reset's recovery, which pushes to a server that lost history everything this
    /// device holds. The server merges what it already has to itself. Returns how many records were put back.
    @_spi(Sync)
    public func requeueSyncedRecords(models: Set<String>) throws(StoreError) -> Int {
        guard let session = try loadSyncSession() else { return 0 }
        let txn = try writable
        let marker = session.stampForLocalChange().time
        var keys: [[UInt8]] = []
        try store.core.run("read the sync state of") {
            try txn.walk(session.databases.records) { entry in
                if let (model, _) = SyncStorage.split(entry.key), models.contains(model) {
                    keys.append(Array(entry.key))
                }
                return true
            }
        }
        do {
            for key in keys {
                try txn.put(
                    session.databases.outbox, key: key, value: withUnsafeBytes(of: marker.littleEndian, Array.init))
            }
            try session.flush(core: store.core, in: txn)
        } catch {
            throw lmdbError(error, "write")
        }
        return keys.count
    }
}

extension Store {
    /// The stored names of the models whose records this store tracks for sync, by any client.
    @_spi(Sync)
    public func syncedModelNames() throws(StoreError) -> [String] {
        do {
            return try read { snapshot in
                let txn = try snapshot.lmdb
                return try core.run("read the sync state of") { () throws -> [String] in
                    try txn.get(core.meta, key: SyncStorage.modelsKey).flatMap(SyncStorage.decodeNames) ?? []
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .from(
                error, path: core.path, operation: "read the sync state of", readerLimit: configuration.maxReaders)
        }
    }

    /// Forgets this device's records of `models` and what sync knows of them, in one transaction: their records are
    /// deleted here (delete rules followed, nothing stamped or pushed), their tracked states and outbox entries
    /// removed, and the sync client's values under `clientValuePrefixes` dropped. A client reset that discards
    /// local changes, or a sign-out, then downloads again what the server has.
    ///
    /// With `newDevice`, every synced model must be among `models`: the device table starts again with a new id, the
    /// account and every client's cursors are forgotten, and this store is a new device to whichever server and user
    /// it syncs with next.
    @_spi(Sync)
    public func discardSyncedRecords(
        of models: [any Model.Type], clientValuePrefixes: [String], newDevice: Bool
    ) throws(StoreError) {
        let infos = try models.map { (type) throws(StoreError) in try info(for: type) }
        let names = Set(infos.map(\.name))
        let core = self.core
        do {
            try write { transaction in
                let txn = try transaction.writable
                guard let session = try SyncSession.load(core: core, in: txn) else { return }
                // Nothing this transaction does is a change to push.
                transaction.syncSession = .some(nil)
                for type in models { try transaction.deleteAllForgetting(type) }
                try core.run("forget the sync state of") {
                    for database in [session.databases.records, session.databases.outbox] {
                        var keys: [[UInt8]] = []
                        try txn.walk(database) { entry in
                            if let (model, _) = SyncStorage.split(entry.key), names.contains(model) || newDevice {
                                keys.append(Array(entry.key))
                            }
                            return true
                        }
                        for key in keys { _ = try txn.delete(database, key: key) }
                    }
                    var values: [[UInt8]] = []
                    for prefix in clientValuePrefixes {
                        let lower = Array((SyncStorage.clientValuePrefix + prefix).utf8)
                        try txn.walk(core.meta, range: KeyRange(lower: lower)) { entry in
                            guard entry.key.starts(with: lower) else { return false }
                            values.append(Array(entry.key))
                            return true
                        }
                    }
                    for key in values { _ = try txn.delete(core.meta, key: key) }
                    if newDevice {
                        // The account and every client's cursors: the next sign-in starts from nothing.
                        var keys = [SyncStorage.accountKey]
                        for prefix in [SyncStorage.cursorPrefix, SyncStorage.pushedPrefix] {
                            let lower = Array(prefix.utf8)
                            try txn.walk(core.meta, range: KeyRange(lower: lower)) { entry in
                                guard entry.key.starts(with: lower) else { return false }
                                keys.append(Array(entry.key))
                                return true
                            }
                        }
                        for key in keys { _ = try txn.delete(core.meta, key: key) }
                        try txn.put(
                            core.meta, key: SyncStorage.devicesKey,
                            value: SyncStorage.encodeDevices([SyncStorage.newDeviceID()]))
                    }
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .from(
                error, path: core.path, operation: "forget the sync state of", readerLimit: configuration.maxReaders)
        }
    }
}

extension WriteTransaction {
    fileprivate func deleteAllForgetting<M: Model>(_ type: M.Type) throws(StoreError) {
        // Pulled deletes, in effect: a deny rule does not keep a record the server will send again.
        deletesDespiteDenyRules = true
        defer { deletesDespiteDenyRules = false }
        _ = try deleteAll(type)
    }
}
