import CellarSyncProtocol
import Foundation
import LMDB

// What `CellarSync` reads and writes of a store. Not API for apps: `@_spi(Sync)`, so that the sync client, which
// lives in its own module, does not reach into the store's files.

/// The server and the user a store's sync state belongs to.
@_spi(Sync)
public struct SyncAccount: Sendable, Hashable {
    /// The server's identity (`SessionResponse.server`).
    public var server: String
    public var user: String

    public init(server: String, user: String) {
        self.server = server
        self.user = user
    }
}

/// A record this device changed and has not pushed yet, as the outbox holds it.
@_spi(Sync)
public struct PendingSyncChange: Sendable, Hashable {
    /// The model's stored name.
    public let model: String
    public let primaryKey: [UInt8]
    /// The record's id as sync names it (`KeyEncoding.syncID`).
    public let id: String
    /// Where the entry lies in the outbox: the next read starts after it.
    public let position: [UInt8]
    /// The outbox entry as read: an acknowledgement removes the entry only while it still holds this value.
    public let marker: UInt64
    /// Each property's stamp; empty for a tombstone.
    public let stamps: [String: SyncStamp]
    public let deleted: SyncStamp?
}

extension Store {
    /// Starts tracking the records of `models` for sync, in every process that writes this store from now on, and
    /// returns this store's device id (made at the first call). Records the models already hold are put in the
    /// outbox, stamped now. Calling it again with the same models changes nothing.
    ///
    /// - Throws: `StoreError.readOnly` for a read-only store; `.modelNotRegistered` for a model the configuration
    ///   does not name.
    @_spi(Sync)
    public func enableSync(models: [any Model.Type]) throws(StoreError) -> String {
        let infos = try models.map { (type) throws(StoreError) in try info(for: type) }
        let core = self.core
        do {
            return try write { transaction in
                let txn = try transaction.writable
                var tracked: Set<String> = []
                var device = ""
                try core.run("start sync in") {
                    _ = try txn.createDatabase(named: SyncStorage.recordsDatabase)
                    _ = try txn.createDatabase(named: SyncStorage.outboxDatabase)
                    var names =
                        try txn.get(core.meta, key: SyncStorage.modelsKey).flatMap(SyncStorage.decodeNames)
                        ?? []
                    tracked = Set(names)
                    let added = infos.filter { !tracked.contains($0.name) }
                    for info in added { names.append(info.name) }
                    // A model that syncs from now on changes the set its client syncs, and so the cursor it reads
                    // (`SyncStorage.cursorKey`): everything of the set is pulled again, and what this device has
                    // already merges to itself.
                    try txn.put(core.meta, key: SyncStorage.modelsKey, value: SyncStorage.encodeNames(names))
                    if let stored = try txn.get(core.meta, key: SyncStorage.devicesKey),
                        let devices = SyncStorage.decodeDevices(stored)
                    {
                        device = devices[0]
                    } else {
                        device = SyncStorage.newDeviceID()
                        try txn.put(core.meta, key: SyncStorage.devicesKey, value: SyncStorage.encodeDevices([device]))
                    }
                }
                // The models that sync from now on: their records go to the outbox.
                for (type, info) in zip(models, infos) where !tracked.contains(info.name) {
                    try transaction.trackExisting(type)
                }
                return device
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .from(error, path: core.path, operation: "start sync in", readerLimit: configuration.maxReaders)
        }
    }

    /// The name `type`'s records are stored under, as sync names the model.
    @_spi(Sync)
    public func storedName<M: Model>(of type: M.Type) throws(StoreError) -> String { try info(for: type).name }
}

extension WriteTransaction {
    /// Puts every record of `type` in the outbox (at `enableSync`).
    fileprivate func trackExisting<M: Model>(_ type: M.Type) throws(StoreError) {
        let state = try state(for: type)
        let txn = try writable
        try store.core.run("read") {
            try txn.walk(state.info.records) { entry in
                state.syncKeys.append(Array(entry.key))
                return true
            }
        }
    }

