// `cellar-demo sync --server URL --token TOKEN [--other-token TOKEN]`: two devices, a phone and a laptop, each with its
// own store, sync through a running cellar-server (`Server/demo` starts one on a private PostgreSQL and runs this).
import Cellar
import CellarSync
import Foundation
import Synchronization

/// A note, synced: its id is a UUID, so two devices never make two notes with one id.
struct Note: Model, Equatable {
    var id = UUID()
    var title: String
    var body: String? = nil
    var tags: [String] = []
}

/// A device: a store of its own and its sync client.
struct Device {
    let name: String
    let store: Store
    let sync: SyncClient

    init(_ name: String, in folder: URL, server: URL, token: String, events: ResetEvents? = nil) throws {
        self.name = name
        store = try Store(at: folder.appendingPathComponent(name), configuration: .init(models: [Note.self]))
        var configuration = SyncConfiguration(server: server, token: token, models: [Note.self])
        if let events { configuration.onClientReset = { events.record($0) } }
        sync = try SyncClient(store: store, configuration: configuration)
    }

    func titles() throws -> [String] {
        try store.read { try $0.objects(Note.self).sorted(by: \.title).results().map(\.title) }
    }
}

/// What a client reset said, before and after.
final class ResetEvents: Sendable {
    private let events = Mutex<[ClientResetEvent]>([])
    func record(_ event: ClientResetEvent) { events.withLock { $0.append(event) } }
    var all: [ClientResetEvent] { events.withLock { $0 } }
}

func syncStory(server: URL, token: String, otherUsersToken: String? = nil) async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cellar-sync-demo-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let events = ResetEvents()
    let phone = try Device("phone", in: folder, server: server, token: token, events: events)
    let laptop = try Device("laptop", in: folder, server: server, token: token)
    print("Cellar sync demo: two devices of one user, syncing through \(server.absoluteString)")

    heading("Offline on both devices, then one round each")
    let groceries = Note(title: "Groceries", body: "milk", tags: ["errand"])
    try await phone.store.write { txn in
        try txn.insert(groceries)
        try txn.insert(Note(title: "Call the vet"))
    }
    try await laptop.store.write { try $0.insert(Note(title: "Book the train")) }
    say("phone pending: \(try await phone.store.read { try $0.objects(Note.self).count() }) notes, laptop: 1")
    try await phone.sync.sync()
    try await laptop.sync.sync()
    try await phone.sync.sync()
    say("phone:  \(try phone.titles())")
    say("laptop: \(try laptop.titles())")

    heading("The same note edited on both, different properties: both edits stay")
    try await phone.store.write { txn in
        var note = groceries
        note.body = "milk, eggs"
        try txn.update(note)
    }
    try await laptop.store.write { txn in
        var note = groceries
        note.tags = ["errand", "saturday"]
        try txn.update(note)
    }
    try await phone.sync.sync()
    try await laptop.sync.sync()
    try await phone.sync.sync()
    for device in [phone, laptop] {
        let note = try await device.store.read { try $0.object(Note.self, id: groceries.id) }
        say("\(device.name): body \(note?.body ?? "nil"), tags \(note?.tags ?? [])")
    }

    heading("Deleted on the phone while the laptop edits it: the delete wins")
    let vet = try await phone.store.read { try $0.objects(Note.self).where(\.title == "Call the vet").first() }
    if let vet {
        try await phone.store.write { try $0.delete(vet) }
        try await laptop.store.write { txn in
            var edited = vet
            edited.title = "Call the vet before noon"
            try txn.update(edited)
        }
    }
    try await phone.sync.sync()
    try await laptop.sync.sync()
    try await phone.sync.sync()
    say("phone:  \(try phone.titles())")
    say("laptop: \(try laptop.titles())")

    heading("Live: the laptop sees the phone's commit without asking")
    await laptop.sync.start()
    let changes = laptop.store.changes(of: laptop.store.objects(Note.self).sorted(by: \.title))
    var iterator = changes.makeAsyncIterator()
    _ = try await iterator.next()
    let started = ContinuousClock.now
    try await phone.store.write { try $0.insert(Note(title: "Water the plants")) }
    try await phone.sync.pushAll()
    if let change = try await iterator.next() {
        let elapsed = ContinuousClock.now - started
        say("laptop saw \(change.results.map(\.title)) after \(elapsed.formatted(.units(allowed: [.milliseconds])))")
    }
    await laptop.sync.stop()
    let status = await laptop.sync.currentStatus
    say("laptop status: \(status.activity), \(status.pendingChanges) pending")

    heading("A client reset: download again what the server has, push back what it lacks")
    // The server asks for one when it cannot vouch for where a device stands: its database was restored from a
    // backup, failed over, or made again. The app can also ask, as here; the configuration says what happens to this
    // device's changes (recover, the default; discard; or manual).
    try await phone.store.write { try $0.insert(Note(title: "Written just before the reset")) }
    try await phone.sync.resetClient(.recoverUnsyncedChanges)
    for event in events.all { say("phone: \(event)") }
    try await laptop.sync.sync()
    say("laptop: \(try laptop.titles())")

    guard let otherUsersToken else { return }
    heading("Another user signs in on the laptop: refused until the store signs out")
    let guest = try SyncClient(
        store: laptop.store,
        configuration: SyncConfiguration(server: server, token: otherUsersToken, models: [Note.self]))
    do {
        try await guest.sync()
    } catch {
        say("refused: \(error)")
    }
    try await guest.signOut()
    say("signed out: the laptop holds \(try laptop.titles().count) notes; they stay on the server for its user")
    let guestClient = try SyncClient(
        store: laptop.store,
        configuration: SyncConfiguration(server: server, token: otherUsersToken, models: [Note.self]))
    try await guestClient.sync()
    say("the guest's notes on the laptop: \(try laptop.titles())")
}
