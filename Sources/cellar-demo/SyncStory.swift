// `cellar-demo sync --server URL --token TOKEN`: two devices, a phone and a laptop, each with its own store, sync
// through a running cellar-server (`Server/demo` starts one on a private PostgreSQL and runs this).
import Cellar
import CellarSync
import Foundation

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

    init(_ name: String, in folder: URL, server: URL, token: String) throws {
        self.name = name
        store = try Store(at: folder.appendingPathComponent(name), configuration: .init(models: [Note.self]))
        sync = try SyncClient(
            store: store, configuration: SyncConfiguration(server: server, token: token, models: [Note.self]))
    }

    func titles() throws -> [String] {
        try store.read { try $0.objects(Note.self).sorted(by: \.title).results().map(\.title) }
    }
}

func syncStory(server: URL, token: String) async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cellar-sync-demo-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let phone = try Device("phone", in: folder, server: server, token: token)
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
}