    /// Moves the cursor of the client that syncs `models` (stored names): committed with the records its pull
    /// brought. `nil` removes it, and the next pull starts from the beginning. With `pushed`, the newest transaction
    /// the client pushed instead.
    @_spi(Sync)
    public func setSyncCursor(_ cursor: SyncCursor?, models: [String], pushed: Bool = false) throws(StoreError) {
        let key = SyncStorage.cursorKey(models: models, pushed: pushed)
        let value = cursor.map { cursor in
            JSONValue.object([
                "models": .array(models.sorted().map(JSONValue.string)), "sequence": .integer(cursor.sequence),
                "commit": .string(cursor.commit),
            ]).serialized()
        }
        try putMeta(key, value)
    }

    /// Binds the store's sync state to a server and a user; `nil` unbinds it.
    @_spi(Sync)
    public func setSyncAccount(_ account: SyncAccount?) throws(StoreError) {
        try putMeta(
            SyncStorage.accountKey,
            account.map { JSONValue.object(["server": .string($0.server), "user": .string($0.user)]).serialized() })
    }

    private func putMeta(_ key: [UInt8], _ value: [UInt8]?) throws(StoreError) {
        let txn = try writable
        do {
            if let value {
                try txn.put(store.core.meta, key: key, value: value)
            } else {
                _ = try txn.delete(store.core.meta, key: key)
            }
        } catch {
            throw lmdbError(error, "write")
        }
    }

    /// Removes pushed changes from the outbox, each only while no later change of its record came meanwhile.
    @_spi(Sync)
    public func acknowledgeSync(_ changes: [PendingSyncChange]) throws(StoreError) {
        guard let session = try loadSyncSession() else { return }
        let txn = try writable
        do {
            for change in changes {
                let key = SyncStorage.key(model: change.model, primaryKey: change.primaryKey)
                guard let marker = try txn.get(session.databases.outbox, key: key), marker.count == 8,
                    UInt64(littleEndian: marker.loadUnaligned(as: UInt64.self)) == change.marker
                else { continue }
                _ = try txn.delete(session.databases.outbox, key: key)
            }
        } catch {
            throw lmdbError(error, "write")
        }
    }

    /// Deletes the record of `type` with `id` as a delete pulled from another device: the delete rules are followed,
    /// but a `.deny` rule does not stop it (the delete happened, and a delete wins); the links to it from records that
    /// stay are dropped, which is this device's change, pushed like any other.
    @_spi(Sync)
    public func deleteApplyingSync<M: Model>(_ type: M.Type, id: M.ID) throws(StoreError) {
        deletesDespiteDenyRules = true
        defer { deletesDespiteDenyRules = false }
        try delete(type, id: id)
    }

