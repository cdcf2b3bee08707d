@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// The card of the next app version: a required property, filled by a declared default at opening.
struct CardV2: Model, Equatable {
    var id: String
    var title: String
    var body: String?
    var tags: [String]
    var rank: Int64
    var folder: Link<Synced.Folder>?
    var priority: Int
    static let schema = Schema<CardV2>(
        name: "Card", indexes: [.index(\.rank), .fullText(.field(\.title, weight: 2), .field(\.body))],
        links: [.link(\.folder)]
    )
    .property(\.priority, default: 3)
}

/// A migration of a synced model is a change of this device: the migrated records are pushed, devices with the new
/// model get them whole, and a device still on the old one keeps syncing what it can read and write, and is told to
/// update for a record it cannot make whole.
@Suite(
    "Sync: migrations", .serialized, .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct MigrationSyncTests {
    @Test func migratedRecordsArePushedAndReachDevicesWithTheNewModel() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("migrate")
        let token = try await Harness.token(for: user)
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("device")
        do {
            let store = try await Store(at: path, configuration: .init(models: Synced.models, schemaVersion: 1))
            let client = try SyncClient(
                store: store, configuration: .init(server: server.url, token: token, models: Synced.models))
            try await store.write { try $0.insert(Synced.Card(id: "a", title: "before the update")) }
            try await client.sync()
        }
        let models: [any Model.Type] = [Synced.Folder.self, CardV2.self]
        let store = try await Store(at: path, configuration: .init(models: models, schemaVersion: 2))
        // The default the opening wrote is this device's change, waiting to be pushed.
        let pending = try await store.read { try $0.pendingSyncChanges(limit: 10) }
        #expect(pending.map(\.id) == ["a"])
        #expect(pending.first?.stamps["priority"] != nil)
        let client = try SyncClient(
            store: store, configuration: .init(server: server.url, token: token, models: models))
        try await client.sync()
        #expect(
            try await Harness.sql("select record->>'priority' from cellar_records where owner = '\(user)' and id = 'a'")
                == "3")
        // A new device with the new model gets the record whole.
        let newer = try SyncedDevice(server: server.url, token: token, models: models, schemaVersion: 2)
        try await newer.client.sync()
        #expect(try await newer.store.read { try $0.object(CardV2.self, id: "a") }?.priority == 3)
        // One still on the old model reads the record (without the property it does not know), and its edit of it
        // syncs without erasing the property.
        let older = try SyncedDevice(server: server.url, token: token)
        try await older.client.sync()
        #expect(try await older.store.read { try $0.object(Synced.Card.self, id: "a") }?.title == "before the update")
        try await older.store.write { try $0.update(Synced.Card(id: "a", title: "edited by the older app")) }
        try await older.client.sync()
        try await newer.client.sync()
        let edited = try await newer.store.read { try $0.object(CardV2.self, id: "a") }
        #expect(edited?.title == "edited by the older app" && edited?.priority == 3)
        // But a new card of the older app would lack the property the newer version requires: refused, naming it.
        try await older.store.write { try $0.insert(Synced.Card(id: "b", title: "new in the older app")) }
        try await older.client.sync()
        let status = await older.client.currentStatus
        #expect(status.pendingChanges == 1)
        guard case .error(let reason) = status.activity else {
            Issue.record("the status does not say why: \(status)")
            return
        }
        #expect(reason.contains("Card.priority"), "\(reason)")
    }
}
