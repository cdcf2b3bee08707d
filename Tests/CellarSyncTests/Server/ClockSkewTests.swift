@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// A device whose clock is behind still wins with a change made after the changes it has seen; one whose clock is far
/// ahead is refused, in words, instead of winning every conflict until real time catches up.
@Suite("Sync: wrong clocks", .serialized, .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct ClockSkewTests {
    typealias Card = Synced.Card

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
        #expect(try await device.store.read { try $0.object(Card.self, id: "note") }?.title == "written an hour behind")
        // Its stamp is later than the one it replaced, though its clock read an hour earlier.
        let stamps = try #require(try await device.store.read { try $0.syncState(Card.self, id: "note") })
        #expect(stamps.stamps["title"]!.milliseconds >= stamps.stamps["id"]!.milliseconds)
    }

    @Test func aDeviceAnHourAheadIsRefusedAndChangesNothing() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("ahead")
        let token = try await Harness.token(for: user)
        let device = try SyncedDevice(server: server.url, token: token)
        try await device.store.write { try $0.insert(Card(id: "note", title: "written on time")) }
        try await device.client.sync()
        let ahead = TemporaryFolder()
        let lines = try await SyncHelper.run(
            ["retitle", ahead.url.path, server.url.absoluteString, token, "note", "from the future"],
            environment: ["CELLAR_SYNC_CLOCK_OFFSET_MS": "3600000"])
        let line = try #require(lines.first)
        #expect(line.hasPrefix("failed ") && line.contains("ahead"), "\(line)")
        try await device.client.sync()
        #expect(try await device.store.read { try $0.object(Card.self, id: "note") }?.title == "written on time")
    }
}