    /// Records that the stored record of `type` with `id`, just written (or deleted) from a pulled change, carries
    /// these stamps: its properties are not pushed back, and this device's later changes are stamped after them.
    /// A property the stored record has and `stamps` lacks keeps its tracked stamp; one with neither is stamped by
    /// this transaction as a change of this device.
    ///
    /// The properties in `changedHere` are stamped as this device's change instead, after every stamp seen, and the
    /// record goes to the outbox: a model's resolver chose a value the pulled state does not have.
    @_spi(Sync)
    public func adoptSyncState<M: Model>(
        _ type: M.Type, id: M.ID, stamps: [String: SyncStamp], deleted: SyncStamp?, changedHere: Set<String> = []
    ) throws(StoreError) {
        let state = try state(for: type)
        guard let session = state.syncSession else {
            throw .invalidSchema(model: state.info.name, reason: "it does not sync")
        }
        let primaryKey = try primaryKey(id, of: type)
        let model = state.info.name
        let key = SyncStorage.key(model: model, primaryKey: primaryKey)
        let txn = try writable
        for stamp in stamps.values + [deleted].compactMap({ $0 }) where !SyncStamp.isDeviceID(stamp.device) {
            throw .invalidSchema(
                model: state.info.name,
                reason: "a sync stamp names the device \"\(stamp.device.prefix(40))\", which is not one")
        }
        for stamp in stamps.values { session.observe(stamp) }
        if let deleted { session.observe(deleted) }
        let adopted: TrackedRecord
        if let deleted {
            adopted = TrackedRecord(deleted: deleted)
            do { _ = try txn.delete(session.databases.outbox, key: key) } catch { throw lmdbError(error, "write") }
        } else {
            let tracked = try session.trackedRecord(
                model: model, primaryKey: primaryKey, key: key, core: store.core, in: txn)
            let known = tracked?.stamps ?? [:]
            let stored: UnsafeRawBufferPointer?
            do { stored = try txn.get(state.info.records, key: primaryKey) } catch { throw lmdbError(error, "read") }
            let current =
                try stored.map { (bytes) throws(StoreError) in
                    try Self.fieldHashes(
                        bytes, dictionary: state.encoder.dictionary, model: model, primaryKey: primaryKey)
                } ?? []
            var fields: [String: TrackedRecord.Field] = [:]
            for (name, hash) in current {
                guard let stamp = stamps[name] ?? known[name] else { continue }
                fields[name] = TrackedRecord.Field(name: name, hash: hash, stamp: stamp)
            }
            for (name, stamp) in stamps where fields[name] == nil {
                fields[name] = TrackedRecord.Field(name: name, hash: TrackedRecord.absent, stamp: stamp)
            }
            let hashes = Dictionary(current.map { ($0.name, $0.hash) }, uniquingKeysWith: { a, _ in a })
            for name in changedHere {
                fields[name] = TrackedRecord.Field(
                    name: name, hash: hashes[name] ?? TrackedRecord.absent, stamp: session.stampForLocalChange())
            }
            adopted = TrackedRecord(fields: fields.values.sorted { $0.name < $1.name })
        }
        do {
            try session.write(adopted, key: key, in: txn)
            if !changedHere.isEmpty {
                let marker = session.stampForLocalChange().time
                try txn.put(
                    session.databases.outbox, key: key, value: withUnsafeBytes(of: marker.littleEndian, Array.init))
            }
        } catch {
            throw lmdbError(error, "write")
        }
    }
}

extension ReadScope {
    /// Sync's state as this scope sees it: a write transaction's own session, with the devices and clock it has
    /// changed and not written yet; for a snapshot, the stored one.
    fileprivate func syncSession(in txn: ReadTransaction) throws(StoreError) -> SyncSession? {
        if let transaction = self as? WriteTransaction { return try transaction.loadSyncSession() }
        return try SyncSession.load(core: store.core, in: txn)
    }

    /// Where the client that syncs `models` (stored names) stands; `nil` before its first pull. With `pushed`, the
    /// newest transaction it pushed, until it pulled past it.
    @_spi(Sync)
    public func syncCursor(models: [String], pushed: Bool = false) throws(StoreError) -> SyncCursor? {
        let key = SyncStorage.cursorKey(models: models, pushed: pushed)
        guard let json = try metaJSON(key, "sync cursor") else { return nil }
        return try Self.cursor(json, path: store.core.path)
    }

    /// Every client's cursor: the models it syncs, and where it stands.
    @_spi(Sync)
    public func syncCursors() throws(StoreError) -> [(models: [String], cursor: SyncCursor)] {
        let txn = try lmdb
        let lower = Array(SyncStorage.cursorPrefix.utf8)
        var found: [(models: [String], cursor: SyncCursor)] = []
        try store.core.run("read the sync state of") {
            try txn.walk(store.core.meta, range: KeyRange(lower: lower)) { entry in
                guard entry.key.starts(with: lower) else { return false }
                let json = try JSONValue(parsing: entry.value)
                let models = try JSONFields(json).array("models").compactMap { value -> String? in
                    if case .string(let name) = value { return name } else { return nil }
                }
                found.append((models, try Self.cursor(json, path: store.core.path)))
                return true
            }
        }
        return found
    }

