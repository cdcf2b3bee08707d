// A second process for the sync tests, for what one process cannot show: a device killed with kill -9 in the middle
// of a push, and devices that are separate processes.
//
// Usage:
//   cellar-sync-helper push-until-killed <store> <server> <token>
//       insert cards k0, k1, … each in its own transaction, printing "wrote kN" once committed, and push after each,
//       printing "pushed kN" once the server answered; until killed
//   cellar-sync-helper edit <store> <seed> <count>    make <count> random edits (`Synced.randomEdits`)
//   cellar-sync-helper sync <store> <server> <token>  one round (push, then pull); print "synced <pending>"
import Cellar
import CellarSync
import CellarSyncTestSupport
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: cellar-sync-helper <command> <store> …\n".utf8))
    exit(2)
}
let store = try Store(at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: Synced.models))

/// Writes a line to standard output at once: the test reads each before it kills this process.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func client() throws -> SyncClient {
    guard arguments.count >= 5, let server = URL(string: arguments[3]) else {
        FileHandle.standardError.write(Data("expected <server> <token>\n".utf8))
        exit(2)
    }
    return try SyncClient(
        store: store, configuration: .init(server: server, token: arguments[4], models: Synced.models))
}

switch arguments[1] {
case "push-until-killed":
    let sync = try client()
    var number = 0
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
    try await sync.sync()
    say("synced \(await sync.currentStatus.pendingChanges)")
default:
    FileHandle.standardError.write(Data("unknown command \(arguments[1])\n".utf8))
    exit(2)
}
