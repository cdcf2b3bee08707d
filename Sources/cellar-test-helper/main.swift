// A second process for Cellar's tests, for what one process cannot show about itself: writes from two processes at
// once, commits that survive a kill -9, and reads of damaged files that might crash.
//
// Usage:
//   cellar-test-helper <store folder> <count>     insert <count> tickets, print their ids, one per line
//   cellar-test-helper write-until-killed <folder> insert tickets one durable transaction each, printing each id
//                                                 once its commit has returned, until killed
//   cellar-test-helper read-pets <folder>         read every pet, by scan and by index, and print what was found
//   cellar-test-helper read-raw <folder>          read every entry of every database through LMDB alone, without
//                                                 Cellar's page checks: what a reader would meet without them
//   cellar-test-helper adopt <folder> <count>     insert puppies 1...count, each in its own transaction appended to
//                                                 breeder 1's list, while the test deletes puppies from its process
//   cellar-test-helper pets-v1 <folder> <count>   insert <count> pets of schema version 1 (`MigrationModels.swift`)
//   cellar-test-helper migrate-v2 <folder>        open the pets with version 2, migrating them; print the count
//   cellar-test-helper read-only-pets <folder>    as a user who may not write the folder (root drops to nobody),
//                                                 open it writable, then read-only, then try a write; print each
//                                                 outcome on a line
//   cellar-test-helper hold <folder>              open the store and read it, print "open", and keep it open until
//                                                 stdin closes
//   cellar-test-helper insert-on-request <folder>  for each line read from stdin, insert one ticket in its own
//                                                 transaction (no fsync) and print its id once committed; exit at
//                                                 the end of stdin
//   cellar-test-helper notes-on-request <folder>  for each line "<id> <text>" read from stdin, save a note with that
//                                                 text (a line of an id alone deletes it) in its own transaction, and
//                                                 print "ok" once committed; exit at the end of stdin
//   cellar-test-helper crash-workload <folder> <workload> <durability> <short|long> <file>
//                                                 run a power-loss workload (`CrashWorkload`), writing each
//                                                 transaction's number to <file> (named *.acknowledged) once its
//                                                 commit returned: run under the write log of Tests/PowerLoss
//   cellar-test-helper app-decoders <folder> <story>
//                                                 run one story of AppDecoders.swift (models whose decoders trap,
//                                                 validate or branch, as app code does) and print what it ended with
//   cellar-test-helper slow-observers <folder>    commit 10,000 one-ticket updates while one observer pulls every
//                                                 50 ms and a callback's handler blocks; print "heap <bytes in use
//                                                 after 1,000 commits> <after 10,000> <deliveries>"
import Cellar
import CellarCrashTestSupport
import Foundation
import LMDB

struct Ticket: Model {
    var id: Int64 = 0
    var writer: String
    static let schema = Schema<Ticket>(autoIncrement: true)
}

/// The model of the damaged-file tests (`PageCheckTests.Pet`).
struct Pet: Model {
    var id: Int64 = 0
    var name: String
    var age: Int
    var photo: Data = Data()
    static let schema = Schema<Pet>(autoIncrement: true, indexes: [.index(\.age), .index(\.name)])
}

/// The models of the two-process relationship test (`LinkIntegrityTests`).
struct Breeder: Model {
    var id: Int
    var puppies: [Link<Puppy>] = []
    static let schema = Schema<Breeder>(links: [.link(\.puppies, exclusive: true)])
}

struct Puppy: Model {
    var id: Int
}

/// The pet of the migration tests (`MigrationModels.swift`) in schema versions 1 and 2.
struct PetV1: Model {
    var id: Int64 = 0
    var name: String
    var age: Int
    static let schema = Schema<PetV1>(name: "Pet", autoIncrement: true)
}

struct PetV2: Model {
    var id: Int64 = 0
    var name: String
    var age: Int
    var color: String
    static let schema = Schema<PetV2>(name: "Pet", autoIncrement: true)
}

/// The note of the search observation test (`FullTextAcrossFeaturesTests.Note`), searchable by its text.
struct Note: Model {
    var id: String
    var text: String
    static let schema = Schema<Note>(indexes: [.fullText(\.text)])
}