    /// The server and user the store's sync state belongs to; `nil` before the first sync.
    @_spi(Sync)
    public func syncAccount() throws(StoreError) -> SyncAccount? {
        guard let json = try metaJSON(SyncStorage.accountKey, "sync account") else { return nil }
        do throws(JSONShapeError) {
            let fields = try JSONFields(json)
            return SyncAccount(server: try fields.string("server"), user: try fields.string("user"))
        } catch {
            throw .corruptedFile(path: store.core.path, reason: "the sync account is damaged (\(error))")
        }
    }

    private static func cursor(_ json: JSONValue, path: String) throws(StoreError) -> SyncCursor {
        do throws(JSONShapeError) {
            let fields = try JSONFields(json)
            return SyncCursor(sequence: try fields.integer("sequence"), commit: try fields.string("commit"))
        } catch {
            throw .corruptedFile(path: path, reason: "a sync cursor is damaged (\(error))")
        }
    }

    private func metaJSON(_ key: [UInt8], _ what: String) throws(StoreError) -> JSONValue? {
        let txn = try lmdb
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(store.core.meta, key: key) } catch { throw lmdbError(error, "read") }
        guard let stored else { return nil }
        do throws(JSONSyntaxError) {
            return try JSONValue(parsing: stored)
        } catch {
            throw .corruptedFile(path: store.core.path, reason: "the \(what) is damaged (\(error))")
        }
    }

    /// How many records wait in the outbox.
    @_spi(Sync)
    public func pendingSyncCount() throws(StoreError) -> Int {
        guard let databases = store.core.syncDatabases.withLock({ $0 }) else { return 0 }
        let txn = try lmdb
        do { return try txn.statistics(databases.outbox).entries } catch { throw lmdbError(error, "count") }
    }

    /// Up to `limit` records of the outbox, in key order (by model, then id), after the one at `position` when given;
    /// of `model` (a stored name) alone when given.
    @_spi(Sync)
    public func pendingSyncChanges(
        limit: Int, after position: [UInt8]? = nil, model: String? = nil
    ) throws(StoreError) -> [PendingSyncChange] {
        let txn = try lmdb
        guard let session = try syncSession(in: txn) else { return [] }
        var entries: [(model: String, primaryKey: [UInt8], key: [UInt8], marker: UInt64)] = []
        // The first key after `position` (`position` followed by the smallest byte), or the model's first.
        let prefix = model.map { SyncStorage.key(model: $0, primaryKey: []) } ?? []
        let range = KeyRange(lower: position.map { $0 + [0] } ?? (prefix.isEmpty ? nil : prefix))
        try store.core.run("read the outbox of") {
            try txn.walk(session.databases.outbox, range: range) { entry in
                guard entry.key.starts(with: prefix) else { return false }
                guard entry.value.count == 8, let (model, primaryKey) = SyncStorage.split(entry.key) else {
                    throw StoreError.corruptedFile(
                        path: store.core.path, reason: "an entry of the sync outbox is damaged")
                }
                let marker = UInt64(littleEndian: entry.value.loadUnaligned(as: UInt64.self))
                entries.append((model, primaryKey, Array(entry.key), marker))
                return entries.count < limit
            }
        }
        var changes: [PendingSyncChange] = []
        for entry in entries {
            guard let id = KeyEncoding.syncID(entry.primaryKey) else {
                throw .invalidSchema(model: entry.model, reason: "its ids cannot sync: use String, UUID or integer ids")
            }
            let tracked = try session.trackedRecord(
                model: entry.model, primaryKey: entry.primaryKey, key: entry.key, core: store.core, in: txn)
            changes.append(
                PendingSyncChange(
                    model: entry.model, primaryKey: entry.primaryKey, id: id, position: entry.key,
                    marker: entry.marker, stamps: tracked?.stamps ?? [:], deleted: tracked?.deleted))
        }
        return changes
    }

