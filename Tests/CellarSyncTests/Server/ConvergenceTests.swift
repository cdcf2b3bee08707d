import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// Devices that edit offline, in any order, then sync through real server processes, end up with the same
/// records as each other and as PostgreSQL's rows, with every link sound.
@Suite(
    "Sync: devices converge", .serialized, .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct ConvergenceTests {
    typealias Card = Synced.Card
    typealias Folder = Synced.Folder

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func randomOfflineEditsOnThreeDevicesConverge(seed: UInt64) async throws {
        // Two server processes on one database, the devices split between them.
        let servers = [try await ServerProcess(), try await ServerProcess()]
        let user = Harness.newUser("converge")
        let token = try await Harness.token(for: user)
        let devices = try (0..<3).map { try SyncedDevice(server: servers[$0 % 2].url, token: token) }
        var random = SplitMix(seed: seed)
        for _ in 0..<4 {
            for device in devices { try device.randomEdits(count: 15, using: &random) }
            for device in devices.shuffled(using: &random) { try await device.client.sync() }
        }
        try await settle(devices)
        try await expectSameRecords(devices, user: user)
    }

    @Test func concurrentEditsOfOneRecordKeepEachDevicesProperty() async throws {
        let server = try await ServerProcess()
        let token = try await Harness.token(for: Harness.newUser("merge"))
        let a = try SyncedDevice(server: server.url, token: token)
        let b = try SyncedDevice(server: server.url, token: token)
        try await a.store.write { try $0.insert(Card(id: "shared", title: "first", tags: ["one"])) }
        try await a.client.sync()
        try await b.client.sync()
        // Offline on both: a changes the title, b the tags.
        try await a.store.write { try $0.update(Card(id: "shared", title: "from a", tags: ["one"])) }
        try await b.store.write { try $0.update(Card(id: "shared", title: "first", tags: ["from b"])) }
        try await a.client.sync()
        try await b.client.sync()
        try await a.client.sync()
        for device in [a, b] {
            let card = try await device.store.read { try $0.object(Card.self, id: "shared") }
            #expect(card?.title == "from a" && card?.tags == ["from b"])
        }
    }

    @Test func aDeleteWinsOverAConcurrentUpdate() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("delete")
        let token = try await Harness.token(for: user)
        let a = try SyncedDevice(server: server.url, token: token)
        let b = try SyncedDevice(server: server.url, token: token)
        try await a.store.write { try $0.insert(Card(id: "doomed", title: "first")) }
        try await a.client.sync()
        try await b.client.sync()
        try await a.store.write { try $0.delete(Card.self, id: "doomed") }
        // b's update is later than a's delete, and still loses.
        try await Task.sleep(for: .milliseconds(5))
        try await b.store.write { try $0.update(Card(id: "doomed", title: "edited after the delete")) }
        try await b.client.sync()
        try await a.client.sync()
        try await b.client.sync()
        for device in [a, b] { #expect(try await device.store.read { try $0.object(Card.self, id: "doomed") } == nil) }
        #expect(
            try await Harness.sql(
                "select tombstone from cellar_records where owner = '\(user)' and model = 'Card' and id = 'doomed'")
                == "t")
    }

    @Test func aFolderDeletedOnOneDeviceWhileACardMovesIntoItOnAnother() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("links")
        let token = try await Harness.token(for: user)
        let a = try SyncedDevice(server: server.url, token: token)
        let b = try SyncedDevice(server: server.url, token: token)
        let box = Folder(name: "Box")
        try await a.store.write { txn in
            try txn.insert(box)
            try txn.insert(Card(id: "card", title: "loose"))
        }
        try await a.client.sync()
        try await b.client.sync()
        try await a.store.write { try $0.delete(Folder.self, id: box.id) }
        try await b.store.write { try $0.update(Card(id: "card", title: "loose", folder: Link(box))) }
        // a learns of b's link to a folder it deleted: the card waits for its target instead of failing the pull.
        try await a.client.sync()
        try await b.client.sync()
        try await settle([a, b])
        for device in [a, b] {
            let card = try await device.store.read { try $0.object(Card.self, id: "card") }
            #expect(card != nil && card?.folder == nil)
        }
        try await expectSameRecords([a, b], user: user)
    }

    @Test func aRecordPulledBeforeItsLinkTargetWaitsForIt() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("order")
        let token = try await Harness.token(for: user)
        var configuration = SyncConfiguration(server: server.url, token: token, models: Synced.models)
        // One change a push: the card ("Card" sorts before "Folder") reaches the server before its folder.
        configuration.pushBatchSize = 1
        let a = try SyncedDevice(configuration: configuration)
        let b = try SyncedDevice(server: server.url, token: token)
        let shelf = Folder(name: "Shelf")
        try await a.store.write { txn in
            try txn.insert(shelf)
            try txn.insert(Card(id: "book", title: "on the shelf", folder: Link(shelf)))
        }
        let pushed = try await a.client.pushAll()
        #expect(pushed == 2)
        try await b.client.sync()
        #expect(try await b.store.read { try $0.object(Card.self, id: "book") }?.folder == Link(shelf))
        try await expectSameRecords([a, b], user: user)
    }

    @Test func aRecordNoServerCanStoreWaitsAndSaysWhyWhileTheOthersSync() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("unstorable")
        let token = try await Harness.token(for: user)
        let device = try SyncedDevice(server: server.url, token: token)
        try await device.store.write { txn in
            try txn.insert(Card(id: "bad", title: "a\u{0}b"))
            try txn.insert(Card(id: "good", title: "fine"))
        }
        try await device.client.sync()
        #expect(try await Harness.sql("select id from cellar_records where owner = '\(user)'") == "good")
        let status = await device.client.currentStatus
        #expect(status.pendingChanges == 1)
        guard case .error(let reason) = status.activity else {
            Issue.record("expected an error status, got \(status.activity)")
            return
        }
        #expect(reason.contains("the Card with id bad cannot sync") && reason.contains("U+0000"), "\(reason)")
        // Fixed, it goes, and the status is up to date again.
        try await device.store.write { try $0.update(Card(id: "bad", title: "ab")) }
        try await device.client.sync()
        #expect(await device.client.currentStatus.activity == .upToDate)
        #expect(try await Harness.sql("select count(*) from cellar_records where owner = '\(user)'") == "2")
    }

    /// A schema version bump alone (the same model) locks no device out: before, the older app was refused for every
    /// model ("the server holds Card records of schema version 2").
    @Test func aVersionBumpAloneLocksNoDeviceOut() async throws {
        let server = try await ServerProcess()
        let token = try await Harness.token(for: Harness.newUser("schema"))
        let newer = try SyncedDevice(server: server.url, token: token, schemaVersion: 2)
        try await newer.store.write { try $0.insert(Card(id: "a", title: "from the newer app")) }
        try await newer.client.sync()
        let older = try SyncedDevice(server: server.url, token: token, schemaVersion: 1)
        try await older.store.write { try $0.insert(Card(id: "b", title: "from the older app")) }
        try await older.client.sync()
        try await newer.client.sync()
        #expect(await older.client.currentStatus.pendingChanges == 0)
        #expect(try newer.contents() == older.contents())
        #expect(try newer.contents().count == 2)
    }

    /// Syncs every device until none has anything to push or waiting, and all hold the same records.
    func settle(_ devices: [SyncedDevice]) async throws {
        for _ in 0..<6 {
            for device in devices { try await device.client.sync() }
            let statuses = await devices.asyncMap { await $0.client.currentStatus }
            let contents = try devices.map { try $0.contents() }
            if statuses.allSatisfy({ $0.pendingChanges == 0 && $0.waitingChanges == 0 }),
                contents.allSatisfy({ $0 == contents[0] })
            {
                return
            }
        }
    }

    /// Every device holds the records PostgreSQL holds for the user, and every store checks out.
    func expectSameRecords(_ devices: [SyncedDevice], user: String) async throws {
        let rows = try await Harness.sql(
            "select model || ' ' || id || ' ' || record::text from cellar_records "
                + "where owner = '\(user)' and not tombstone order by model, id")
        var server: [String: JSONValue] = [:]
        for line in rows.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2)
            try #require(parts.count == 3)
            server["\(parts[0]) \(parts[1])"] = try JSONValue(parsing: parts[2].utf8)
        }
        // A search finds the same cards on every device: each one's full-text index follows what it pulled.
        var searched: Set<String>?
        for device in devices {
            let contents = try device.contents()
            #expect(contents.keys.sorted() == server.keys.sorted())
            let found = Set(
                try await device.store.objects(Card.self).where(.matches("t1* OR body")).results().map(\.id))
            #expect(searched == nil || searched == found)
            searched = found
            for (key, value) in contents { #expect(server[key] == value, "\(key)") }
            let report = try await device.store.verifyIntegrity()
            #expect(report.problems.isEmpty, "\(report.problems)")
            #expect(await device.client.currentStatus.pendingChanges == 0)
        }
    }
}

/// One device: a store of its own and a client.
final class SyncedDevice: Sendable {
    let folder = TemporaryFolder()
    let store: Store
    let client: SyncClient

    convenience init(
        server: URL, token: String, models: [any Model.Type] = Synced.models, schemaVersion: Int = 1
    ) throws {
        try self.init(
            configuration: SyncConfiguration(server: server, token: token, models: models),
            schemaVersion: schemaVersion)
    }

    init(configuration: SyncConfiguration, schemaVersion: Int = 1) throws {
        store = try Store(
            at: folder.url, configuration: .init(models: configuration.models, schemaVersion: schemaVersion))
        client = try SyncClient(store: store, configuration: configuration)
    }

    func contents() throws -> [String: JSONValue] { try Synced.contents(of: store) }

    func randomEdits(count: Int, using random: inout SplitMix) throws {
        try Synced.randomEdits(store, count: count, using: &random)
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
