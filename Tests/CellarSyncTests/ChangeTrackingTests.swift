@_spi(Sync) import Cellar
import CellarMacros
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

@testable import CellarSync

/// What a store records for sync, in the transaction of each change: which properties changed and when, deletes as
/// tombstones, and the outbox of what to push.
@Suite("Sync: changes are tracked in the transaction that makes them")
struct ChangeTrackingTests {
    typealias Card = Synced.Card
    typealias Folder = Synced.Folder

    static let properties = ["id", "title", "body", "tags", "rank", "folder"]

    static func pending(_ store: Store) throws -> [PendingSyncChange] {
        try store.read { try $0.pendingSyncChanges(limit: 1_000) }
    }

    @Test func insertsUpdatesAndDeletesReachTheOutboxWithPerPropertyStamps() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        let device = try store.enableSync(models: Synced.models)
        #expect(SyncStamp.isDeviceID(device))
        try store.write { try $0.insert(Card(id: "a", title: "first", body: "text", tags: ["x"])) }
        var pending = try Self.pending(store)
        #expect(pending.count == 1)
        let inserted = try #require(pending.first)
        #expect(inserted.id == "a" && inserted.model == "Card" && inserted.deleted == nil)
        // Every stored property, `nil` ones included (the folder link is `nil`).
        #expect(Set(inserted.stamps.keys) == ["id", "title", "body", "tags", "rank", "folder"])
        #expect(Set(inserted.stamps.values).count == 1)
        #expect(inserted.stamps.values.allSatisfy { $0.device == device })

        // Only the changed property gets a new stamp; setting an optional to nil is a change.
        try store.write { try $0.update(Card(id: "a", title: "second", body: nil, tags: ["x"])) }
        pending = try Self.pending(store)
        let updated = try #require(pending.first)
        #expect(updated.stamps["title"]! > inserted.stamps["title"]!)
        #expect(updated.stamps["body"]! > inserted.stamps["body"]!)
        #expect(updated.stamps["tags"] == inserted.stamps["tags"])
        #expect(updated.marker != inserted.marker)

        // Writing the same values again changes no stamp.
        try store.write { try $0.upsert(Card(id: "a", title: "second", body: nil, tags: ["x"])) }
        #expect(try Self.pending(store).first?.stamps == updated.stamps)