    /// Whether the record of `type` with `id` has a change of this device that is not pushed yet.
    @_spi(Sync)
    public func hasPendingSyncChange<M: Model>(_ type: M.Type, id: M.ID) throws(StoreError) -> Bool {
        guard let databases = store.core.syncDatabases.withLock({ $0 }) else { return false }
        let info = try modelInfo(for: type)
        let key = SyncStorage.key(model: info.name, primaryKey: try primaryKey(id, of: type))
        let txn = try lmdb
        do { return try txn.get(databases.outbox, key: key) != nil } catch { throw lmdbError(error, "read") }
    }

    /// The record of `type` stored under `primaryKey`, or `nil`.
    @_spi(Sync)
    public func object<M: Model>(_ type: M.Type, primaryKey: [UInt8]) throws(StoreError) -> M? {
        let info = try modelInfo(for: type)
        let txn = try lmdb
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(info.records, key: primaryKey) } catch { throw lmdbError(error, "read") }
        guard let stored else { return nil }
        return try decode(type, stored, key: primaryKey, info: info)
    }

    /// The tracked stamps of the record of `type` with `id`: `nil` when sync knows nothing of it. In a write
    /// transaction, what the transaction changed in the record so far is stamped first.
    @_spi(Sync)
    public func syncState<M: Model>(
        _ type: M.Type, id: M.ID
    ) throws(StoreError) -> (stamps: [String: SyncStamp], deleted: SyncStamp?)? {
        let info = try modelInfo(for: type)
        let primaryKey = try primaryKey(id, of: type)
        if let transaction = self as? WriteTransaction {
            try transaction.trackNow(primaryKey, of: try transaction.state(for: type))
        }
        let txn = try lmdb
        guard let session = try syncSession(in: txn) else { return nil }
        let key = SyncStorage.key(model: info.name, primaryKey: primaryKey)
        guard
            let tracked = try session.trackedRecord(
                model: info.name, primaryKey: primaryKey, key: key, core: store.core, in: txn)
        else { return nil }
        return (tracked.stamps, tracked.deleted)
    }
}

extension WriteTransaction {
    /// The links of `value` to records this transaction cannot see, by link position: those whose targets were
    /// deleted (a tombstone here says so), and the others, not here yet. Links that allow dangling targets are not
    /// asked.
    func missingLinkTargets<M: Model>(
        of value: M
    ) throws(StoreError) -> (deleted: [Int: [[UInt8]]], notHereYet: String?) {
        let state = try state(for: M.self)
        let txn = try writable
        var deleted: [Int: [[UInt8]]] = [:]
        for (position, relationship) in M.schema.links.enumerated() {
            let link = state.info.links[position]
            guard !link.allowsDangling else { continue }
            let target = try store.info(linkedBy: link)
            for key in try targetKeys(relationship, of: value) {
                let exists = try store.core.run("check the links of") { try txn.get(target.records, key: key) != nil }
                guard !exists else { continue }
                let syncKey = SyncStorage.key(model: target.name, primaryKey: key)
                let tracked = try state.syncSession?.trackedRecord(
                    model: target.name, primaryKey: key, key: syncKey, core: store.core, in: txn)
                guard tracked?.deleted != nil else { return ([:], "\(target.name) \(KeyEncoding.describe(key))") }
                deleted[position, default: []].append(key)
            }
        }
        return (deleted, nil)
    }