/// The process's anonymous resident memory (heap and stacks, not the store's mapped file), from Linux's
/// `/proc/self/status`; 0 elsewhere.
func heapInUse() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("RssAnon:") }),
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return 0 }
    return kilobytes * 1_024
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("cellar-test-helper: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
switch (arguments.count, arguments.count > 1 ? arguments[1] : "") {
case (3, "write-until-killed"):
    do {
        let store = try Store(at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: [Ticket.self]))
        while true {
            let id = try store.write { tx in try tx.insert(Ticket(writer: "helper")).id }
            // Unbuffered: a line the test reads is a commit that returned.
            FileHandle.standardOutput.write(Data("\(id)\n".utf8))
        }
    } catch {
        fail("\(error)")
    }
case (3, "read-pets"):
    // Prints "ok <records> <digest of every value> <indexed>" or "error <description>"; a crash shows as a signal.
    do {
        let store = try Store(at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: [Pet.self]))
        let pets = try store.objects(Pet.self).results()
        let indexed =
            try store.objects(Pet.self).where(\.age == 1).count()
            + store.objects(Pet.self).where(.hasPrefix(\.name, "pet 1")).results().count
        var digest: UInt64 = 0xCBF2_9CE4_8422_2325
        for pet in pets {
            for byte in withUnsafeBytes(of: (pet.id, pet.age), Array.init) + Array(pet.name.utf8) + Array(pet.photo) {
                digest = (digest ^ UInt64(byte)) &* 0x100_0000_01B3
            }
        }
        print("ok \(pets.count) \(String(digest, radix: 16)) \(indexed)")
    } catch {
        print("error \(error)")
    }
case (3, "read-only-pets"):
    if getuid() == 0 {
        // root may write anything: become a user who may not, as an app reading a store it does not own.
        guard setgroups(0, nil) == 0, setgid(65_534) == 0, setuid(65_534) == 0 else { fail("cannot become nobody") }
    }
    let folder = URL(fileURLWithPath: arguments[2])
    do {
        _ = try Store(at: folder, configuration: .init(models: [Pet.self]))
        print("writable: opened")
    } catch {
        print("writable: \(error)")
    }
    do {
        var configuration = Configuration(models: [Pet.self])
        configuration.readOnly = true
        let store = try Store(at: folder, configuration: configuration)
        print(
            "read-only: \(try store.count(Pet.self)) pets, \(try store.objects(Pet.self).where(\.age == 1).count()) aged 1"
        )
        do {
            try store.write { tx in _ = try tx.insert(Pet(name: "new", age: 1)) }
            print("write: written")
        } catch {
            print("write: \(error)")
        }
    } catch {
        print("read-only: \(error)")
    }
case (3, "read-raw"):
    do {
        let environment = try Environment(path: arguments[2])
        let entries = try environment.read { txn in
            guard let main = try txn.openDatabase(named: nil) else { return 0 }
            var names: [String] = []
            try txn.walk(main) { entry in
                names.append(String(decoding: entry.key, as: UTF8.self))
                return true
            }
            var entries = 0
            for name in names {
                guard let database = try txn.openDatabase(named: name) else { continue }
                try txn.walk(database) { entry in
                    entries += entry.key.count > 0 ? 1 : 0
                    return true
                }
            }
            return entries
        }
        print("ok \(entries)")
    } catch {
        print("error \(error)")
    }
case (4, "adopt"):
    guard let count = Int(arguments[3]) else { fail("usage: cellar-test-helper adopt <folder> <count>") }
    do {
        let store = try Store(
            at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: [Breeder.self, Puppy.self]))
        for id in 1...count {
            try store.write { tx in
                // Read inside the transaction: the other process may have dropped puppies from the list meanwhile.
                guard var breeder = try tx.object(Breeder.self, id: 1) else { fail("no breeder 1") }
                try tx.insert(Puppy(id: id))
                breeder.puppies.append(Link(id: id))
                try tx.update(breeder)
            }
        }
        print("ok")
    } catch {
        fail("\(error)")
    }
case (4, "pets-v1"):
    guard let count = Int(arguments[3]) else { fail("usage: cellar-test-helper pets-v1 <folder> <count>") }
    do {
        let store = try Store(at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: [PetV1.self]))
        try store.write { tx in
            for index in 0..<count { try tx.insert(PetV1(name: "pet \(index)", age: index % 10)) }
        }
        print("ok")
    } catch {
        fail("\(error)")
    }
case (3, "migrate-v2"):
    do {
        let migration = MigrationStep.to(2) { migration in
            try migration.enumerateRecords(ofType: "Pet") { pet in
                let age = try pet.value("age", as: Int.self) ?? 0
                try pet.set("color", to: age < 5 ? "brown" : "grey")
            }
        }
        let store = try Store(
            at: URL(fileURLWithPath: arguments[2]),
            configuration: .init(models: [PetV2.self], schemaVersion: 2, migrations: [migration]))
        print("ok \(try store.count(PetV2.self))")
    } catch {
        fail("\(error)")
    }