        try store.write { try $0.delete(Card.self, id: "a") }
        let deleted = try #require(try Self.pending(store).first)
        #expect(deleted.deleted != nil && deleted.stamps.isEmpty)
        #expect(deleted.deleted! > updated.stamps.values.max()!)
    }

    @Test func anAcknowledgementRemovesOnlyWhatWasPushed() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        _ = try store.enableSync(models: Synced.models)
        try store.write { txn in
            try txn.insert(Card(id: "a", title: "one"))
            try txn.insert(Card(id: "b", title: "two"))
        }
        let pushed = try Self.pending(store)
        #expect(pushed.count == 2)
        // "b" changes after it was read for the push: its newer change must stay.
        try store.write { try $0.update(Card(id: "b", title: "three")) }
        try store.write { try $0.acknowledgeSync(pushed) }
        let left = try Self.pending(store)
        #expect(left.map(\.id) == ["b"])
        #expect(try store.read { try $0.pendingSyncCount() } == 1)
    }

    @Test func startingSyncPutsExistingRecordsInTheOutboxOnce() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        let home = Folder(name: "Home")
        try store.write { txn in
            try txn.insert(home)
            for number in 0..<50 { try txn.insert(Card(id: "c\(number)", title: "card", folder: Link(home))) }
        }
        let device = try store.enableSync(models: Synced.models)
        #expect(try Self.pending(store).count == 51)
        // Again, in a new opening: the same device, nothing added.
        let again = try store.enableSync(models: Synced.models)
        #expect(again == device)
        #expect(try Self.pending(store).count == 51)
    }

    @Test func aDeletedIDIsNotUsedAgain() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        _ = try store.enableSync(models: Synced.models)
        try store.write { try $0.insert(Card(id: "a", title: "one")) }
        try store.write { try $0.delete(Card.self, id: "a") }
        #expect {
            try store.write { try $0.insert(Card(id: "a", title: "again")) }
        } throws: { error in
            guard case StoreError.idReusedAfterDelete(let model, let id) = error else { return false }
            return model == "Card" && id == "\"a\"" && "\(error)".contains("a new id")
        }
        #expect(try store.read { try $0.object(Card.self, id: "a") } == nil)
    }

    @Test func aRecordMadeAndDeletedInOneTransactionLeavesNothing() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        _ = try store.enableSync(models: Synced.models)
        try store.write { txn in
            try txn.insert(Card(id: "a", title: "one"))
            try txn.delete(Card.self, id: "a")
        }
        #expect(try Self.pending(store).isEmpty)
    }

    @Test func aPulledStateIsAdoptedWithoutBeingPushedBack() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        _ = try store.enableSync(models: Synced.models)
        let remote = SyncStamp(time: 5 << 16, device: "0000000000000000000000000000000b")
        try store.write { txn in
            try txn.insert(Card(id: "r", title: "from elsewhere"))
            try txn.adoptSyncState(
                Card.self, id: "r",
                stamps: Dictionary(uniqueKeysWithValues: Self.properties.map { ($0, remote) }), deleted: nil)
        }
        #expect(try Self.pending(store).isEmpty)
        let state = try #require(try store.read { try $0.syncState(Card.self, id: "r") })
        #expect(state.stamps["title"] == remote)
        // A later change here is stamped after the remote one, even though this clock reads later anyway.
        try store.write { try $0.update(Card(id: "r", title: "edited here")) }
        let edited = try #require(try Self.pending(store).first)
        #expect(edited.stamps["title"]! > remote && edited.stamps["tags"] == remote)
    }

    @Test func aPropertyAPulledStateLacksIsStampedHere() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        _ = try store.enableSync(models: Synced.models)
        let remote = SyncStamp(time: 5 << 16, device: "0000000000000000000000000000000b")
        try store.write { txn in
            try txn.insert(Card(id: "r", title: "from elsewhere"))
            try txn.adoptSyncState(
                Card.self, id: "r", stamps: ["id": remote, "title": remote, "tags": remote, "rank": remote],
                deleted: nil)
        }
        let pending = try #require(try Self.pending(store).first)
        #expect(pending.stamps["title"] == remote)
        #expect(pending.stamps["body"]!.device != remote.device && pending.stamps["folder"]!.device != remote.device)
    }

    @Test func aStampFromAClockAheadMovesThisClockPastIt() throws {
        let folder = TemporaryFolder()
        let store = try folder.store()
        _ = try store.enableSync(models: Synced.models)
        // A device an hour ahead wrote "title"; this device's next change must still win.
        let ahead = SyncStamp(
            time: UInt64((Date().timeIntervalSince1970 + 3_600) * 1000) << 16,
            device: "0000000000000000000000000000000b")
        try store.write { txn in
            try txn.insert(Card(id: "r", title: "from the future"))
            try txn.adoptSyncState(
                Card.self, id: "r", stamps: Dictionary(uniqueKeysWithValues: Self.properties.map { ($0, ahead) }),
                deleted: nil)
        }
        try store.write { try $0.update(Card(id: "r", title: "now")) }
        let edited = try #require(try Self.pending(store).first)
        #expect(edited.stamps["title"]! > ahead)
    }

    @Test func tracking_survivesReopeningAndSeesEveryStoreOnTheFile() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store()
            _ = try store.enableSync(models: Synced.models)
        }
        // A new opening that never asks for sync still records its changes.
        let store = try folder.store()
        try store.write { try $0.insert(Card(id: "later", title: "written without a sync client")) }
        #expect(try Self.pending(store).map(\.id) == ["later"])
    }

    @Test func modelsThatCannotSyncAreRefusedInWords() throws {
        let folder = TemporaryFolder()
        let configuration = SyncConfiguration(
            server: URL(string: "http://127.0.0.1:9")!, token: "t", models: [Synced.Counter.self])
        let store = try folder.store([Synced.Counter.self])
        #expect {
            _ = try SyncClient(store: store, configuration: configuration)
        } throws: { error in
            guard case SyncError.autoIncrementModel(let model) = error else { return false }
            return model == "Counter" && "\(error)".contains("UUID")
        }
        let pins = try folder.store([Synced.Pin.self, Card.self, Folder.self], name: "pins")
        #expect {
            _ = try SyncClient(
                store: pins,
                configuration: .init(server: configuration.server, token: "t", models: [Synced.Pin.self]))
        } throws: { error in
            guard case SyncError.linkToUnsyncedModel(let model, let target) = error else { return false }
            return model == "Pin" && target == "Card"
        }
    }

    @Test func aRecordModelIsTrackedAsItsCodableTwin() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([RecordNote.self])
        _ = try store.enableSync(models: [RecordNote.self])
        try store.write { try $0.insert(RecordNote(id: "n", text: "generated", tags: ["a"])) }
        let inserted = try #require(try Self.pending(store).first)
        #expect(Set(inserted.stamps.keys) == ["id", "text", "tags"])
        try store.write { try $0.update(RecordNote(id: "n", text: "generated", tags: ["a", "b"])) }
        let updated = try #require(try Self.pending(store).first)
        #expect(updated.stamps["tags"]! > inserted.stamps["tags"]! && updated.stamps["text"] == inserted.stamps["text"])
        // What a push sends is its Codable JSON.
        let model = try SyncedModel(RecordNote.self, store: store, schemaVersion: 1)
        let state = try store.read { try model.pushState($0, updated) }
        #expect(state?.fields["tags"] == .array([.string("a"), .string("b")]))
    }

    @Test func aReadOnlyStoreCannotSync() throws {
        let folder = TemporaryFolder()
        _ = try folder.store()
        let readOnly = try Store(
            at: folder.url.appendingPathComponent("store"),
            configuration: { () -> Configuration in
                var configuration = Configuration(models: Synced.models)
                configuration.readOnly = true
                return configuration
            }())
        #expect {
            _ = try SyncClient(
                store: readOnly,
                configuration: .init(server: URL(string: "http://127.0.0.1:9")!, token: "t", models: Synced.models))
        } throws: { error in
            guard case SyncError.store(.readOnly) = error else { return false }
            return true
        }
    }
}

/// A model with generated record code.
@Record
struct RecordNote: Model, Equatable {
    var id: String
    var text: String
    var tags: [String]
}