    /// Writes `value`, a record pulled from another device, with `stamps` (as `adoptSyncState`, `changedHere` too),
    /// or says why it must wait: a link to a record not here yet, a target another record holds through an
    /// exclusive link, a unique value another record has; the change then waits for the changes that resolve it,
    /// instead of failing the pull.
    ///
    /// A link to a record deleted on some device (a tombstone here) is dropped once the record is written: the same
    /// change the linking device makes when the delete reaches it, made here too, so that no device waits for a
    /// target that never comes. The drop is this device's change, pushed like any other.
    @_spi(Sync)
    public func writePulled<M: Model>(
        _ value: M, stamps: [String: SyncStamp], changedHere: Set<String> = []
    ) throws(StoreError) -> String? {
        let links = try missingLinkTargets(of: value)
        if let missing = links.notHereYet { return "it links to \(missing), not here yet" }
        let state = try state(for: M.self)
        let key = try primaryKey(value.id, of: M.self)
        for (position, relationship) in M.schema.links.enumerated() where state.info.links[position].isExclusive {
            let link = state.info.links[position]
            for target in try targetKeys(relationship, of: value) {
                if let holder = try sources(linkingTo: target, via: link).first(where: { $0 != key }) {
                    return "\(link.label) links to the target \(KeyEncoding.describe(target)), which the record "
                        + "\(KeyEncoding.describe(holder)) holds"
                }
            }
        }
        if let conflict = try uniqueConflict(of: value, primaryKey: key, state: state) { return conflict }
        let owned = unlinkedOwned.count
        try upsert(value)
        // An owned target a pulled record lets go of is not collected here: the device that made the change moved it
        // to another owner (which may come in a later page) or deleted it (its tombstone comes too).
        unlinkedOwned.removeSubrange(owned...)
        try adoptSyncState(M.self, id: value.id, stamps: stamps, deleted: nil, changedHere: changedHere)
        if !links.deleted.isEmpty {
            try state.info.operations.removeLinks(self, state.info, key, links.deleted)
            // The links it held to them were added by this write: they are gone again.
            let dropped = Set(links.deleted.values.joined().map { KeyBytes($0) })
            linksToCheck.removeAll { $0.source == key && dropped.contains(KeyBytes($0.target)) }
        }
        return nil
    }
}

extension Store {
    /// Returns once a commit of this or another process changed one of `models` (stored names) after `version`, or
    /// the task is cancelled: the sync client pushes after each.
    @_spi(Sync)
    public func waitForCommit(after version: StoreVersion, changing models: Set<String>) async {
        await core.commits.wait(beyond: version.rawValue, reading: models)
    }

    /// The top-level properties of `type`'s records, by their coding keys: the keys its records were seen written
    /// with in this process (its first write, or the first record opening decoded), then its stored properties'
    /// names that are not among them. A `@Record` model's generated description names them.
    @_spi(Sync)
    public func propertyNames<M: Model>(of type: M.Type) throws(StoreError) -> [String] {
        if let keys = M._recordKeys { return keys.names }
        if CodableFields.writtenKeys(M.self) == nil { try learnKeys(of: M.self) }
        let written = CodableFields.writtenKeys(M.self) ?? []
        return written + (try M.describedSchema().properties.map(\.name)).filter { !written.contains($0) }
    }

    /// The top-level properties every record of `type` holds (those that are not optional), by coding key: its
    /// stored properties, as its type describes them, that its records are written with. Empty until the model's
    /// keys are known (nothing is required that a record might name otherwise).
    @_spi(Sync)
    public func requiredPropertyNames<M: Model>(of type: M.Type) throws(StoreError) -> [String] {
        let keys: Set<String>
        if let recordKeys = M._recordKeys {
            keys = Set(recordKeys.names)
        } else {
            if CodableFields.writtenKeys(M.self) == nil { try learnKeys(of: M.self) }
            guard let written = CodableFields.writtenKeys(M.self) else { return [] }
            keys = Set(written)
        }
        return try M.describedSchema().properties.filter { !$0.isOptional && keys.contains($0.name) }.map(\.name)
    }

