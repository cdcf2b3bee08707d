@_spi(Sync) import Cellar
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

@testable import CellarSync

/// A push sends link targets before the records that link to them, so that a device that pulls page by page shows
/// each record as it arrives instead of holding it until its target comes.
@Suite("Sync: link targets go first", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct PushOrderTests {
    typealias Card = Synced.Card
    typealias Folder = Synced.Folder

    @Test func recordsWrittenBeforeSyncArePushedTargetsFirst() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("order")
        let token = try await Harness.token(for: user)
        let folder = TemporaryFolder()
        let store = try folder.store()
        // Written before sync was turned on: cards sort before folders in the outbox.
        let folders = (0..<20).map { Folder(name: "folder \($0)") }
        try await store.write { txn in
            for folder in folders { try txn.insert(folder) }
            for number in 0..<100 {
                try txn.insert(Card(id: "card\(number)", title: "\(number)", folder: Link(folders[number % 20])))
            }
        }
        var configuration = SyncConfiguration(server: server.url, token: token, models: Synced.models)
        configuration.pushBatchSize = 10
        let client = try SyncClient(store: store, configuration: configuration)
        try await client.sync()
        let order = try await Harness.sql(
            "SELECT (SELECT max(sequence) FROM cellar_records WHERE owner = '\(user)' AND model = 'Folder') < "
                + "(SELECT min(sequence) FROM cellar_records WHERE owner = '\(user)' AND model = 'Card')")
        #expect(order == "t")

        // A device pulling ten at a time never holds a card waiting for its folder.
        var other = SyncConfiguration(server: server.url, token: token, models: Synced.models)
        other.pullBatchSize = 10
        let device = try SyncedDevice(configuration: other)
        try await device.client.sync()
        #expect(await device.client.currentStatus.waitingChanges == 0)
        #expect(try await device.store.read { try $0.objects(Card.self).count() } == 100)
    }

    @Test func theOrderPutsEachModelAfterItsTargets() {
        #expect(
            SyncClient.targetsFirst(["Card": ["Folder"], "Folder": [], "Tag": ["Card", "Folder"]]) == [
                "Folder", "Card", "Tag",
            ])
        #expect(SyncClient.targetsFirst(["A": ["B"], "B": ["A"]]).sorted() == ["A", "B"])
    }
}