case (3, "hold"):
    do {
        let store = try Store(at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: []))
        // A read leaves this process a slot in the reader table, kept for the next read.
        try store.read { _ in }
        FileHandle.standardOutput.write(Data("open\n".utf8))
        while readLine() != nil {}
        withExtendedLifetime(store) {}
    } catch {
        fail("\(error)")
    }
case (3, "insert-on-request"):
    do {
        let store = try Store(
            at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: [Ticket.self], durability: .none))
        while readLine() != nil {
            let id = try store.write { tx in try tx.insert(Ticket(writer: "helper")).id }
            // Unbuffered: a line the test reads is a commit that returned.
            FileHandle.standardOutput.write(Data("\(id)\n".utf8))
        }
    } catch {
        fail("\(error)")
    }
case (3, "notes-on-request"):
    do {
        let store = try Store(
            at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: [Note.self], durability: .none))
        while let line = readLine() {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard let id = parts.first.map(String.init) else { continue }
            try store.write { tx in
                if parts.count == 2 {
                    try tx.upsert(Note(id: id, text: String(parts[1])))
                } else {
                    try tx.delete(Note.self, id: id)
                }
            }
            FileHandle.standardOutput.write(Data("ok\n".utf8))
        }
    } catch {
        fail("\(error)")
    }
case (7, "crash-workload"):
    guard let workload = CrashWorkload(rawValue: arguments[3]),
        let durability = ["full": Configuration.Durability.full, "relaxed": .relaxed, "none": .none][arguments[4]]
    else {
        fail("usage: cellar-test-helper crash-workload <folder> <workload> <full|relaxed|none> <short|long> <file>")
    }
    do {
        let acknowledged = try FileHandle(forWritingTo: URL(fileURLWithPath: arguments[6]))
        try workload.run(at: URL(fileURLWithPath: arguments[2]), durability: durability, long: arguments[5] == "long") {
            number, _ in
            // One write call a number: the write log records it between the file writes around it.
            try acknowledged.write(contentsOf: Data("\(number)\n".utf8))
        }
    } catch {
        fail("\(error)")
    }
case (3, "slow-observers"):
    do {
        let store = try Store(
            at: URL(fileURLWithPath: arguments[2]), configuration: .init(models: [Ticket.self], durability: .none))
        try store.write { tx in for _ in 0..<100 { try tx.insert(Ticket(writer: "first")) } }
        let query = store.objects(Ticket.self).sorted(by: \.writer)
        let started = DispatchSemaphore(value: 0)
        let deliveries = Lock(0)
        let consumer = Task.detached {
            for try await _ in store.changes(of: query) {
                if deliveries.withLock({ count in
                    count += 1
                    return count == 1
                }) {
                    started.signal()
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        let blocked = DispatchSemaphore(value: 0)
        let token = store.observe(query, on: DispatchQueue(label: "blocked")) { _ in blocked.wait() }
        started.wait()
        var heap: [Int] = []
        for commit in 1...10_000 {
            try store.write { tx in try tx.update(Ticket(id: Int64(commit % 100 + 1), writer: "w\(commit)")) }
            if commit == 1_000 || commit == 10_000 { heap.append(heapInUse()) }
        }
        print("heap \(heap[0]) \(heap[1]) \(deliveries.withLock { $0 })")
        consumer.cancel()
        token.cancel()
        blocked.signal()
    } catch {
        fail("\(error)")
    }
case (4, "app-decoders"):
    do {
        print(try AppDecoderStories.run(arguments[3], in: URL(fileURLWithPath: arguments[2])))
    } catch {
        print("error \(error)")
    }
case (3, _):
    guard let count = Int(arguments[2]) else { fail("usage: cellar-test-helper <store folder> <count>") }
    do {
        let store = try Store(at: URL(fileURLWithPath: arguments[1]), configuration: .init(models: [Ticket.self]))
        var ids: [Int64] = []
        for _ in 0..<count {
            ids.append(try store.write { tx in try tx.insert(Ticket(writer: "helper")).id })
        }
        print(ids.map(String.init).joined(separator: "\n"))
    } catch {
        fail("\(error)")
    }
default:
    fail("usage: see the comment at the top of main.swift")
}
