import CellarSyncProtocol
import Foundation
import LMDB
import Synchronization

/// Where sync keeps its state in a store: the names are made here and read everywhere else.
///
/// - `_meta` `sync/models`: the synced models' names. Its presence turns tracking on, for every process and every
///   `Store` on the file, whether or not it links `CellarSync`: a widget's write is pushed like the app's.
/// - `_meta` `sync/devices`: the device table, 16 bytes per device; the first is this store's own device.
/// - `_meta` `sync/clock`: the newest stamp time written or seen (the hybrid logical clock's state).
/// - `_meta` `sync/clock-offset`: the server's clock minus this machine's, in milliseconds, as last measured.
/// - `_meta` `sync/account`: the server and user the store's sync state belongs to, as JSON (`server`, `user`).
/// - `_meta` `sync/cursors/<hash>`: where a client that syncs a set of models stands in the server's history, as JSON
///   (`models`, `sequence`, `commit`), committed with the records its pull brought. One per set of models, so that
///   two clients on one store (an app and its widget, or clients of different models) each see every change of theirs.
///   `<hash>` is the FNV-1a hash of the sorted names, in hex (a key holds at most 511 bytes; the names are in the value).
/// - `_meta` `sync/pushed/<hash>`: the newest transaction the same client pushed and has not pulled past yet, alike: a
///   server that no longer holds it lost the client's acknowledged changes, and the client resets.
/// - `_meta` `sync/x/<name>`: what the sync client keeps for itself (pulled changes waiting for a link's target).
/// - `_sync`: per synced record (model name, then primary key), its ``TrackedRecord``.
/// - `_outbox`: the same keys, for records changed here and not yet pushed; the value is the time of the change's
///   stamp, so that an acknowledgement removes an entry only if no later change came meanwhile.
enum SyncStorage {
    static let modelsKey = Array("sync/models".utf8)
    static let devicesKey = Array("sync/devices".utf8)
    static let clockKey = Array("sync/clock".utf8)
    /// How far the server's clock is from this machine's, in milliseconds (Int64, little-endian): stamps read this
    /// machine's clock corrected by it, so a device whose clock is wrong stamps as if it were right.
    static let clockOffsetKey = Array("sync/clock-offset".utf8)
    static let accountKey = Array("sync/account".utf8)
    static let cursorPrefix = "sync/cursors/"
    static let pushedPrefix = "sync/pushed/"
    /// Where the cursor of a client syncing `models` lies (`pushed`: its newest pushed transaction).
    static func cursorKey(models: [String], pushed: Bool = false) -> [UInt8] {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (position, name) in models.sorted().enumerated() {
            if position > 0 { hash = (hash ^ 0x1F) &* 0x100_0000_01b3 }
            for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        let digits = String(hash, radix: 16)
        let prefix = pushed ? pushedPrefix : cursorPrefix
        return Array((prefix + String(repeating: "0", count: 16 - digits.count) + digits).utf8)
    }
    static let clientValuePrefix = "sync/x/"
    static let recordsDatabase = "_sync"
    static let outboxDatabase = "_outbox"

    /// The key of a record in `_sync` and `_outbox`: the model's name, length first, then the primary key.
    static func key(model: String, primaryKey: some Collection<UInt8>) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(model.utf8.count + primaryKey.count + 2)
        Varint.append(UInt64(model.utf8.count), to: &key)
        key.append(contentsOf: model.utf8)
        key.append(contentsOf: primaryKey)
        return key
    }

    /// Splits a `_sync` or `_outbox` key into the model's name and the primary key.
    static func split(_ key: UnsafeRawBufferPointer) -> (model: String, primaryKey: [UInt8])? {
        var reader = ByteReader(key)
        guard let length = try? reader.varint(), length <= UInt64(key.count),
            let name = try? reader.bytes(Int(length)), let model = ByteReader.text(name)
        else { return nil }
        return (model, Array(key[reader.offset...]))
    }

    /// The synced models' names, stored as a key dictionary stores its names (one format, one reader).
    static func encodeNames(_ names: [String]) -> [UInt8] { KeyDictionary(names: names).serialized }

    static func decodeNames(_ bytes: UnsafeRawBufferPointer) -> [String]? { KeyDictionary.deserialize(bytes)?.names }

    /// Two lowercase hex digits.
    static func hex(_ byte: UInt8) -> String { byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }

    /// The device table as 32-digit hex ids; `nil` when damaged.
    static func decodeDevices(_ bytes: UnsafeRawBufferPointer) -> [String]? {
        guard bytes.count % 16 == 0, !bytes.isEmpty else { return nil }
        return stride(from: 0, to: bytes.count, by: 16).map { start in
            bytes[start..<start + 16].map(hex).joined()
        }
    }

    /// The device table's stored form: 16 bytes per device. Only ids `SyncStamp.isDeviceID` accepts reach it (the
    /// table takes no other), so every id is 32 hex digits.
    static func encodeDevices(_ devices: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        for device in devices {
            let digits = Array(device.utf8)
            for start in stride(from: 0, to: digits.count - 1, by: 2) {
                bytes.append(UInt8(String(decoding: digits[start...start + 1], as: UTF8.self), radix: 16) ?? 0)
            }
        }
        return bytes
    }