    /// Decodes `M`'s stored records until one reads (a few at most), and learns its keys from it written again.
    private func learnKeys<M: Model>(of type: M.Type) throws(StoreError) {
        let info = try info(for: M.self)
        try core.run("read the records of \(info.name)") {
            try core.environment.read { txn in
                let dictionary = info.dictionary
                let decoder = RecordDecoder()
                var tried = 0
                try txn.walk(info.records) { entry in
                    tried += 1
                    guard let value = try? decoder.decodeRecord(M.self, from: entry.value, dictionary: dictionary)
                    else { return tried < 16 }
                    CodableFields.learn(from: value, dictionary: dictionary)
                    return false
                }
            }
        }
    }

    /// Whether `type` numbers its ids from a sequence (`autoIncrement`).
    @_spi(Sync)
    public func numbersIDs<M: Model>(_ type: M.Type) -> Bool { M.schema.sequence != nil }

    /// The stored names of the models `type` links to.
    @_spi(Sync)
    public func linkTargets<M: Model>(of type: M.Type) throws(StoreError) -> [String] {
        try info(for: type).links.map(\.targetName)
    }
}

extension ReadScope {
    /// The values the sync client keeps in the store under names starting with `prefix`, in name order.
    @_spi(Sync)
    public func syncValues(prefix: String) throws(StoreError) -> [(name: String, value: [UInt8])] {
        let txn = try lmdb
        let lower = Array((SyncStorage.clientValuePrefix + prefix).utf8)
        var found: [(name: String, value: [UInt8])] = []
        try store.core.run("read the sync state of") {
            try txn.walk(store.core.meta, range: KeyRange(lower: lower, upper: nil)) { entry in
                guard entry.key.starts(with: lower) else { return false }
                let name = String(
                    decoding: entry.key.dropFirst(SyncStorage.clientValuePrefix.utf8.count), as: UTF8.self)
                found.append((name, Array(entry.value)))
                return true
            }
        }
        return found
    }
}

extension WriteTransaction {
    /// Keeps `value` under `name` for the sync client, in this transaction; `nil` removes it.
    @_spi(Sync)
    public func setSyncValue(_ value: [UInt8]?, name: String) throws(StoreError) {
        let txn = try writable
        let key = Array((SyncStorage.clientValuePrefix + name).utf8)
        do {
            if let value {
                try txn.put(store.core.meta, key: key, value: value)
            } else {
                _ = try txn.delete(store.core.meta, key: key)
            }
        } catch {
            throw lmdbError(error, "write")
        }
    }
}

/// The sync clock of this process, for tests of devices whose clocks are wrong.
@_spi(Testing)
public enum SyncClock {
    /// Sets this process's sync clock `milliseconds` away from the system's (negative: behind).
    public static func setOffset(milliseconds: Int64) {
        SyncStorage.clockOffset.store(milliseconds, ordering: .relaxed)
    }
}

extension WriteTransaction {
    /// The unique index value of `value` another record holds, in words, or `nil`.
    fileprivate func uniqueConflict<M: Model>(
        of value: M, primaryKey: [UInt8], state: ModelWriteState
    ) throws(StoreError) -> String? {
        let txn = try lmdb
        let writer = indexWriter(state)
        for position in state.indexEntries.indices where !state.indexEntries[position].isMultiEntry {
            let index = state.indexEntries[position]
            let entry = try withUnsafePointer(to: value) { (pointer) throws(StoreError) in
                try writer.entry(index, of: pointer)
            }
            guard entry.mustBeUnique else { continue }
            do {
                try writer.checkUnique(
                    index.name, key: entry.key, primaryKey: primaryKey, in: state.info.indexes[position], txn: txn)
            } catch {
                guard case .uniqueConstraintViolated(_, let name, let shared) = error else { throw error }
                return "its \(name) is \(shared), which another \(state.info.name) here has"
            }
        }
        return nil
    }
}
