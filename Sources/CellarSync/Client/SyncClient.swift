@_spi(Sync) import Cellar
import CellarSyncProtocol
import Foundation

/// Syncs a store's records with a Cellar sync server, for one user, in both directions.
///
/// ```swift
/// let sync = try SyncClient(store: store, configuration: .init(
///     server: URL(string: "https://sync.example.com")!, token: token, models: [Note.self, Folder.self]))
/// await sync.start()          // pushes each commit, and pulls other devices' changes as they happen
/// try await sync.sync()       // or one round now: push everything pending, pull everything new
/// ```
///
/// Every change to a synced model is recorded in the same transaction as the change itself (the outbox), by any
/// process that writes the store, so a change made offline, or just before the app was killed, is pushed later.
/// Pulled changes are written through the store like the app's own writes: indexes, backlinks, delete rules and
/// observers see them as any commit. Conflicts resolve per property, the later write winning, and a delete wins
/// over updates (`RecordState`).
public actor SyncClient {
    public nonisolated let store: Store
    /// This store's device id: 32 hex digits, made when the store first synced.
    public nonisolated let device: String
    private let configuration: SyncConfiguration
    private let models: [String: SyncedModel]
    /// What each request tells the server of the models (``SyncedModel/schema``).
    private var schemas: [String: CellarSyncProtocol.ModelSchema] { models.mapValues { $0.schema() } }

    /// `schemas` with every property a change of `changes` sets: a property is declared whenever it is pushed, so the
    /// server never refuses a field the model writes, whatever the store has learnt of its keys.
    static func declaring(
        _ changes: [RecordChange], in schemas: [String: CellarSyncProtocol.ModelSchema]
    ) -> [String: CellarSyncProtocol.ModelSchema] {
        var schemas = schemas
        for change in changes {
            guard var schema = schemas[change.model] else { continue }
            let missing = change.state.fields.keys.filter { !schema.properties.contains($0) }
            guard !missing.isEmpty else { continue }
            schema.properties += missing.sorted()
            schemas[change.model] = schema
        }
        return schemas
    }
    /// The models in the order their changes are pushed: a model after the models it links to, so that a device
    /// that pulls meets a link's target before the record that links to it.
    private let pushOrder: [String]

    /// `links`' models (each with the models it links to), each after its targets; models that link in a cycle in
    /// name order.
    static func targetsFirst(_ links: [String: [String]]) -> [String] {
        var order: [String] = []
        var placed = Set<String>()
        var visiting = Set<String>()
        func place(_ model: String) {
            guard !placed.contains(model), visiting.insert(model).inserted else { return }
            for target in (links[model] ?? []).sorted() where links[target] != nil { place(target) }
            placed.insert(model)
            order.append(model)
        }
        for model in links.keys.sorted() { place(model) }
        return order
    }

    private var transport: HTTPTransport
    /// The server and user this run of the client checked the store against (``ensureSession()``); `nil` until
    /// its first request, and again after a new token.
    private var session: SyncAccount?
    /// The stored names of the models, sorted: they name this client's cursor.
    private var modelNames: [String] { models.keys.sorted() }
    private var signedOut = false
    /// Counts sign-outs, resets and new tokens: a request sent before one of them is not applied after it (its answer
    /// belongs to the state before).
    private var epoch = 0
    /// The server a store must adopt in a reset the app starts (`.manual`): the one the last session answered.
    private var serverToAdopt: String?
    private var status = SyncStatus()
    private var watchers: [UUID: AsyncStream<SyncStatus>.Continuation] = [:]
    private var live: Task<Void, Never>?
    /// Why a record in the outbox cannot be pushed (an id too long, a string with U+0000), when one cannot: the
    /// status says so instead of "up to date".
    private var unsyncable: String?

    /// Prepares `store` to sync `configuration.models`; nothing is sent until ``sync()`` or ``start()``.
    ///
    /// - Throws: `SyncError.autoIncrementModel`, `.unsupportedID` or `.linkToUnsyncedModel` for a model that cannot
    ///   sync, with the reason in words; `.store` when the store cannot record changes (a read-only store).
    public init(store: Store, configuration: SyncConfiguration) throws(SyncError) {
        var models: [String: SyncedModel] = [:]
        for type in configuration.models {
            let model = try SyncedModel(type, store: store, schemaVersion: store.configuration.schemaVersion)
            models[model.name] = model
        }
        var targetsByModel: [String: [String]] = [:]
        for type in configuration.models {
            let name = models.values.first { $0.name == (try? store.storedName(of: type)) }?.name ?? "\(type)"
            let targets: [String]
            do { targets = try store.linkTargets(of: type) } catch { throw .store(error) }
            for target in targets where models[target] == nil {
                throw .linkToUnsyncedModel(model: name, target: target)
            }
            targetsByModel[name] = targets
        }
        pushOrder = Self.targetsFirst(targetsByModel)
        do { device = try store.enableSync(models: configuration.models) } catch { throw .store(error) }
        self.store = store
        self.configuration = configuration
        self.models = models
        self.transport = HTTPTransport(server: configuration.server, token: configuration.token)
    }

    // MARK: Status

    /// What the client is doing now.
    public var currentStatus: SyncStatus { status }

    /// The status now, then each change of it, until the task iterating it ends.
    public nonisolated func statusUpdates() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        continuation.onTermination = { _ in Task { await self.removeWatcher(id) } }
        Task { await self.addWatcher(id, continuation) }
        return stream
    }

    private func addWatcher(_ id: UUID, _ continuation: AsyncStream<SyncStatus>.Continuation) {
        watchers[id] = continuation
        continuation.yield(status)
    }

    private func removeWatcher(_ id: UUID) { watchers[id] = nil }

    private func update(_ activity: SyncStatus.Activity? = nil, synced: Bool = false) {
        var next = status
        if let activity { next.activity = activity == .upToDate ? unsyncable.map { .error($0) } ?? activity : activity }
        next.pendingChanges = (try? store.read { try $0.pendingSyncCount() }) ?? next.pendingChanges
        next.waitingChanges = (try? store.read { try $0.syncValues(prefix: Self.waitingPrefix).count }) ?? 0
        if synced { next.lastSynced = Date() }
        guard next != status else { return }
        status = next
        for watcher in watchers.values { watcher.yield(next) }
    }

    // MARK: One round

    /// Pulls every change the server has for this user, then pushes every change waiting in the outbox.
    ///
    /// Pulling first lets a model's resolver (``SyncResolving``) meet the other devices' changes before this device's
    /// go out; for every other model the order makes no difference to the outcome.
    public func sync() async throws(SyncError) {
        do {
            try await pullAll(wait: 0)
            try await pushAll()
            update(.upToDate, synced: true)
        } catch {
            update(Self.activity(after: error))
            throw error
        }
    }

    /// Pushes what the outbox holds, in batches; returns how many records were pushed.
    @discardableResult
    public func pushAll() async throws(SyncError) -> Int {
        let account = try await ensureSession()
        let names = modelNames
        var pushed = 0
        var unstorable: [String] = []
        // Model by model, link targets first.
        for model in pushOrder {
            let (count, refused) = try await pushOutbox(of: model, account: account, names: names)
            pushed += count
            unstorable += refused
        }
        unsyncable = unstorable.first
        update()
        return pushed
    }

    /// Pushes what the outbox holds of `model`, in batches; returns how many records were pushed, and why others
    /// cannot be.
    private func pushOutbox(
        of model: String, account: SyncAccount, names: [String]
    ) async throws(SyncError) -> (pushed: Int, unstorable: [String]) {
        var pushed = 0
        var position: [UInt8]?
        var unstorable: [String] = []
        while true {
            // One pass over the outbox: entries that cannot go (a record no server stores) are passed over, not read
            // again.
            let batch = try readPushBatch(of: model, after: position)
            guard let last = batch.last else { break }
            position = last
            unstorable += batch.unstorable
            var commit: SyncCursor?
            var refused: Set<String> = []
            if !batch.changes.isEmpty {
                update(.pushing)
                let request = PushRequest(
                    device: device, user: account.user, models: Self.declaring(batch.changes, in: schemas),
                    changes: batch.changes)
                configuration.onPush?(.willSend)
                let sent = epoch
                let response: PushResponse
                do {
                    response = try await transport.post(SyncProtocol.pushPath, request)
                } catch .server(let failure) where failure.code == .invalidStamp {
                    // The clock moved since it was measured: measured again at the next try.
                    session = nil
                    throw .server(failure)
                }
                configuration.onPush?(.didSend)
                // Signed out or reset meanwhile: what this push did belongs to the state before (the entries it
                // sent, if still there, go again).
                guard sent == epoch else { throw signedOut ? .signedOut : .interrupted }
                commit = response.commit
                refused = Set(response.refused.map { "\($0.model)/\($0.id)" })
                unstorable += response.refused.map {
                    "the \($0.model) with id \($0.id.prefix(80)) was refused: \($0.failure.reason)"
                }
            }
            try write { txn in
                // The newest transaction pushed, whatever order answers came in.
                if let commit, commit.sequence > (try txn.syncCursor(models: names, pushed: true)?.sequence ?? 0) {
                    try txn.setSyncCursor(commit, models: names, pushed: true)
                }
                // A refused change stays in the outbox.
                try txn.acknowledgeSync(
                    batch.pending.filter { !refused.contains("\($0.model)/\($0.id)") } + batch.dropped)
                for change in batch.changes where models[change.model]?.keepsBase == true {
                    try keepBase(change, in: txn)
                }
            }
            pushed += batch.changes.count
            if !batch.full { break }
        }
        return (pushed, unstorable)
    }

    /// Pulls until the server has nothing newer; with `wait`, the first request waits up to that many seconds for a
    /// change (long poll). Returns how many changes were applied.
    ///
    /// When the server cannot vouch for where this device stands, a client reset runs first, as the configuration's
    /// ``ClientResetMode`` says.
    @discardableResult
    public func pullAll(wait: Int = 0) async throws(SyncError) -> Int {
        do {
            return try await pullPages(wait: wait)
        } catch .server(let failure) where failure.code == .resetRequired {
            return try await reset(reason: failure.reason, mode: configuration.clientReset)
        }
    }

    private func pullPages(wait: Int) async throws(SyncError) -> Int {
        let account = try await ensureSession()
        let names = modelNames
        var applied = 0
        var wait = wait
        while true {
            let (cursor, pushed) = try read { scope in
                (try scope.syncCursor(models: names), try scope.syncCursor(models: names, pushed: true))
            }
            let request = PullRequest(
                device: device, user: account.user, server: account.server, models: schemas, cursor: cursor,
                pushed: pushed, limit: configuration.pullBatchSize, wait: wait)
            let started = ContinuousClock.now
            let sent = epoch
            let response: PullResponse = try await transport.post(SyncProtocol.pullPath, request, waiting: wait)
            // A sign-out, a reset or a new token came meanwhile: this answer belongs to the state before.
            guard sent == epoch else { throw signedOut ? .signedOut : .interrupted }
            // A long poll's answer comes at its end: only a prompt one measures the clock.
            if let time = response.time, wait == 0 { try alignClock(time, roundTrip: ContinuousClock.now - started) }
            wait = 0
            if !response.changes.isEmpty { update(.pulling) }
            // Nothing new (a long poll that ended empty): no commit, no fsync.
            if !response.changes.isEmpty || response.cursor != cursor {
                applied += try apply(response, after: cursor)
            }
            if !response.more { break }
        }
        update()
        return applied
    }

    // MARK: Account and client reset

    /// Asks the server which server it is and whom the token signs in as, once per run of the client (and after
    /// a new token), and holds the store to both: the store's sync state belongs to one user, and to the history
    /// of one server.
    ///
    /// - Throws: ``SyncError/signedInAsAnotherUser(storeUser:tokenUser:)`` when the store belongs to another user.
    private func ensureSession() async throws(SyncError) -> SyncAccount {
        if signedOut { throw .signedOut }
        if let session { return session }
        let started = ContinuousClock.now
        let sent = epoch
        let response: SessionResponse = try await transport.post(
            SyncProtocol.sessionPath, SessionRequest(device: device))
        if signedOut { throw .signedOut }
        // A new token or a reset came meanwhile: ask again.
        guard sent == epoch else { return try await ensureSession() }
        try alignClock(response.time, roundTrip: ContinuousClock.now - started)
        let answered = SyncAccount(server: response.server, user: response.user)
        if let session { return session }
        let stored = try read { try $0.syncAccount() }
        if let stored, stored.user != answered.user {
            throw .signedInAsAnotherUser(storeUser: stored.user, tokenUser: answered.user)
        }
        if stored == nil {
            // The store's first sync with this user: bound from now on.
            try write { try $0.setSyncAccount(answered) }
        }
        session = answered
        if let stored, stored.server != answered.server {
            // Another server, or its database made again: the store's cursor means nothing to it.
            session = stored
            serverToAdopt = answered.server
            _ = try await reset(
                reason: "the server is not the one this store synced with (\(stored.server) before, "
                    + "\(answered.server) now)",
                mode: configuration.clientReset, server: answered.server)
        }
        return answered
    }

    /// Keeps the server's clock against this machine's, and stamps again changes this device made while its clock
    /// was far ahead (`Store.alignSyncClock`).
    private func alignClock(_ serverMilliseconds: Int64, roundTrip: Duration) throws(SyncError) {
        do { try store.alignSyncClock(serverMilliseconds: serverMilliseconds, roundTrip: roundTrip) } catch {
            throw .store(error)
        }
    }

    /// Resets this client: forgets where it stood, recovers or discards this device's records as `mode` says,
    /// downloads what the server has, and pushes what it lacks. Called by the client when the server asks for it
    /// (or the app, in `.manual` mode, after ``SyncError/clientResetRequired(reason:)``).
    @discardableResult
    public func resetClient(_ mode: ClientResetMode) async throws(SyncError) -> Int {
        try await reset(reason: "the app asked for it", mode: mode == .manual ? .recoverUnsyncedChanges : mode)
    }

    private func reset(reason: String, mode: ClientResetMode, server: String? = nil) async throws(SyncError) -> Int {
        guard mode != .manual else { throw .clientResetRequired(reason: reason) }
        if signedOut { throw .signedOut }
        // Pulls and pushes sent before the reset are not applied after it.
        epoch += 1
        let server = server ?? serverToAdopt
        configuration.onClientReset?(.willReset(reason: reason, mode: mode))
        update(.resetting)
        let names = modelNames
        var account = try read { try $0.syncAccount() }
        if let server { account?.server = server }
        switch mode {
        case .discardUnsyncedChanges:
            var prefixes: [String] = []
            for name in names {
                prefixes.append(Self.waitingPrefix + name + "/")
                prefixes.append(SyncedModel.baseName(model: name, id: ""))
            }
            do {
                try store.discardSyncedRecords(
                    of: configuration.models, clientValuePrefixes: prefixes, newDevice: false)
            } catch {
                throw .store(error)
            }
            try write { txn in
                try txn.setSyncCursor(nil, models: names)
                try txn.setSyncCursor(nil, models: names, pushed: true)
                try txn.setSyncAccount(account)
            }
        case .recoverUnsyncedChanges, .manual:
            try write { txn in
                _ = try txn.requeueSyncedRecords(models: Set(names))
                try txn.setSyncCursor(nil, models: names)
                try txn.setSyncCursor(nil, models: names, pushed: true)
                try txn.setSyncAccount(account)
            }
        }
        if let account { session = account }
        serverToAdopt = nil
        let applied = try await pullPages(wait: 0)
        let repushed = try await pushAll()
        configuration.onClientReset?(.didReset(mode: mode, repushed: mode == .discardUnsyncedChanges ? 0 : repushed))
        update(.upToDate, synced: true)
        return applied
    }

    /// Hands the client a new token (one about to expire, or refreshed by the app's backend): the next request
    /// uses it, and checks again that it signs in as the store's user.
    public func updateToken(_ token: String) {
        transport.token = token
        session = nil
        epoch += 1
    }

    /// Signs this store out of sync: deletes here every record of the synced models and everything sync kept (its
    /// device id, cursors, the outbox), so that the next user's client starts as a new device with nothing of this
    /// user's. The records stay on the server, for this user's next sign-in here or on another device. This client
    /// stops, and cannot be used again.
    ///
    /// Realm's `logOut` keeps a user's records in a file of their own; with Cellar, give each user a store of their own
    /// (a folder per user) to keep them, and sign out a store that must serve the next user.
    ///
    /// - Throws: ``SyncError/unsyncedChanges(count:)`` when changes wait to be pushed, unless `discardingUnsyncedChanges`;
    ///   ``SyncError/signOutMissesModels(_:)`` when the store syncs models this client's configuration does not name.
    public func signOut(discardingUnsyncedChanges: Bool = false) async throws(SyncError) {
        stop()
        // Whatever is in flight (a pull of this user, a push's answer) is not applied after this.
        epoch += 1
        let missing: [String]
        do { missing = try store.syncedModelNames().filter { models[$0] == nil } } catch { throw .store(error) }
        guard missing.isEmpty else { throw .signOutMissesModels(missing.sorted()) }
        let pending = try read { try $0.pendingSyncCount() }
        guard pending == 0 || discardingUnsyncedChanges else { throw .unsyncedChanges(count: pending) }
        do {
            try store.discardSyncedRecords(of: configuration.models, clientValuePrefixes: [""], newDevice: true)
        } catch {
            throw .store(error)
        }
        session = nil
        signedOut = true
        update(.idle)
    }

    // MARK: Live

    /// Syncs from now on: pushes after each commit to a synced model (from any process), and waits on the server for
    /// other devices' changes. Failures are retried, waiting longer each time; ``currentStatus`` says what happens.
    public func start() {
        guard live == nil, !signedOut else { return }
        live = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.pushLoop() }
                group.addTask { await self.pullLoop() }
            }
        }
    }

    /// Stops syncing; what is pending stays in the outbox.
    public func stop() {
        live?.cancel()
        live = nil
        update(.idle)
    }

    private func pushLoop() async {
        let names = Set(models.keys)
        var delay = configuration.retryDelay
        while !Task.isCancelled {
            let version = store.version
            do {
                try await pushAll()
                delay = configuration.retryDelay
                if status.pendingChanges == 0, status.activity == .pushing { update(.upToDate, synced: true) }
            } catch {
                update(Self.activity(after: error))
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(60))
                continue
            }
            await store.waitForCommit(after: version, changing: names)
        }
    }

    private func pullLoop() async {
        var delay = configuration.retryDelay
        var wait = 0
        while !Task.isCancelled {
            do {
                try await pullAll(wait: wait)
                if status.pendingChanges == 0 { update(.upToDate, synced: true) }
                wait = configuration.liveWait
                delay = configuration.retryDelay
            } catch {
                update(Self.activity(after: error))
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(60))
                wait = 0
            }
        }
    }

    // MARK: Store access

    private struct PushBatch {
        /// The entries pushed, one per change.
        var pending: [PendingSyncChange] = []
        var changes: [RecordChange] = []
        /// Outbox entries with nothing to push: a record made and deleted before it was pushed.
        var dropped: [PendingSyncChange] = []
        /// Why records in the outbox cannot be pushed at all, in words.
        var unstorable: [String] = []
        /// Where the last entry this batch took or passed over lies: the next batch reads after it.
        var last: [UInt8]?
        /// Whether the outbox may hold more after this batch.
        var full = false

        mutating func passed(_ pending: PendingSyncChange) { last = pending.position }
    }

    private func readPushBatch(of model: String, after position: [UInt8]?) throws(SyncError) -> PushBatch {
        try read { scope in
            var batch = PushBatch()
            let read = try scope.pendingSyncChanges(
                limit: configuration.pushBatchSize, after: position, model: model)
            var bytes = 0
            for pending in read {
                // A model another configuration of this store syncs: its own client pushes it.
                guard let model = models[pending.model] else {
                    batch.passed(pending)
                    continue
                }
                let state: RecordState?
                do {
                    state = try model.pushState(scope, pending)
                } catch let error as StoreError {
                    throw error
                } catch {
                    // Its `Codable` JSON cannot be made, or read back (nested too deep, a key twice).
                    batch.unstorable.append(Self.cannotSync(pending, "its JSON cannot be made (\(error))"))
                    batch.passed(pending)
                    continue
                }
                guard let state else {
                    batch.dropped.append(pending)
                    batch.passed(pending)
                    continue
                }
                let change = RecordChange(model: pending.model, id: pending.id, state: state)
                let size = change.json.serializedSize
                if let reason = change.unstorableReason
                    ?? (size > Self.changeBudget
                        ? "its JSON is \(size) bytes; a server reads at most \(SyncProtocol.maxBodyBytes) in one request"
                        : nil)
                {
                    // Left in the outbox, and said: the changes after it go all the same.
                    batch.unstorable.append(Self.cannotSync(pending, reason))
                    batch.passed(pending)
                    continue
                }
                // A batch stays well under the body a server reads; the rest goes in the next.
                if bytes + size > Self.changeBudget, !batch.changes.isEmpty { break }
                bytes += size
                batch.pending.append(pending)
                batch.changes.append(change)
                batch.passed(pending)
            }
            batch.full = read.count == configuration.pushBatchSize || batch.last != read.last?.position
            return batch
        }
    }

    /// The most bytes of changes one push carries: half what a server reads, for the request around them.
    static let changeBudget = SyncProtocol.maxBodyBytes / 2

    private static func cannotSync(_ pending: PendingSyncChange, _ reason: String) -> String {
        "the \(pending.model) with id \(pending.id.prefix(80)) cannot sync: \(reason)"
    }

    /// Applies one pull's changes, retries the changes that waited for a link's target, and moves the cursor: all
    /// in one transaction.
    private func apply(_ response: PullResponse, after cursor: SyncCursor?) throws(SyncError) -> Int {
        try write { txn in
            // Another pull of this client moved the cursor since this one was asked: its page is stale.
            guard try txn.syncCursor(models: modelNames) == cursor else { return 0 }
            var applied = 0
            var waiting = Dictionary(
                try txn.syncValues(prefix: Self.waitingPrefix).compactMap { entry in
                    (try? RecordChange(jsonBytes: entry.value)).map { (entry.name, $0) }
                }, uniquingKeysWith: { a, _ in a })
            func name(_ change: RecordChange) -> String { Self.waitingPrefix + change.model + "/" + change.id }
            func attempt(_ change: RecordChange) throws -> Bool {
                // A model this app does not sync (a newer version of it does): nothing here to change.
                guard let model = models[change.model] else { return true }
                switch try model.apply(txn, change) {
                case .applied:
                    applied += 1
                    return true
                case .unchanged: return true
                case .waiting: return false
                }
            }
            for change in response.changes {
                var incoming = change
                let key = name(change)
                if let earlier = waiting[key] { incoming.state = earlier.state.merged(with: change.state) }
                if try attempt(incoming) {
                    if waiting.removeValue(forKey: key) != nil { try txn.setSyncValue(nil, name: key) }
                } else {
                    waiting[key] = incoming
                    try txn.setSyncValue(incoming.jsonBytes, name: key)
                }
                // What the server holds now is the base of the next conflict (after this one was resolved).
                if models[change.model]?.keepsBase == true { try keepBase(change, in: txn) }
            }
            // A change that waited for a target this pull brought (or that came later in it) goes in now.
            var progressed = true
            while progressed, !waiting.isEmpty {
                progressed = false
                for (key, change) in waiting.sorted(by: { $0.key < $1.key }) where try attempt(change) {
                    waiting[key] = nil
                    try txn.setSyncValue(nil, name: key)
                    progressed = true
                }
            }
            if let cursor = response.cursor {
                try txn.setSyncCursor(cursor, models: modelNames)
                // Past the newest transaction this client pushed: the cursor vouches for it from now on.
                if let pushed = try txn.syncCursor(models: modelNames, pushed: true), pushed.sequence <= cursor.sequence
                {
                    try txn.setSyncCursor(nil, models: modelNames, pushed: true)
                }
            }
            return applied
        }
    }

    /// Keeps the state the server has of a record, as the base a model's resolver compares with.
    private func keepBase(_ change: RecordChange, in txn: WriteTransaction) throws {
        let name = SyncedModel.baseName(model: change.model, id: change.id)
        if change.state.deleted != nil {
            try txn.setSyncValue(nil, name: name)
        } else {
            try txn.setSyncValue(JSONValue.object(change.state.fields).serialized(), name: name)
        }
    }

    static let waitingPrefix = "waiting/"

    private func read<R>(_ body: (Snapshot) throws -> R) throws(SyncError) -> R {
        do { return try store.read(body) } catch { throw Self.syncError(error) }
    }

    private func write<R>(_ body: (WriteTransaction) throws -> R) throws(SyncError) -> R {
        do { return try store.write(body) } catch { throw Self.syncError(error) }
    }

    private static func syncError(_ error: any Error) -> SyncError {
        if let error = error as? SyncError { return error }
        if let error = error as? StoreError { return .store(error) }
        return .unreachable(reason: "\(error)")
    }

    private static func activity(after error: SyncError) -> SyncStatus.Activity {
        if case .unreachable = error { return .offline }
        return .error(error.description)
    }
}