    /// A new device id: 16 random bytes in hex.
    static func newDeviceID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in hex(UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Now, as a stamp time: milliseconds since 1970 in the high 48 bits, this machine's clock moved by `offset`
    /// (the server's clock minus this machine's).
    static func now(offset: Int64 = 0) -> UInt64 {
        let (sum, overflow) = localMilliseconds().addingReportingOverflow(offset)
        return UInt64(min(max(0, overflow ? 0 : sum), 1 << 47)) << 16
    }

    /// This machine's clock, in milliseconds since 1970 (in the tests of a device whose clock is wrong, that far off).
    static func localMilliseconds() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1000) + clockOffset.load(ordering: .relaxed)
    }

    /// How far this process's sync clock is set from the system's, in milliseconds: 0, but in the tests of a device
    /// whose clock is wrong.
    static let clockOffset = Atomic<Int64>(0)
}

/// The two databases of sync's state, once a store has them.
struct SyncDatabases: Sendable {
    let records: Database
    let outbox: Database
}

/// Sync's state as one transaction reads and changes it: the synced models, the device table and the clock.
final class SyncSession {
    let models: Set<String>
    let databases: SyncDatabases
    /// Whether this transaction opened the databases (another process created them): the store keeps the handles
    /// once it commits.
    let openedDatabases: Bool
    private(set) var devices: [String]
    private var deviceIndexes: [String: UInt64]
    private var devicesChanged = false
    private(set) var clock: UInt64
    /// The server's clock minus this machine's, in milliseconds (`SyncStorage.clockOffsetKey`).
    var offset: Int64 = 0
    private var clockChanged = false
    /// The stamp of this transaction's own changes, made at its first.
    private var localStamp: SyncStamp?

    init(models: Set<String>, databases: SyncDatabases, openedDatabases: Bool, devices: [String], clock: UInt64) {
        self.models = models
        self.databases = databases
        self.openedDatabases = openedDatabases
        self.devices = devices
        self.deviceIndexes = Dictionary(devices.enumerated().map { ($1, UInt64($0)) }, uniquingKeysWith: { a, _ in a })
        self.clock = clock
    }

    var device: String { devices[0] }

    /// Reads sync's state in `txn`; `nil` when the store does not sync.
    static func load(core: StoreCore, in txn: ReadTransaction) throws(StoreError) -> SyncSession? {
        return try core.run("read the sync state of") { () throws -> SyncSession? in
            guard let names = try txn.get(core.meta, key: SyncStorage.modelsKey) else { return nil }
            guard let models = SyncStorage.decodeNames(names) else {
                throw StoreError.corruptedFile(path: core.path, reason: "the list of synced models is damaged")
            }
            guard let stored = try txn.get(core.meta, key: SyncStorage.devicesKey),
                let devices = SyncStorage.decodeDevices(stored)
            else {
                throw StoreError.corruptedFile(path: core.path, reason: "the sync device table is damaged")
            }
            var clock: UInt64 = 0
            if let bytes = try txn.get(core.meta, key: SyncStorage.clockKey) {
                guard bytes.count == 8 else {
                    throw StoreError.corruptedFile(path: core.path, reason: "the sync clock is damaged")
                }
                clock = UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
            }
            var opened = false
            let databases: SyncDatabases
            if let known = core.syncDatabases.withLock({ $0 }) {
                databases = known
            } else {
                guard let records = try txn.openDatabase(named: SyncStorage.recordsDatabase),
                    let outbox = try txn.openDatabase(named: SyncStorage.outboxDatabase)
                else {
                    throw StoreError.corruptedFile(
                        path: core.path, reason: "the store syncs, but its sync databases are missing")
                }
                databases = SyncDatabases(records: records, outbox: outbox)
                opened = true
            }
            let session = SyncSession(
                models: Set(models), databases: databases, openedDatabases: opened, devices: devices, clock: clock)
            if let bytes = try txn.get(core.meta, key: SyncStorage.clockOffsetKey), bytes.count == 8 {
                session.offset = Int64(littleEndian: bytes.loadUnaligned(as: Int64.self))
            }
            return session
        }
    }

    func deviceIndex(_ device: String) -> UInt64 {
        if let index = deviceIndexes[device] { return index }
        let index = UInt64(devices.count)
        devices.append(device)
        deviceIndexes[device] = index
        devicesChanged = true
        return index
    }

    /// The stamp of this transaction's changes: later than every stamp the store has written or seen.
    func stampForLocalChange() -> SyncStamp {
        if let localStamp { return localStamp }
        clock = max(SyncStorage.now(offset: offset), clock &+ 1)
        clockChanged = true
        let stamp = SyncStamp(time: clock, device: device)
        localStamp = stamp
        return stamp
    }

