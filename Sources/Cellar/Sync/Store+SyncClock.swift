import CellarSyncProtocol
import LMDB

// The sync clock against the server's: how a device whose clock is wrong still stamps fairly.
//
// The rule: a stamp is never further ahead of the server's clock than `SyncProtocol.maxClockLeadMilliseconds`, and
// normally not ahead at all. Each store keeps the server's clock minus this machine's (measured at each session and
// pull), and stamps with its own clock corrected by it; the hybrid logical clock still moves past every stamp seen, so
// a change always comes after what the device saw. Changes made offline while the clock was further ahead than that
// (before any measure) are stamped again before they are pushed: at the server's time at the earliest, after every
// stamp that stays, in their order. Their values are kept, and they cannot win conflicts by being ahead. A device whose
// clock was behind needs nothing: its stamps come after every stamp it has seen, and its later ones are corrected.

extension Store {
    /// Aligns the store's sync clock with the server's, which read `serverMilliseconds` in the middle of a request
    /// that took `roundTrip`: keeps the difference for later stamps, and stamps again this device's changes not
    /// pushed yet that are too far ahead of the server's clock. Returns how many stamps moved. Writes nothing when the
    /// difference is what the store has (within a second) and no stamp is ahead.
    @_spi(Sync)
    @discardableResult
    public func alignSyncClock(serverMilliseconds: Int64, roundTrip: Duration) throws(StoreError) -> Int {
        // A server's clock reads between 1970 and the year 6429 (stamps keep 48 bits of milliseconds); anything else
        // is not a clock to follow.
        guard (0..<(1 << 47)).contains(serverMilliseconds) else { return 0 }
        let halfTrip = min(
            roundTrip.components.seconds * 500 + roundTrip.components.attoseconds / 2_000_000_000_000_000, 1 << 40)
        let offset = serverMilliseconds - (SyncStorage.localMilliseconds() - halfTrip)
        let serverNow = UInt64(max(0, serverMilliseconds)) << 16
        let bound = (UInt64(max(0, serverMilliseconds)) + SyncProtocol.maxClockLeadMilliseconds) << 16 | 0xFFFF
        let core = self.core
        let needed: Bool
        do {
            needed = try read { snapshot in
                guard let session = try SyncSession.load(core: core, in: try snapshot.lmdb) else { return false }
                return abs(session.offset - offset) > 1_000 || session.clock > bound
            }
        } catch {
            throw .from(
                error, path: core.path, operation: "read the sync clock of", readerLimit: configuration.maxReaders)
        }
        guard needed else { return 0 }
        do {
            return try write { transaction in
                guard let session = try transaction.loadSyncSession() else { return 0 }
                let txn = try transaction.writable
                if abs(session.offset - offset) > 1_000 {
                    session.offset = offset
                    try core.run("write the sync clock of") {
                        try txn.put(
                            core.meta, key: SyncStorage.clockOffsetKey,
                            value: withUnsafeBytes(of: offset.littleEndian, Array.init))
                    }
                }
                guard session.clock > bound else { return 0 }
                return try transaction.restamp(after: bound, from: serverNow, session: session)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .from(
                error, path: core.path, operation: "align the sync clock of", readerLimit: configuration.maxReaders)
        }
    }
}

extension WriteTransaction {
    /// Stamps again this device's pending stamps later than `bound` (which no server took: a stamp that was pushed
    /// stays), in their order, from `serverNow` at the earliest and after every stamp that stays; sets the clock just
    /// past them.
    fileprivate func restamp(after bound: UInt64, from serverNow: UInt64, session: SyncSession) throws(StoreError)
        -> Int
    {
        let txn = try writable
        let core = store.core
        var records: [(key: [UInt8], record: TrackedRecord)] = []
        var kept: UInt64 = 0
        var ahead: [SyncStamp] = []
        try core.run("read the sync state of") {
            try txn.walk(session.databases.records) { entry in
                guard let record = try? TrackedRecord(entry.value, devices: session.devices) else { return true }
                let pending = try txn.get(session.databases.outbox, key: entry.key) != nil
                var moves = false
                for stamp in record.fields.map(\.stamp) + [record.deleted].compactMap({ $0 }) {
                    if pending, stamp.device == session.device, stamp.time > bound {
                        ahead.append(stamp)
                        moves = true
                    } else {
                        kept = max(kept, stamp.time)
                    }
                }
                if moves { records.append((Array(entry.key), record)) }
                return true
            }
        }
        // In the order they were made, from the server's time on, and after every stamp that stays.
        let base = max(serverNow, kept &+ 1)
        let order = Dictionary(
            Set(ahead.map(\.time)).sorted().enumerated().map { ($1, base &+ UInt64($0)) },
            uniquingKeysWith: { a, _ in a })
        func moved(_ stamp: SyncStamp) -> SyncStamp {
            guard stamp.device == session.device, let time = order[stamp.time] else { return stamp }
            return SyncStamp(time: time, device: stamp.device)
        }
        do {
            for (key, record) in records {
                var record = record
                for position in record.fields.indices {
                    record.fields[position].stamp = moved(record.fields[position].stamp)
                }
                record.deleted = record.deleted.map(moved)
                try session.write(record, key: key, in: txn)
            }
            session.rebase(clock: base &+ UInt64(order.count))
            try session.flush(core: core, in: txn)
        } catch {
            throw lmdbError(error, "write")
        }
        return ahead.count
    }
}
