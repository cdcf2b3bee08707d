import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Observation
import Testing

/// A device that is online sees another device's commit without polling: the server wakes its waiting pull, across
/// server processes through PostgreSQL's `LISTEN`/`NOTIFY`, and the pulled commit reaches the store's observers.
@Suite(
    "Sync: live", .serialized, .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct LiveSyncTests {
    typealias Card = Synced.Card

    @Test @MainActor func liveResultsOnOneDeviceShowAnotherDevicesCommitThroughAnotherServer() async throws {
        let first = try await ServerProcess()
        let second = try await ServerProcess()
        let token = try await Harness.token(for: Harness.newUser("live"))
        let writer = try SyncedDevice(server: first.url, token: token)
        let reader = try SyncedDevice(server: second.url, token: token)
        await reader.client.start()
        let live = LiveResults(reader.store.objects(Card.self).sorted(by: \.id), in: reader.store)
        try await changed(live) {}
        #expect(live.results.isEmpty)
        // The reader's pull is waiting on the second server; the writer pushes through the first.
        try await changed(live) {
            try await writer.store.write { try $0.insert(Card(id: "hello", title: "from the writer")) }
            try await writer.client.pushAll()
        }
        #expect(live.results.map(\.title) == ["from the writer"])
        try await changed(live) {
            try await writer.store.write { try $0.update(Card(id: "hello", title: "edited")) }
            try await writer.client.pushAll()
        }
        #expect(live.results.map(\.title) == ["edited"])
        await reader.client.stop()
    }

    @Test func aStartedClientPushesEachCommitAndReportsItsStatus() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("status")
        let token = try await Harness.token(for: user)
        let device = try SyncedDevice(server: server.url, token: token)
        var statuses = device.client.statusUpdates().makeAsyncIterator()
        #expect(await statuses.next()?.activity == .idle)
        try await device.store.write { try $0.insert(Card(id: "a", title: "pending")) }
        await device.client.start()
        // The commit is pushed without a call: the status goes up to date with nothing pending.
        while let status = await statuses.next() {
            if status.activity == .upToDate, status.pendingChanges == 0 { break }
        }
        #expect(try await Harness.sql("select count(*) from cellar_records where owner = '\(user)'") == "1")
        try await device.store.write { try $0.insert(Card(id: "b", title: "after the start")) }
        var seen = false
        for _ in 0..<100 where !seen {
            seen = try await Harness.sql("select count(*) from cellar_records where owner = '\(user)'") == "2"
            if !seen { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(seen)
        await device.client.stop()
    }

    @Test func aDeviceOfflineKeepsItsChangesAndSaysSo() async throws {
        let server = try await ServerProcess()
        let token = try await Harness.token(for: Harness.newUser("offline"))
        // A port nothing listens on.
        let device = try SyncedDevice(
            configuration: .init(server: URL(string: "http://127.0.0.1:9")!, token: token, models: Synced.models))
        try await device.store.write { try $0.insert(Card(id: "a", title: "written offline")) }
        await #expect(throws: SyncError.self) { try await device.client.sync() }
        let status = await device.client.currentStatus
        #expect(status.activity == .offline && status.pendingChanges == 1)
        // The same store, later, with the server up: the change goes.
        let online = try SyncClient(
            store: device.store, configuration: .init(server: server.url, token: token, models: Synced.models))
        try await online.sync()
        #expect(await online.currentStatus.pendingChanges == 0)
    }

    @Test func aServerDownForAWhileAndBackGetsWhatWasWrittenMeanwhile() async throws {
        var server: ServerProcess? = try await ServerProcess()
        let url = try #require(server?.url)
        let port = try #require(url.port)
        let user = Harness.newUser("down")
        let token = try await Harness.token(for: user)
        var configuration = SyncConfiguration(server: url, token: token, models: Synced.models)
        configuration.retryDelay = .milliseconds(100)
        let device = try SyncedDevice(configuration: configuration)
        await device.client.start()
        try await device.store.write { try $0.insert(Card(id: "before", title: "while up")) }
        try await Self.until {
            try await Harness.sql("select count(*) from cellar_records where owner = '\(user)'") == "1"
        }
        server?.stop()
        server = nil
        try await device.store.write { try $0.insert(Card(id: "during", title: "while down")) }
        try await Self.until { await device.client.currentStatus.activity == .offline }
        #expect(await device.client.currentStatus.pendingChanges == 1)
        // Back, on the same address: the change made meanwhile arrives without a call.
        server = try await ServerProcess(port: port)
        try await Self.until {
            try await Harness.sql("select count(*) from cellar_records where owner = '\(user)'") == "2"
        }
        try await Self.until { await device.client.currentStatus.pendingChanges == 0 }
        await device.client.stop()
    }

    /// Waits until `condition` holds, looking every 50 ms (the suite's time limit ends a wait that never does).
    static func until(_ condition: () async throws -> Bool) async throws {
        while try await !condition() { try await Task.sleep(for: .milliseconds(50)) }
    }

    @Test @MainActor func aMonitorShowsTheStatusToAView() async throws {
        let server = try await ServerProcess()
        let token = try await Harness.token(for: Harness.newUser("monitor"))
        let device = try SyncedDevice(server: server.url, token: token)
        let monitor = SyncMonitor(client: device.client)
        try await device.store.write { try $0.insert(Card(id: "a", title: "pending")) }
        try await device.client.sync()
        while monitor.status.activity != .upToDate {
            let (stream, continuation) = AsyncStream<Void>.makeStream()
            withObservationTracking {
                _ = monitor.status
            } onChange: {
                continuation.yield()
            }
            if monitor.status.activity == .upToDate { break }
            for await _ in stream { break }
            await Task.yield()
        }
        #expect(monitor.status.pendingChanges == 0 && monitor.status.lastSynced != nil)
    }

    /// Runs `body` and waits until `live.results` changes.
    @MainActor
    func changed(_ live: LiveResults<Card>, after body: () async throws -> Void) async throws {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        withObservationTracking {
            _ = live.results
        } onChange: {
            continuation.yield()
        }
        try await body()
        for await _ in stream { break }
        await Task.yield()
    }
}