    /// Whether `track` stamps a change just after the newest stamp its record had (a migration's changes), instead of
    /// with this transaction's stamp.
    var stampsAfterRecord = false

    /// Sets the clock back to `time`: only when this device's own stamps ahead of the server were moved back
    /// (`Store.alignSyncClock`), never below a stamp that stays.
    func rebase(clock time: UInt64) {
        clock = time
        clockChanged = true
        localStamp = nil
    }

    /// Moves the clock past a stamp pulled from another device, so that a later change here wins over it even when
    /// this device's clock is behind.
    func observe(_ stamp: SyncStamp) {
        // This transaction's later changes must come after it, even one at the same time from a device whose id
        // sorts later.
        if let localStamp, localStamp <= stamp { self.localStamp = nil }
        guard stamp.time > clock else { return }
        clock = stamp.time
        clockChanged = true
    }

    /// The tracked state of the record of `model` stored under `key` (a `SyncStorage.key`).
    func trackedRecord(
        model: String, primaryKey: [UInt8], key: [UInt8], core: StoreCore, in txn: ReadTransaction
    ) throws(StoreError) -> TrackedRecord? {
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(databases.records, key: key) } catch { throw core.error(error, "read") }
        guard let stored else { return nil }
        do {
            return try TrackedRecord(stored, devices: devices)
        } catch {
            throw .corruptedFile(
                path: core.path,
                reason: "the sync state of the \(model) with id \(KeyEncoding.describe(primaryKey)) is damaged")
        }
    }

    func write(_ record: TrackedRecord, key: [UInt8], in txn: LMDB.WriteTransaction) throws(LMDBError) {
        try txn.put(databases.records, key: key, value: record.serialized(deviceIndex: deviceIndex))
    }

    /// Writes the device table and the clock when this transaction changed them.
    func flush(core: StoreCore, in txn: LMDB.WriteTransaction) throws(LMDBError) {
        if devicesChanged {
            try txn.put(core.meta, key: SyncStorage.devicesKey, value: SyncStorage.encodeDevices(devices))
        }
        if clockChanged {
            try txn.put(
                core.meta, key: SyncStorage.clockKey, value: withUnsafeBytes(of: clock.littleEndian, Array.init))
        }
    }
}

extension SyncSession {
    /// Compares the stored record of `model` under `primaryKey` with its tracked state, and stamps what changed
    /// (see `WriteTransaction.trackSyncChanges`).
    func track(
        _ primaryKey: [UInt8], model: String, records: Database, dictionary: KeyDictionary, core: StoreCore,
        in txn: LMDB.WriteTransaction
    ) throws(StoreError) {
        let session = self
        let key = SyncStorage.key(model: model, primaryKey: primaryKey)
        let tracked = try session.trackedRecord(model: model, primaryKey: primaryKey, key: key, core: core, in: txn)
        func stamp() -> SyncStamp {
            guard stampsAfterRecord else { return session.stampForLocalChange() }
            // A migration's values: each device derives the same ones from the record it had, so they come just
            // after that record's newest write, and lose to any edit made after it, on any device.
            let newest = tracked?.deleted ?? tracked?.fields.map(\.stamp).max()
            return SyncStamp(time: (newest?.time ?? 0) &+ 1, device: session.device)
        }
        let current: [(name: String, hash: UInt64)]?
        do {
            current = try txn.get(records, key: primaryKey).map { bytes throws(StoreError) in
                try WriteTransaction.fieldHashes(bytes, dictionary: dictionary, model: model, primaryKey: primaryKey)
            }
        } catch let error as LMDBError {
            throw core.error(error, "read")
        } catch {
            throw error as? StoreError ?? .lmdb(code: 0, message: "\(error)")
        }
        var updated: TrackedRecord
        if let current {
            if tracked?.deleted != nil {
                throw .idReusedAfterDelete(model: model, id: KeyEncoding.describe(primaryKey))
            }
            updated = tracked ?? TrackedRecord()
            var changed = false
            var byName = Dictionary(updated.fields.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            for (name, hash) in current where byName[name]?.hash != hash {
                byName[name] = TrackedRecord.Field(name: name, hash: hash, stamp: stamp())
                changed = true
            }
            let present = Set(current.map(\.name))
            for (name, field) in byName where !present.contains(name) && field.hash != TrackedRecord.absent {
                byName[name] = TrackedRecord.Field(
                    name: name, hash: TrackedRecord.absent, stamp: stamp())
                changed = true
            }
            guard changed else { return }
            updated.fields = byName.values.sorted { $0.name < $1.name }
        } else {
            guard let tracked, tracked.deleted == nil else { return }
            updated = TrackedRecord(deleted: stamp())
        }
        // The outbox marker changes with every change, whatever its stamp.
        let marker = session.stampForLocalChange().time
        do {
            try session.write(updated, key: key, in: txn)
            try txn.put(
                session.databases.outbox, key: key, value: withUnsafeBytes(of: marker.littleEndian, Array.init))
        } catch {
            throw core.error(error, "write")
        }
    }
}
