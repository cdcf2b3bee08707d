@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// Stamps follow the server's clock: a device whose clock is behind or ahead still syncs, its changes come after what
/// it saw, and it cannot win conflicts by being ahead; one that wrote offline while its clock was a day ahead syncs what
/// it wrote once it reaches the server.
@Suite("Sync: wrong clocks", .serialized, .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct ClockSkewTests {
    typealias Card = Synced.Card

    func title(_ device: SyncedDevice) async throws -> String? {
        try await device.store.read { try $0.object(Card.self, id: "note") }?.title
    }

    @Test func aDeviceAnHourBehindWinsWithAChangeMadeAfterWhatItSaw() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("behind")
        let token = try await Harness.token(for: user)
        let device = try SyncedDevice(server: server.url, token: token)
        try await device.store.write { try $0.insert(Card(id: "note", title: "written on time")) }
        try await device.client.sync()
        let behind = TemporaryFolder()
        let lines = try await SyncHelper.run(
            ["retitle", behind.url.path, server.url.absoluteString, token, "note", "written an hour behind"],
            environment: ["CELLAR_SYNC_CLOCK_OFFSET_MS": "-3600000"])
        #expect(lines == ["retitled"])
        try await device.client.sync()
        #expect(try await title(device) == "written an hour behind")
        // Its stamp is later than the one it replaced, though its clock read an hour earlier.
        let stamps = try #require(try await device.store.read { try $0.syncState(Card.self, id: "note") })
        #expect(stamps.stamps["title"]!.milliseconds >= stamps.stamps["id"]!.milliseconds)
    }

    /// Before: refused ("stamped 1 h ahead of the server's clock"), its change pending until real time caught up.
    @Test func aDeviceAnHourAheadSyncsAndCannotWinByBeingAhead() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("ahead")
        let token = try await Harness.token(for: user)
        let device = try SyncedDevice(server: server.url, token: token)
        try await device.store.write { try $0.insert(Card(id: "note", title: "written on time")) }
        try await device.client.sync()
        let ahead = TemporaryFolder()
        let environment = ["CELLAR_SYNC_CLOCK_OFFSET_MS": "3600000"]
        let lines = try await SyncHelper.run(
            ["retitle", ahead.url.path, server.url.absoluteString, token, "note", "from the clock an hour ahead"],
            environment: environment)
        #expect(lines == ["retitled"])
        try await device.client.sync()
        #expect(try await title(device) == "from the clock an hour ahead")
        let stamp = try #require(
            try await device.store.read { try $0.syncState(Card.self, id: "note") }?.stamps["title"])
        #expect(stamp.milliseconds <= UInt64(Date().timeIntervalSince1970 * 1000) + 60_000)

        // A change made after it, on a device whose clock is right, wins everywhere.
        try await Task.sleep(for: .milliseconds(20))
        try await device.store.write { try $0.update(Card(id: "note", title: "later, on time")) }
        try await device.client.sync()
        #expect(
            try await SyncHelper.run(
                ["sync", ahead.url.path, server.url.absoluteString, token], environment: environment)
                == ["synced 0"])
        let check = try await SyncHelper.run(["sync", ahead.url.path, server.url.absoluteString, token])
        #expect(check == ["synced 0"])
        let store = try await Store(at: ahead.url, configuration: .init(models: Synced.models))
        #expect(try await store.read { try $0.object(Card.self, id: "note") }?.title == "later, on time")
    }

    /// Before: every later sync was refused until real time caught up with the day-ahead stamp, though the clock was
    /// right again.
    @Test func aDeviceThatWroteWithItsClockADayAheadSyncsItOnceTheClockIsRight() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("was-ahead")
        let token = try await Harness.token(for: user)
        let device = try SyncedDevice(server: server.url, token: token)
        try await device.store.write { try $0.insert(Card(id: "note", title: "written on time")) }
        try await device.client.sync()
        let folder = TemporaryFolder()
        let address = server.url.absoluteString
        #expect(try await SyncHelper.run(["sync", folder.url.path, address, token]) == ["synced 0"])
        let dayAhead = ["CELLAR_SYNC_CLOCK_OFFSET_MS": "86400000"]
        #expect(
            try await SyncHelper.run(
                ["retitle-offline", folder.url.path, address, token, "note", "written a day ahead"],
                environment: dayAhead) == ["retitled offline"])
        // The clock is right again: what it wrote goes, nothing lost.
        #expect(try await SyncHelper.run(["sync", folder.url.path, address, token]) == ["synced 0"])
        try await device.client.sync()
        #expect(try await title(device) == "written a day ahead")
        // And it does not win over a change made after it.
        try await device.store.write { try $0.update(Card(id: "note", title: "after it")) }
        try await device.client.sync()
        #expect(try await SyncHelper.run(["sync", folder.url.path, address, token]) == ["synced 0"])
        let store = try await Store(at: folder.url, configuration: .init(models: Synced.models))
        #expect(try await store.read { try $0.object(Card.self, id: "note") }?.title == "after it")
    }
}
