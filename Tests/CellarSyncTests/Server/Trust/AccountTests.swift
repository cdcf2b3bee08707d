@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// A store's sync state belongs to one user: another user's token is refused until the store signs out, and no record
/// crosses accounts. Several clients on one store each see every change of their models.
@Suite("Sync: one user per store, a cursor per client", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct AccountTests {
    typealias Card = Synced.Card
    typealias Folder = Synced.Folder

    @Test func anotherUsersTokenIsRefusedUntilTheStoreSignsOut() async throws {
        let server = try await ServerProcess()
        let ann = Harness.newUser("ann")
        let bob = Harness.newUser("bob")
        let annToken = try await Harness.token(for: ann)
        let bobToken = try await Harness.token(for: bob)
        // Bob has records of his own, from his phone.
        let bobsPhone = try SyncedDevice(server: server.url, token: bobToken)
        try await bobsPhone.store.write { try $0.insert(Card(id: "bob-1", title: "Bob's")) }
        try await bobsPhone.client.sync()

        // Ann syncs on the shared tablet, then writes offline.
        let tablet = try SyncedDevice(server: server.url, token: annToken)
        try await tablet.store.write { try $0.insert(Card(id: "ann-1", title: "Ann's, synced")) }
        try await tablet.client.sync()
        try await tablet.store.write { try $0.insert(Card(id: "ann-2", title: "Ann's, offline")) }
        let annDevice = tablet.client.device

        // Bob signs in on the tablet: refused, nothing sent either way.
        let asBob = try SyncClient(
            store: tablet.store,
            configuration: SyncConfiguration(server: server.url, token: bobToken, models: Synced.models))
        await #expect {
            try await asBob.sync()
        } throws: { error in
            guard case SyncError.signedInAsAnotherUser(let storeUser, let tokenUser) = error else { return false }
            return storeUser == ann && tokenUser == bob
        }
        #expect(
            try await Harness.sql("SELECT string_agg(id, ',') FROM cellar_records WHERE owner = '\(bob)'") == "bob-1")
        #expect(try await tablet.store.read { try $0.objects(Card.self).count() } == 2)

        // Signing out would lose Ann's offline card: refused in words, then done when asked to discard it.
        await #expect {
            try await asBob.signOut()
        } throws: { error in
            guard case SyncError.unsyncedChanges(let count) = error else { return false }
            return count == 1
        }
        try await asBob.signOut(discardingUnsyncedChanges: true)
        #expect(try await tablet.store.read { try $0.objects(Card.self).count() } == 0)
        await #expect(throws: SyncError.self) { try await asBob.sync() }

        // Bob's own client on the tablet: a new device, with Bob's records and none of Ann's.
        let bobsTablet = try SyncClient(
            store: tablet.store,
            configuration: SyncConfiguration(server: server.url, token: bobToken, models: Synced.models))
        #expect(bobsTablet.device != annDevice)
        try await bobsTablet.sync()
        #expect(try await tablet.store.read { try $0.objects(Card.self).results().map(\.id) } == ["bob-1"])
        #expect(
            try await Harness.sql("SELECT string_agg(id, ',') FROM cellar_records WHERE owner = '\(bob)'") == "bob-1")
        #expect(
            try await Harness.sql("SELECT string_agg(id, ',' ORDER BY id) FROM cellar_records WHERE owner = '\(ann)'")
                == "ann-1")
    }

    @Test func aNewTokenOfTheSameUserIsTakenAndOneOfAnotherUserIsRefused() async throws {
        let server = try await ServerProcess()
        let ann = Harness.newUser("ann-token")
        let device = try SyncedDevice(server: server.url, token: try await Harness.token(for: ann))
        try await device.store.write { try $0.insert(Card(id: "one", title: "first token")) }
        try await device.client.sync()
        await device.client.updateToken(try await Harness.token(for: ann))
        try await device.store.write { try $0.insert(Card(id: "two", title: "second token")) }
        try await device.client.sync()
        await device.client.updateToken(try await Harness.token(for: Harness.newUser("someone-else")))
        try await device.store.write { try $0.insert(Card(id: "three", title: "not for them")) }
        await #expect(throws: SyncError.self) { try await device.client.sync() }
        #expect(
            try await Harness.sql("SELECT string_agg(id, ',' ORDER BY id) FROM cellar_records WHERE owner = '\(ann)'")
                == "one,two")
    }

    /// A push whose store belongs to another user than its token's is refused by the server too.
    @Test func theServerRefusesAPushForAnotherUser() async throws {
        let server = try await ServerProcess()
        let device = Device(
            server: server.url, token: try await Harness.token(for: Harness.newUser("token-owner")),
            id: Harness.device("5"))
        let push = PushRequest(
            device: device.id, user: "someone else", models: Device.models,
            changes: [change("rex", ["name": .string("Rex")], stamp: Harness.stamp(device.id))])
        let answer = try await device.refused(SyncProtocol.pushPath, body: Data(push.jsonBytes))
        #expect(answer.status == 403)
        #expect(answer.failure.code == .wrongUser)
    }

    /// Two clients on one store, one syncing folders only and one syncing folders and cards: the first pulling first
    /// does not move the second past the cards.
    @Test func twoClientsOnOneStoreEachSeeEveryChangeOfTheirModels() async throws {
        let server = try await ServerProcess()
        let token = try await Harness.token(for: Harness.newUser("two-clients"))
        let writer = try SyncedDevice(server: server.url, token: token)
        let folder = Folder(name: "Inbox")
        try await writer.store.write { txn in
            try txn.insert(folder)
            try txn.insert(Card(id: "card", title: "in the inbox", folder: Link(folder)))
        }
        try await writer.client.sync()

        let folder2 = TemporaryFolder()
        let store = try folder2.store()
        let folders = try SyncClient(
            store: store, configuration: SyncConfiguration(server: server.url, token: token, models: [Folder.self]))
        let everything = try SyncClient(
            store: store, configuration: SyncConfiguration(server: server.url, token: token, models: Synced.models))
        try await folders.sync()
        #expect(try await store.read { try $0.objects(Folder.self).count() } == 1)
        try await everything.sync()
        #expect(try await store.read { try $0.objects(Card.self).results().map(\.id) } == ["card"])

        // And a later change reaches both.
        try await writer.store.write { txn in
            try txn.update(Folder(id: folder.id, name: "Renamed"))
            try txn.insert(Card(id: "later", title: "added later", folder: Link(folder)))
        }
        try await writer.client.sync()
        try await folders.sync()
        try await everything.sync()
        #expect(try await store.read { try $0.objects(Card.self).count() } == 2)
        #expect(try await store.read { try $0.object(Folder.self, id: folder.id) }?.name == "Renamed")
    }

    /// A pull that was waiting when the store signed out is answered after it: its records are not applied (they
    /// would be the signed-out user's, in a store that is no one's).
    @Test func anAnswerThatArrivesAfterASignOutIsNotApplied() async throws {
        let server = try await ServerProcess()
        let token = try await Harness.token(for: Harness.newUser("sign-out-race"))
        let phone = try SyncedDevice(server: server.url, token: token)
        let tablet = try SyncedDevice(server: server.url, token: token)
        try await phone.store.write { try $0.insert(Card(id: "c1", title: "before")) }
        try await phone.client.sync()
        try await tablet.client.sync()
        let waiting = Task { try await tablet.client.pullAll(wait: 30) }
        // Until the pull waits on the server.
        try await Task.sleep(for: .seconds(1))
        try await tablet.client.signOut(discardingUnsyncedChanges: true)
        #expect(try await tablet.store.read { try $0.objects(Card.self).count() } == 0)
        // The phone's push wakes the waiting pull, whose answer comes after the sign-out.
        try await phone.store.write { try $0.insert(Card(id: "c2", title: "after")) }
        try await phone.client.sync()
        let result = await waiting.result
        #expect(throws: SyncError.self) { try result.get() }
        #expect(try await tablet.store.read { try $0.objects(Card.self).count() } == 0)
        #expect(try await tablet.store.read { try $0.syncCursors() }.isEmpty)
        #expect(try await tablet.store.read { try $0.syncAccount() } == nil)
    }
}
