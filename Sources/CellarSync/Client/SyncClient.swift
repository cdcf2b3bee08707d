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
    private let transport: HTTPTransport
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
        for type in configuration.models {
            let name = models.values.first { $0.name == (try? store.storedName(of: type)) }?.name ?? "\(type)"
            let targets: [String]
            do { targets = try store.linkTargets(of: type) } catch { throw .store(error) }
            for target in targets where models[target] == nil {
                throw .linkToUnsyncedModel(model: name, target: target)
            }
        }
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
        var pushed = 0
        var position: [UInt8]?
        var unstorable: [String] = []
        while true {
            // One pass over the outbox: entries that cannot go (another client's model, a record no server stores)
            // are passed over, not read again.
            let batch = try readPushBatch(after: position)
            guard let last = batch.last else { break }
            position = last
            unstorable += batch.unstorable
            if !batch.changes.isEmpty {
                update(.pushing)
                let request = PushRequest(
                    device: device, models: Self.declaring(batch.changes, in: schemas), changes: batch.changes)
                configuration.onPush?(.willSend)
                let _: PushResponse = try await transport.post(SyncProtocol.pushPath, request)
                configuration.onPush?(.didSend)
            }
            try write { txn in
                try txn.acknowledgeSync(batch.pending + batch.dropped)
                for change in batch.changes where models[change.model]?.keepsBase == true {
                    try keepBase(change, in: txn)
                }
            }
            pushed += batch.changes.count
            if !batch.full { break }
        }
        unsyncable = unstorable.first
        update()
        return pushed
    }

    /// Pulls until the server has nothing newer; with `wait`, the first request waits up to that many seconds for a
    /// change (long poll). Returns how many changes were applied.
    @discardableResult
    public func pullAll(wait: Int = 0) async throws(SyncError) -> Int {
        var applied = 0
        var wait = wait
        while true {
            let after = try read { try $0.syncCursor() }
            let request = PullRequest(
                device: device, models: schemas, after: after, limit: configuration.pullBatchSize, wait: wait)
            let response: PullResponse = try await transport.post(SyncProtocol.pullPath, request, waiting: wait)
            wait = 0
            if !response.changes.isEmpty { update(.pulling) }
            // Nothing new (a long poll that ended empty): no commit, no fsync.
            if !response.changes.isEmpty || response.sequence != after { applied += try apply(response) }
            if !response.more { break }
        }
        update()
        return applied
    }

    // MARK: Live

    /// Syncs from now on: pushes after each commit to a synced model (from any process), and waits on the server for
    /// other devices' changes. Failures are retried, waiting longer each time; ``currentStatus`` says what happens.
    public func start() {
        guard live == nil else { return }
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

    private func readPushBatch(after position: [UInt8]?) throws(SyncError) -> PushBatch {
        try read { scope in
            var batch = PushBatch()
            let read = try scope.pendingSyncChanges(limit: configuration.pushBatchSize, after: position)
            let encoder = JSONEncoder()
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
                } catch let error as EncodingError {
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
                let size = (try? encoder.encode(change).count) ?? 0
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
    private func apply(_ response: PullResponse) throws(SyncError) -> Int {
        try write { txn in
            var applied = 0
            var waiting = Dictionary(
                try txn.syncValues(prefix: Self.waitingPrefix).compactMap { entry in
                    (try? JSONDecoder().decode(RecordChange.self, from: Data(entry.value))).map { (entry.name, $0) }
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
                    try txn.setSyncValue(Array(try JSONEncoder().encode(incoming)), name: key)
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
            try txn.setSyncCursor(response.sequence)
            return applied
        }
    }

    /// Keeps the state the server has of a record, as the base a model's resolver compares with.
    private func keepBase(_ change: RecordChange, in txn: WriteTransaction) throws {
        let name = SyncedModel.baseName(model: change.model, id: change.id)
        if change.state.deleted != nil {
            try txn.setSyncValue(nil, name: name)
        } else {
            try txn.setSyncValue(Array(try JSONEncoder().encode(JSONValue.object(change.state.fields))), name: name)
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
