@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Synchronization
import Testing

/// The server's history is one a cursor names exactly: a database restored from a backup (or failed over to a replica
/// that lost transactions) cannot vouch for the cursors of devices that synced since, and those devices reset.
@Suite("Sync: client reset", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct ClientResetTests {
    typealias Card = Synced.Card
    typealias Folder = Synced.Folder

    /// The user's rows as a backup holds them: copied aside, and later put back in place of what the server has then.
    struct Backup {
        let user: String
        let suffix = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        static let tables = ["cellar_records", "cellar_commits", "cellar_owners", "cellar_models"]

        func take() async throws {
            for table in Self.tables {
                _ = try await Harness.sql(
                    "CREATE TABLE backup_\(suffix)_\(table) AS SELECT * FROM \(table) WHERE owner = '\(user)'")
            }
        }

        func restore() async throws {
            var script = "BEGIN;"
            for table in Self.tables {
                script += "DELETE FROM \(table) WHERE owner = '\(user)';"
                script += "INSERT INTO \(table) SELECT * FROM backup_\(suffix)_\(table);"
                script += "DROP TABLE backup_\(suffix)_\(table);"
            }
            _ = try await Harness.sql(script + "COMMIT;")
        }
    }

    final class Events: Sendable {
        let list = Mutex<[ClientResetEvent]>([])
        func record(_ event: ClientResetEvent) { list.withLock { $0.append(event) } }
        var all: [ClientResetEvent] { list.withLock { $0 } }
    }

    func device(
        _ server: ServerProcess, _ token: String, mode: ClientResetMode = .recoverUnsyncedChanges, events: Events? = nil
    ) throws -> SyncedDevice {
        var configuration = SyncConfiguration(server: server.url, token: token, models: Synced.models)
        configuration.clientReset = mode
        if let events { configuration.onClientReset = { events.record($0) } }
        return try SyncedDevice(configuration: configuration)
    }

    func ids(_ device: SyncedDevice) async throws -> [String] {
        try await device.store.read { try $0.objects(Card.self).sorted(by: \.id).results().map(\.id) }
    }

    /// The issue's scenario: two devices acknowledged changes after the backup was taken; the database is restored;
    /// a third device's new change takes the sequence numbers they had seen. Every record either device ever
    /// acknowledged ends on the server and on all three devices, converged.
    @Test func aRestoredDatabaseGetsBackEveryAcknowledgedChange() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("restore")
        let token = try await Harness.token(for: user)
        let events = Events()
        let a = try device(server, token, events: events)
        let b = try device(server, token)
        try await a.store.write { try $0.insert(Card(id: "c1", title: "before the backup")) }
        try await a.client.sync()
        try await b.client.sync()
        let backup = Backup(user: user)
        try await backup.take()

        try await a.store.write { try $0.insert(Card(id: "c2", title: "acknowledged after the backup, by a")) }
        try await a.client.sync()
        try await b.client.sync()
        try await b.store.write { txn in
            try txn.insert(Card(id: "c3", title: "acknowledged after the backup, by b"))
            try txn.update(Card(id: "c1", title: "edited by b after the backup"))
        }
        try await b.client.sync()
        try await a.client.sync()
        try await backup.restore()
        #expect(try await Harness.sql("SELECT count(*) FROM cellar_records WHERE owner = '\(user)'") == "1")

        // A third device writes: its transaction takes the sequence a and b stand on, under another id.
        let c = try device(server, token)
        try await c.store.write { try $0.insert(Card(id: "c4", title: "after the restore, by c")) }
        try await c.client.sync()

        try await a.client.sync()
        try await b.client.sync()
        try await c.client.sync()
        try await a.client.sync()
        let expected = ["c1", "c2", "c3", "c4"]
        for device in [a, b, c] { #expect(try await ids(device) == expected) }
        #expect(try a.contents() == b.contents())
        #expect(try b.contents() == c.contents())
        #expect(
            try await Harness.sql(
                "SELECT string_agg(id, ',' ORDER BY id) FROM cellar_records WHERE owner = '\(user)' AND NOT tombstone")
                == expected.joined(separator: ","))
        #expect(try await a.store.read { try $0.object(Card.self, id: "c1") }?.title == "edited by b after the backup")
        let seen = events.all
        #expect(seen.count == 2, "\(seen)")
        if case .willReset(let reason, .recoverUnsyncedChanges)? = seen.first {
            #expect(reason.contains("restored"), "\(reason)")
        } else {
            Issue.record("no willReset first: \(seen)")
        }
        #expect(
            seen.last.map {
                if case .didReset(.recoverUnsyncedChanges, let repushed) = $0 { repushed > 0 } else { false }
            } == true)
    }

    /// In discard mode, a reset drops this device's changes the server does not hold, and takes the server's records.
    @Test func discardingTakesTheServersRecords() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("restore-discard")
        let token = try await Harness.token(for: user)
        let a = try device(server, token, mode: .discardUnsyncedChanges)
        try await a.store.write { try $0.insert(Card(id: "kept", title: "before the backup")) }
        try await a.client.sync()
        let backup = Backup(user: user)
        try await backup.take()
        try await a.store.write { try $0.insert(Card(id: "lost", title: "after the backup")) }
        try await a.client.sync()
        try await backup.restore()
        try await a.store.write { try $0.insert(Card(id: "offline", title: "not pushed before the reset")) }
        try await a.client.sync()
        #expect(try await ids(a) == ["kept"])
        #expect(try await a.store.read { try $0.pendingSyncCount() } == 0)
    }

    /// In manual mode, sync fails with `clientResetRequired` until the app resets.
    @Test func manualModeWaitsForTheApp() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("restore-manual")
        let token = try await Harness.token(for: user)
        let a = try device(server, token, mode: .manual)
        try await a.store.write { try $0.insert(Card(id: "one", title: "one")) }
        try await a.client.sync()
        let backup = Backup(user: user)
        try await backup.take()
        try await a.store.write { try $0.insert(Card(id: "two", title: "two")) }
        try await a.client.sync()
        try await backup.restore()
        await #expect {
            try await a.client.sync()
        } throws: { error in
            if case SyncError.clientResetRequired = error { true } else { false }
        }
        try await a.client.resetClient(.recoverUnsyncedChanges)
        #expect(
            try await Harness.sql("SELECT string_agg(id, ',' ORDER BY id) FROM cellar_records WHERE owner = '\(user)'")
                == "one,two")
    }

    /// The server's side: a cursor past its history, one naming a transaction it does not hold, or one from another
    /// server, is answered 410 `resetRequired` (before, the first was answered 200 and empty).
    @Test func aCursorTheServerCannotVouchForIsRefused() async throws {
        let server = try await ServerProcess()
        let device = Device(
            server: server.url, token: try await Harness.token(for: Harness.newUser("cursor")), id: Harness.device("6"))
        _ = try await device.push([change("rex", ["name": .string("Rex")], stamp: Harness.stamp(device.id))])
        let real = try #require(try await device.pull(cursor: nil).cursor)
        let cases = [
            PullRequest(
                device: device.id, models: Device.models, cursor: SyncCursor(sequence: 1_000, commit: real.commit),
                limit: 10, wait: 0),
            PullRequest(
                device: device.id, models: Device.models, cursor: SyncCursor(sequence: real.sequence, commit: "other"),
                limit: 10, wait: 0),
            PullRequest(
                device: device.id, server: "another server", models: Device.models, cursor: real, limit: 10, wait: 0),
        ]
        for request in cases {
            let answer = try await device.refused(SyncProtocol.pullPath, body: Data(request.jsonBytes))
            #expect(answer.status == 410)
            #expect(answer.failure.code == .resetRequired, "\(answer.failure)")
        }
        #expect(try await device.pull(cursor: real).changes.isEmpty)
    }
}
