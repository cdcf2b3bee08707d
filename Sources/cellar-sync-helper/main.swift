// A second process for the sync tests, for what one process cannot show: a device killed with kill -9 in the middle
// of a push, and devices that are separate processes.
//
// Usage:
//   cellar-sync-helper push-until-killed <store> <server> <token>
//       insert cards k0, k1, … (after those already there), each in its own transaction, printing "wrote kN" once committed, and push after each,
//       printing "pushed kN" once the server answered; until killed
//   cellar-sync-helper edit <store> <seed> <count>    make <count> random edits (`Synced.randomEdits`)
//   cellar-sync-helper sync <store> <server> <token>  one round (push, then pull); print "synced <pending>"
//   cellar-sync-helper retitle <store> <server> <token> <id> <title>   sync, retitle a card, sync
//   cellar-sync-helper retitle-offline <store> <server> <token> <id> <title>   retitle a card, without syncing
//   With CELLAR_SYNC_CLOCK_OFFSET_MS=N, the device's clock is N milliseconds off.
//   With CELLAR_SYNC_KILL=willSend:N or didSend:N, the process kills itself as its Nth push is about to be sent, or
//   once the server answered it and before the outbox is cleared.
@_spi(Testing) import Cellar
@_spi(Testing) import CellarSync
import CellarSyncTestSupport
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: cellar-sync-helper <command> <store> …\n".utf8))
    exit(2)
}
// CELLAR_SYNC_CLOCK_OFFSET_MS: this device's clock is that far from the true time (a device with a wrong clock).
if let offset = ProcessInfo.processInfo.environment["CELLAR_SYNC_CLOCK_OFFSET_MS"].flatMap({ Int64($0) }) {
    SyncClock.setOffset(milliseconds: offset)
}
let store = try Store(at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: Synced.models))

/// Writes a line to standard output at once: the test reads each before it kills this process.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func client() throws -> SyncClient {
    guard arguments.count >= 5, let server = URL(string: arguments[3]) else {
        FileHandle.standardError.write(Data("expected <server> <token>\n".utf8))
        exit(2)
    }
    var configuration = SyncConfiguration(server: server, token: arguments[4], models: Synced.models)
    // CELLAR_SYNC_KILL=willSend:N or didSend:N kills this process at that moment of its Nth push.
    if let spec = ProcessInfo.processInfo.environment["CELLAR_SYNC_KILL"], let colon = spec.firstIndex(of: ":"),
        let count = Int(spec[spec.index(after: colon)...])
    {
        let moment: SyncConfiguration.PushMoment = spec[..<colon] == "willSend" ? .willSend : .didSend
        let pushes = Counter()
        configuration.onPush = { point in
            if point == .willSend, pushes.increment() == count, moment == .willSend { kill(getpid(), SIGKILL) }
            if point == .didSend, pushes.value == count, moment == .didSend { kill(getpid(), SIGKILL) }
        }
    }
    return try SyncClient(store: store, configuration: configuration)
}

/// Counts pushes across the hook's calls.
final class Counter: @unchecked Sendable {
    private var count = 0
    private let lock = NSLock()
    var value: Int { lock.withLock { count } }
    func increment() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }
}

switch arguments[1] {
case "push-until-killed":
    let sync = try client()
    // Numbered on from the cards an earlier, killed run left.
    var number = try store.read { try $0.count(Synced.Card.self) }
    while true {
        let id = "k\(number)"
        try store.write { try $0.insert(Synced.Card(id: id, title: "written by process \(getpid())")) }
        say("wrote \(id)")
        try await sync.pushAll()
        say("pushed \(id)")
        number += 1
    }
case "edit":
    var random = SplitMix(seed: UInt64(arguments[3]) ?? 1)
    try Synced.randomEdits(store, count: Int(arguments[4]) ?? 10, using: &random)
    say("edited")
case "sync":
    let sync = try client()
    do {
        try await sync.sync()
        say("synced \(await sync.currentStatus.pendingChanges)")
    } catch {
        say("failed \(error)")
    }
case "retitle":
    // retitle <store> <server> <token> <card id> <title>: pull, change the card's title, push.
    let sync = try client()
    do {
        try await sync.sync()
        try store.write { txn in
            guard var card = try txn.object(Synced.Card.self, id: arguments[5]) else { return }
            card.title = arguments[6]
            try txn.update(card)
        }
        try await sync.sync()
        say("retitled")
    } catch {
        say("failed \(error)")
    }
case "retitle-offline":
    // A change made with no server in reach: stamped by this machine's clock, whatever it says.
    _ = try client()
    try store.write { txn in
        guard var card = try txn.object(Synced.Card.self, id: arguments[5]) else { return }
        card.title = arguments[6]
        try txn.update(card)
    }
    say("retitled offline")
default:
    FileHandle.standardError.write(Data("unknown command \(arguments[1])\n".utf8))
    exit(2)
}
