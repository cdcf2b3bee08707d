import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// A tally of taps: two devices that tap offline keep every tap, which per-property last-writer-wins would not.
struct Tally: Model, SyncResolving, Equatable {
    var id: String
    var taps: Int
    var label: String = ""

    static func resolve(local: Tally, remote: Tally, base: Tally?) -> Tally {
        var merged = remote
        merged.taps = remote.taps + local.taps - (base?.taps ?? 0)
        if local.label != (base?.label ?? "") { merged.label = local.label }
        return merged
    }
}

@Suite(
    "Sync: a model's own resolver", .serialized, .enabled(if: Harness.canRun, Harness.skipMessage),
    .hangGuard)
struct ResolverTests {
    @Test func twoDevicesTappingOfflineKeepEveryTap() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("tally")
        let token = try await Harness.token(for: user)
        let a = try SyncedDevice(server: server.url, token: token, models: [Tally.self])
        let b = try SyncedDevice(server: server.url, token: token, models: [Tally.self])
        try await a.store.write { try $0.insert(Tally(id: "t", taps: 1)) }
        try await a.client.sync()
        try await b.client.sync()
        // Offline: a taps twice, b three times and renames it.
        try await a.store.write { try $0.update(Tally(id: "t", taps: 3)) }
        try await b.store.write { try $0.update(Tally(id: "t", taps: 4, label: "door")) }
        try await a.client.sync()
        try await b.client.sync()
        try await a.client.sync()
        for device in [a, b] {
            let tally = try await device.store.read { try $0.object(Tally.self, id: "t") }
            #expect(tally == Tally(id: "t", taps: 6, label: "door"))
        }
        let row = try await Harness.sql(
            "select record->>'taps' from cellar_records where owner = '\(user)' and id = 't'")
        #expect(row == "6")
        // Again, from the new base: a taps once more, b once more.
        try await a.store.write { try $0.update(Tally(id: "t", taps: 7, label: "door")) }
        try await b.store.write { try $0.update(Tally(id: "t", taps: 7, label: "door")) }
        try await b.client.sync()
        try await a.client.sync()
        try await b.client.sync()
        for device in [a, b] {
            #expect(try await device.store.read { try $0.object(Tally.self, id: "t") }?.taps == 8)
        }
    }
}
