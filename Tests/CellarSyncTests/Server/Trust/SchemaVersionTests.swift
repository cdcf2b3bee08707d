@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// The card of an app version that added an optional property.
struct CardWithColour: Model, Equatable {
    var id: String
    var title: String
    var body: String?
    var tags: [String]
    var rank: Int64
    var folder: Link<Synced.Folder>?
    var colour: String?
    static let schema = Schema<CardWithColour>(
        name: "Card", indexes: [.index(\.rank), .fullText(.field(\.title, weight: 2), .field(\.body))],
        links: [.link(\.folder)])
}

/// Two app versions of a model sync side by side when the newer only added: each keeps its edits, and the older never
/// erases what it does not know. A record without a required property is refused, naming it.
@Suite("Sync: two app versions", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct SchemaVersionTests {
    @Test func anOlderAppKeepsSyncingAfterANewerOneAddedAnOptionalProperty() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("versions")
        let token = try await Harness.token(for: user)
        let newModels: [any Model.Type] = [Synced.Folder.self, CardWithColour.self]
        let newer = try SyncedDevice(server: server.url, token: token, models: newModels, schemaVersion: 2)
        let older = try SyncedDevice(server: server.url, token: token, schemaVersion: 1)
        try await newer.store.write { txn in
            try txn.insert(CardWithColour(id: "a", title: "one", tags: [], rank: 1, colour: "red"))
        }
        try await newer.client.sync()
        try await older.client.sync()
        // The older app edits the title; the newer the colour, concurrently.
        try await older.store.write { try $0.update(Synced.Card(id: "a", title: "retitled by the older app", rank: 1)) }
        try await newer.store.write { txn in
            var card = try #require(try txn.object(CardWithColour.self, id: "a"))
            card.colour = "blue"
            try txn.update(card)
        }
        try await older.client.sync()
        try await newer.client.sync()
        try await older.client.sync()
        // And the older app makes a record of its own.
        try await older.store.write { try $0.insert(Synced.Card(id: "b", title: "made by the older app")) }
        try await older.client.sync()
        try await newer.client.sync()
        let a = try await newer.store.read { try $0.object(CardWithColour.self, id: "a") }
        #expect(a?.title == "retitled by the older app" && a?.colour == "blue")
        #expect(try await newer.store.read { try $0.object(CardWithColour.self, id: "b") }?.colour == nil)
        #expect(
            try await older.store.read { try $0.object(Synced.Card.self, id: "a") }?.title
                == "retitled by the older app")
        #expect(
            try await Harness.sql("SELECT record->>'colour' FROM cellar_records WHERE owner = '\(user)' AND id = 'a'")
                == "blue")
        #expect(await older.client.currentStatus.pendingChanges == 0)
        #expect(await newer.client.currentStatus.pendingChanges == 0)
    }

    /// Before: the server took `{"title": …}` alone as a new record, and every device then held a change that waited
    /// forever for the properties it lacked. Now that change alone is refused, naming them, and the push's others go.
    @Test func aNewRecordWithoutItsRequiredPropertiesIsRefusedNamingThem() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("required")
        let device = Device(server: server.url, token: try await Harness.token(for: user), id: Harness.device("e"))
        let models = ["Dog": ModelSchema(version: 1, properties: ["name", "age", "owner"], required: ["name", "age"])]
        let pushed = try await device.push(
            [
                change("rex", ["name": .string("Rex")], stamp: Harness.stamp(device.id)),
                change("fido", ["name": .string("Fido"), "age": .integer(2)], stamp: Harness.stamp(device.id)),
            ], models: models)
        #expect(pushed.applied == 1)
        #expect(pushed.refused.map(\.id) == ["rex"])
        #expect(pushed.refused.first?.failure.code == .invalidRecord)
        #expect(pushed.refused.first?.failure.reason.contains("age") == true)
        #expect(
            try await Harness.sql("SELECT string_agg(id, ',') FROM cellar_records WHERE owner = '\(user)'") == "fido")
        // Whole, it goes; and a later change of one property of it needs nothing more.
        _ = try await device.push(
            [change("rex", ["name": .string("Rex"), "age": .integer(3)], stamp: Harness.stamp(device.id))],
            models: models)
        _ = try await device.push(
            [change("rex", ["name": .string("Rexy")], stamp: Harness.stamp(device.id, offset: 5))], models: models)
        #expect(
            try await Harness.sql("SELECT record::text FROM cellar_records WHERE owner = '\(user)' AND id = 'rex'")
                == #"{"age":3,"name":"Rexy"}"#)
    }
}
