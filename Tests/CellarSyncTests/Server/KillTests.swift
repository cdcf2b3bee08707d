@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// A change made before a kill -9 is pushed after the restart, however the kill fell between the commit, the push
/// and its acknowledgement, and a retried push is applied once.
@Suite("Sync: kill -9", .serialized, .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct KillTests {
    @Test func aDeviceKilledBetweenItsPushAndTheAcknowledgementLosesNothing() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("killed")
        let token = try await Harness.token(for: user)
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("device").path
        var random = SplitMix(seed: 7)
        var written: Set<String> = []
        for _ in 0..<6 {
            // Killed after a random number of lines: just after a commit, or with a push in flight.
            let lines = try await SyncHelper.runUntilKilled(
                ["push-until-killed", path, server.url.absoluteString, token], afterLines: 2 + random.below(40))
            written.formUnion(lines.filter { $0.hasPrefix("wrote ") }.map { String($0.dropFirst(6)) })
        }
        let store = try await Store(at: URL(fileURLWithPath: path), configuration: .init(models: Synced.models))
        let client = try SyncClient(
            store: store, configuration: .init(server: server.url, token: token, models: Synced.models))
        try await client.sync()
        let local = Set(try await store.read { try $0.objects(Synced.Card.self).results().map(\.id) })
        let rows = try await Harness.sql("select id from cellar_records where owner = '\(user)' order by id")
        let onServer = Set(rows.split(separator: "\n").map(String.init))
        // Every commit the device reported is on the server, and the server holds exactly the device's cards.
        #expect(written.isSubset(of: onServer))
        #expect(local == onServer)
        #expect(await client.currentStatus.pendingChanges == 0)
        #expect(try await store.verifyIntegrity().problems.isEmpty)
    }

    @Test(arguments: ["willSend", "didSend"])
    func aDeviceKilledJustBeforeOrAfterAPushLosesNothingAndAppliesItOnce(moment: String) async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("moment")
        let token = try await Harness.token(for: user)
        let folder = TemporaryFolder()
        let path = folder.url.appendingPathComponent("device").path
        var written: Set<String> = []
        for push in [1, 3] {
            let lines = try await SyncHelper.run(
                ["push-until-killed", path, server.url.absoluteString, token],
                environment: ["CELLAR_SYNC_KILL": "\(moment):\(push)"], expectKilled: true)
            written.formUnion(lines.filter { $0.hasPrefix("wrote ") }.map { String($0.dropFirst(6)) })
            // It died in its push: the last card it wrote was never reported pushed.
            #expect(lines.last?.hasPrefix("wrote ") == true, "\(lines)")
        }
        let sequenceBefore = try await Harness.sql("select sequence from cellar_owners where owner = '\(user)'")
        let store = try await Store(at: URL(fileURLWithPath: path), configuration: .init(models: Synced.models))
        let client = try SyncClient(
            store: store, configuration: .init(server: server.url, token: token, models: Synced.models))
        let pending = try await store.read { try $0.pendingSyncCount() }
        #expect(pending == 1, "the change of the killed push waits in the outbox")
        try await client.pushAll()
        let rows = try await Harness.sql("select id from cellar_records where owner = '\(user)' order by id")
        #expect(Set(rows.split(separator: "\n").map(String.init)) == written)
        let sequenceAfter = try await Harness.sql("select sequence from cellar_owners where owner = '\(user)'")
        // Pushed again after the server had applied it: nothing changed on the server.
        if moment == "didSend" { #expect(sequenceAfter == sequenceBefore) }
        #expect(await client.currentStatus.pendingChanges == 0)
    }
}
