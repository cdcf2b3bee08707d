import Foundation
import LMDB
import Testing

@_spi(Sync) @testable import Cellar

/// The `cellar` executable, run as a user runs it, on real stores.
@Suite("The cellar tool")
struct CellarToolTests {
    struct Address: Codable, Sendable, Equatable {
        var street: String
        var zip: Int
    }

    struct Owner: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var address: Address?
        var pups: [Link<Pup>] = []
        static let schema = Schema<Owner>(
            autoIncrement: true, indexes: [.unique(\.name)], links: [.link(\.pups, exclusive: true)])
    }

    struct Pup: Model, Equatable {
        var id: String
        var age: Int
        var born: Date
        var tag: UUID
        var photo: Data
        var tricks: [String]
        var nickname: String?
        static let schema = Schema<Pup>(indexes: [.index(\.age), .index(\.nickname, name: "nick")])
    }

    static let tag = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!

    /// A closed store of two owners and three pups.
    static func kennel(in folder: TemporaryFolder) throws {
        let store = try folder.store([Owner.self, Pup.self])
        try store.write { tx in
            let born = Date(timeIntervalSinceReferenceDate: 0)
            try tx.insert(Pup(id: "rex", age: 3, born: born, tag: tag, photo: Data([1, 2]), tricks: ["sit"]))
            try tx.insert(
                Pup(id: "taro", age: 3, born: born, tag: tag, photo: Data(), tricks: [], nickname: "T \"the\" dog"))
            try tx.insert(Pup(id: "zed", age: 7, born: born, tag: tag, photo: Data(), tricks: ["roll", "beg"]))
            try tx.insert(
                Owner(
                    name: "Ann", address: Address(street: "Elm", zip: 12_345),
                    pups: [Link(id: "rex"), Link(id: "taro")]
                ))
            try tx.insert(Owner(name: "Bo", pups: [Link(id: "zed")]))
        }
    }

    struct Run {
        let status: Int32
        let output: String
        let errors: String
    }

    /// Runs `cellar` with `arguments` to its end.
    static func cellar(_ arguments: String...) throws -> Run {
        let process = Process()
        process.executableURL = try builtExecutable("cellar")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read both pipes while it runs: a full pipe would stop it.
        let errorText = Lock("")
        let errorReader = Thread { errorText.withLock { $0 = Self.text(errors) } }
        errorReader.start()
        let printed = Self.text(output)
        process.waitUntilExit()
        while errorReader.isExecuting || !errorReader.isFinished { Thread.sleep(forTimeInterval: 0.001) }
        return Run(status: process.terminationStatus, output: printed, errors: errorText.withLock { $0 })
    }

    private static func text(_ pipe: Pipe) -> String {
        String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    @Test func infoDescribesTheFileAndEveryModelWithoutChangingIt() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        let data = folder.url.appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: data)
        let run = try Self.cellar("info", folder.url.path)
        #expect(run.status == 0, "\(run.errors)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "Store \(folder.url.path)")
        #expect(lines.contains { $0.hasPrefix("  format 2, schema version 1, version ") })
        #expect(lines.contains { $0.hasPrefix("  file ") && $0.contains("pages in use") && $0.contains("map 67.1 MB") })
        #expect(lines.contains("  readers: none of other processes (at most 512)"))
        #expect(lines.contains("  Owner: 2 records, auto-increment, next id 3"))
        #expect(lines.contains("      address: object?"))
        #expect(lines.contains("        zip: int"))
        #expect(lines.contains("      pups: array<link<Pup>>"))
        #expect(lines.contains("    unique index u/Owner.name: 2 entries"))
        #expect(
            lines.contains(
                "    link pups → Pup (deleteRule: .nullify, targetDeleteRule: .removeLink, exclusive: true): "
                    + "b/Owner.pups, 3 entries"))
        #expect(lines.contains("  Pup: 3 records"))
        #expect(lines.contains("    index i/Pup.age: 3 entries"))
        #expect(lines.contains("      nickname: string?"))
        #expect(try Data(contentsOf: data) == before)
    }

    @Test func infoVerifyAndDumpReadAStoreThatSyncs() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        do {
            let store = try folder.store([Owner.self, Pup.self])
            let device = try store.enableSync(models: [Pup.self])
            try store.write { try $0.delete(Pup.self, id: "zed") }
            let run = try Self.cellar("info", folder.url.path)
            #expect(run.status == 0, "\(run.errors)")
            #expect(
                run.output.contains(
                    "  sync: device \(device), models Pup; 3 records tracked, 3 changes waiting to be pushed, "
                        + "pulled up to server sequence 0\n"), "\(run.output)")
        }
        let verify = try Self.cellar("verify", folder.url.path)
        #expect(verify.status == 0, "\(verify.output) \(verify.errors)")
        #expect(try Self.cellar("dump", folder.url.path, "Pup").status == 0)
    }

    @Test func infoTellsTheReadersOfOtherProcessesAndWhichAreStale() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        let (alive, input) = try holdingProcess(folder.url)
        defer {
            try? input.fileHandleForWriting.close()
            alive.waitUntilExit()
        }
        let live = try Self.cellar("info", folder.url.path)
        #expect(
            live.output.contains("  readers: 1 in use (at most 512)\n    process \(alive.processIdentifier): idle\n"))
        // A slot outlives a killed process while another keeps the file open (the last one out resets the table).
        let (killed, _) = try holdingProcess(folder.url)
        kill(killed.processIdentifier, SIGKILL)
        killed.waitUntilExit()
        let stale = try Self.cellar("info", folder.url.path)
        #expect(
            stale.output.contains(
                "  readers: 2 in use (at most 512), 1 stale: their processes ended; the next writer clears them\n"),
            "\(stale.output)")
        #expect(stale.output.contains("    process \(killed.processIdentifier): idle (ended)\n"))
        // info left the stale slot for a writer to clear; a writable opening does.
        _ = try folder.store([Owner.self, Pup.self])
        #expect(try Self.cellar("info", folder.url.path).output.contains("  readers: 1 in use (at most 512)\n"))
    }

    @Test func dumpPrintsEveryValueKindAsTextOrJSONLines() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        let text = try Self.cellar("dump", folder.url.path, "Pup")
        #expect(text.status == 0)
        #expect(
            text.output.split(separator: "\n") == [
                #"Pup "rex": {id: "rex", age: 3, born: 2001-01-01T00:00:00.000Z, tag: E621E1F8-C36C-495A-93FC-0C247A3E6E5F, photo: <0102>, tricks: ["sit"], nickname: nil}"#,
                #"Pup "taro": {id: "taro", age: 3, born: 2001-01-01T00:00:00.000Z, tag: E621E1F8-C36C-495A-93FC-0C247A3E6E5F, photo: <>, tricks: [], nickname: "T \"the\" dog"}"#,
                #"Pup "zed": {id: "zed", age: 7, born: 2001-01-01T00:00:00.000Z, tag: E621E1F8-C36C-495A-93FC-0C247A3E6E5F, photo: <>, tricks: ["roll", "beg"], nickname: nil}"#,
            ])
        let json = try Self.cellar("dump", folder.url.path, "Owner", "--json")
        #expect(
            json.output.split(separator: "\n") == [
                #"{"id":1,"name":"Ann","address":{"street":"Elm","zip":12345},"pups":["rex","taro"]}"#,
                #"{"id":2,"name":"Bo","address":null,"pups":["zed"]}"#,
            ])
        // Each line is JSON a parser reads.
        for line in json.output.split(separator: "\n") {
            #expect(throws: Never.self) { try JSONSerialization.jsonObject(with: Data(line.utf8)) }
        }
    }

    /// A date no calendar names (a fuzzing run's finding: Foundation's formatting traps on some), stored by an app or
    /// by damage, is shown by its seconds; an index key holding it is described the same way in messages.
    @Test func datesNoCalendarNamesAreShownByTheirSeconds() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Pup.self])
            try store.write { tx in
                for (id, seconds) in [("far", 1e300), ("nan", Double.nan), ("near", 0)] {
                    try tx.insert(
                        Pup(
                            id: id, age: 1, born: Date(timeIntervalSinceReferenceDate: seconds), tag: Self.tag,
                            photo: Data(), tricks: []))
                }
            }
        }
        let run = try Self.cellar("dump", folder.url.path, "Pup")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("born: 1e+300 seconds from 2001-01-01"), "\(run.output)")
        #expect(run.output.contains("born: nan seconds from 2001-01-01"), "\(run.output)")
        #expect(run.output.contains("born: 2001-01-01T00:00:00.000Z"), "\(run.output)")
        var key: [UInt8] = []
        try KeyEncoding.appendDouble(1e300, tag: .date, to: &key)
        #expect(KeyEncoding.describe(key) == "1e+300 seconds from 2001-01-01")
        key = []
        try KeyEncoding.appendDouble(0, tag: .date, to: &key)
        #expect(KeyEncoding.describe(key) == "2001-01-01 00:00:00 +0000")
    }

    @Test func dumpFiltersByFieldsAndStopsAtTheLimit() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        #expect(
            try Self.cellar("dump", folder.url.path, "Pup", "--where", "age=3", "--limit", "1").output.hasPrefix(
                #"Pup "rex": "#))
        #expect(
            try Self.cellar("dump", folder.url.path, "Pup", "--where", "age=3", "--where", "nickname=nil").output
                .split(separator: "\n").count == 1)
        #expect(
            try Self.cellar("dump", folder.url.path, "Owner", "--where", "address.zip=12345", "--json").output
                .hasPrefix(#"{"id":1,"#))
        #expect(try Self.cellar("dump", folder.url.path, "Pup", "--where", "age=4").output == "")
        let unknown = try Self.cellar("dump", folder.url.path, "Cat")
        #expect(unknown.status == 1)
        #expect(unknown.errors == "Error: The store holds no model named Cat. It holds: Owner, Pup.\n")
        let lowercase = try Self.cellar("dump", folder.url.path, "pup")
        #expect(lowercase.status == 1)
        #expect(
            lowercase.errors
                == "Error: The store holds no model named pup; model names are case-sensitive: did you mean Pup? "
                + "It holds: Owner, Pup.\n")
        // A folder that is missing, or a file, is told as such.
        let missing = folder.url.appendingPathComponent("missing").path
        let nothing = try Self.cellar("info", missing)
        #expect(nothing.status == 1)
        #expect(
            nothing.errors
                == "Error: Could not find the store's folder \(missing): No such file or directory (errno 2).\n")
        let file = folder.url.appendingPathComponent("data.mdb").path
        let notAFolder = try Self.cellar("info", file)
        #expect(notAFolder.status == 1)
        #expect(notAFolder.errors.contains("The file at \(file) cannot be opened as a Cellar store: it is a file"))
        let empty = folder.url.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: false)
        let noStore = try Self.cellar("info", empty.path)
        #expect(
            noStore.errors
                == "Error: Could not find a store (data.mdb) to open read-only in \(empty.path): No such file or "
                + "directory (errno 2).\n")
        let malformed = try Self.cellar("dump", folder.url.path, "Pup", "--where", "age")
        #expect(malformed.status != 0)
        #expect(malformed.errors.contains("--where"))
    }

    /// 60,000 records of 2 kB: a dump that loaded them before printing would hold over 120 MB of its own memory.
    @Test func dumpStreamsALargeStore() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Note.self], mapSize: 512 << 20)
            let filler = String(repeating: "x", count: 2_000)
            try store.write { tx in
                for number in 0..<60_000 { try tx.insert(Note(id: String(format: "%06d", number), text: filler)) }
            }
        }
        let process = Process()
        process.executableURL = try builtExecutable("cellar")
        process.arguments = ["dump", folder.url.path, "Note"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The first lines come while the rest are unread: the tool then waits on the full pipe, mid-walk.
        let first = output.fileHandleForReading.readData(ofLength: 256)
        #expect(String(decoding: first, as: UTF8.self).hasPrefix(#"Note "000000": {id: "000000", text: "xxx"#))
        Thread.sleep(forTimeInterval: 0.5)
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        let anonymous = status.split(separator: "\n").first { $0.hasPrefix("RssAnon:") }
            .flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } }
        #expect(process.isRunning)
        #expect((anonymous ?? .max) < 60 * 1_024, "RssAnon \(anonymous ?? -1) kB")
        var lines = 0
        while case let chunk = output.fileHandleForReading.readData(ofLength: 1 << 16), !chunk.isEmpty {
            lines += chunk.filter { $0 == UInt8(ascii: "\n") }.count
        }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(lines == 60_000)
    }

    @Test func verifyAgreesOnASoundStoreAndSaysHowItCheckedEachDatabase() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        let run = try Self.cellar("verify", folder.url.path)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("  Owner: 2 records\n    u/Owner.name: 2 entries, recomputed from the records\n"))
        #expect(run.output.contains("    b/Owner.pups: 3 entries, recomputed from the records\n"))
        #expect(run.output.contains("    i/Pup.age: 3 entries, recomputed from the records\n"))
        // An index named apart from its property is recomputed too: the stored schema names its property.
        #expect(run.output.contains("    i/Pup.nick: 3 entries, recomputed from the records\n"))
        #expect(run.output.hasSuffix("Everything agrees.\n"))
    }

    @Test func verifyChecksAnIndexOfListElementsEntryByEntry() throws {
        struct Chore: Model {
            var id: Int
            var tags: [String]
            static let schema = Schema<Chore>(indexes: [.index(\.tags)])
        }
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Chore.self])
            try store.write { tx in
                try tx.insert(Chore(id: 1, tags: ["a", "b"]))
                try tx.insert(Chore(id: 2, tags: []))
            }
        }
        let run = try Self.cellar("verify", folder.url.path)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("    i/Chore.tags[]: 2 entries, entry by entry (its keys need the app's types)\n"))
    }

    @Test func aSchemaStoredInWordsReadsAsItsDescriptionAndOpensUnchanged() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        // The form schemas had before indexes and links were stored field by field: their words.
        do {
            let environment = try Environment(path: folder.url.path)
            defer { environment.close() }
            try environment.write { txn in
                guard let meta = try txn.openDatabase(named: "_meta") else { throw CocoaError(.fileReadCorruptFile) }
                for model in ["Owner", "Pup"] {
                    let key = Array("schema/\(model)".utf8)
                    guard let bytes = try txn.get(meta, key: key),
                        var json = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
                        let indexes = json.removeValue(forKey: "indexDescriptions") as? [[String: Any]],
                        let links = json.removeValue(forKey: "linkDescriptions") as? [[String: Any]]
                    else { throw CocoaError(.fileReadCorruptFile) }
                    json["indexes"] = indexes.map {
                        ($0["isUnique"] as? Bool == true ? "unique " : "") + "\($0["name"]!)"
                    }
                    json["links"] = links.map {
                        "\($0["property"]!) → \($0["target"]!) \($0["deleteRule"]!) \($0["targetDeleteRule"]!)"
                            + ($0["isExclusive"] as? Bool == true ? " exclusive" : "")
                    }
                    try txn.put(meta, key: key, value: Array(try JSONSerialization.data(withJSONObject: json)))
                }
            }
        }
        let run = try Self.cellar("verify", folder.url.path)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("    b/Owner.pups: 3 entries, recomputed from the records\n"))
        let pending = try Store.pendingChanges(at: folder.url, configuration: .init(models: [Owner.self, Pup.self]))
        #expect(pending.changes.isEmpty, "\(pending.changes)")
        let store = try Store(at: folder.url, configuration: .init(models: [Owner.self, Pup.self]))
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func verifyNamesEveryDisagreementAndFails() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        // Damage behind Cellar's back, through LMDB alone: an index entry lost, backlink entries made up (one gives an
        // exclusively linked pup a second owner), a linked pup
        // deleted with its links left dangling, a record's bytes replaced, a duplicate of a unique name.
        do {
            let environment = try Environment(path: folder.url.path)
            defer { environment.close() }
            try environment.write { txn in
                guard let age = try txn.openDatabase(named: "i/Pup.age"),
                    let backlinks = try txn.openDatabase(named: "b/Owner.pups"),
                    let pups = try txn.openDatabase(named: "r/Pup"),
                    let owners = try txn.openDatabase(named: "r/Owner"),
                    let names = try txn.openDatabase(named: "u/Owner.name")
                else { throw CocoaError(.fileReadCorruptFile) }
                let zed = try KeyEncoding.key("zed")
                let seven = try KeyEncoding.key(7)
                _ = try seven.withUnsafeBytes { key in
                    try zed.withUnsafeBytes { value in try txn.delete(age, key: key, value: value) }
                }
                try txn.put(backlinks, key: try KeyEncoding.key("nobody"), value: try KeyEncoding.key(Int64(2)))
                try txn.put(backlinks, key: try KeyEncoding.key("rex"), value: try KeyEncoding.key(Int64(2)))
                _ = try txn.delete(pups, key: zed)
                try txn.put(owners, key: try KeyEncoding.key(Int64(3)), value: [1, 0xFF, 0xFF])
                try txn.put(names, key: try KeyEncoding.key("Ann"), value: try KeyEncoding.key(Int64(2)))
            }
        }
        let run = try Self.cellar("verify", folder.url.path)
        #expect(run.status == 1)
        let problems = run.output.components(separatedBy: "Problems:\n").last ?? ""
        #expect(
            problems.contains(
                "  Owner 3 cannot be decoded: the record, of the format without a checksum, holds a value that does "
                    + "not fill its 3 bytes\n"))
        #expect(problems.contains(#"  u/Owner.name holds the entry "Ann" → Owner 2, which no record gives"#))
        #expect(problems.contains(#"  b/Owner.pups holds the entry "nobody" → Owner 2, which no record gives"#))
        #expect(problems.contains(#"  Owner 2 links through pups to Pup "zed", which does not exist"#))
        // The made-up entry is reported as one; no record links to "nobody".
        #expect(!problems.contains(#"to Pup "nobody""#))
        #expect(problems.contains(#"  Pup "rex" is linked by 2 Owner records through the exclusive link pups"#))
        #expect(problems.contains(#"i/Pup.nick holds the entry nil → Pup "zed", which no record gives"#))
        #expect(problems.contains(#"  i/Pup.age holds"#) == false)
    }

    @Test func aDamagedFileIsReportedNotRead() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        let data = folder.url.appendingPathComponent("data.mdb")
        let pages = try Data(contentsOf: data).count / 4_096
        let handle = try FileHandle(forWritingTo: data)
        // Every page after the meta pages gets a nonsense entry count: no tree adds up.
        for page in 2..<pages {
            try handle.seek(toOffset: UInt64(page * 4_096 + 12))
            try handle.write(contentsOf: [0xFF, 0x7F])
        }
        try handle.close()
        for command in ["info", "verify", "dump"] {
            let run =
                try command == "dump"
                ? Self.cellar(command, folder.url.path, "Pup") : Self.cellar(command, folder.url.path)
            #expect(run.status == 1, "\(command)")
            #expect(run.errors.contains("is damaged") || run.output.contains("page"), "\(command): \(run.errors)")
        }
        // Cut short: the pages it needs are past its end.
        try FileHandle(forWritingTo: data).truncate(atOffset: 4_096 * 3)
        let cut = try Self.cellar("verify", folder.url.path)
        #expect(cut.status == 1)
        #expect(cut.errors.contains("it was cut short"), "\(cut.errors)")
    }

    @Test func compactWritesACopyThatOpensWithTheSameRecords() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        let copy = folder.url.appendingPathComponent("copy")
        let run = try Self.cellar("compact", folder.url.path, copy.path)
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasPrefix("Compacted \(folder.url.path) ("))
        let store = try Store(at: copy, configuration: .init(models: [Owner.self, Pup.self]))
        #expect(try store.objects(Pup.self).where(\.age == 3).results().map(\.id) == ["rex", "taro"])
        #expect(try store.objects(Owner.self).results().map(\.name) == ["Ann", "Bo"])
        let again = try Self.cellar("compact", folder.url.path, copy.path)
        #expect(again.status == 1)
        #expect(again.errors.contains("Could not write a compacted copy into \(copy.path): File exists"))
    }

    @Test func errorsAreStoreErrorsWithAFailingStatus() throws {
        let folder = TemporaryFolder()
        let missing = folder.url.appendingPathComponent("none").path
        let run = try Self.cellar("info", missing)
        #expect(run.status == 1)
        #expect(
            run.errors.contains("Could not find the store's folder \(missing): No such file or directory"))
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    /// Progress goes to a terminal only: `script` runs the tool on a pseudo-terminal, as a person at a shell does.
    @Test func longWorkShowsProgressOnATerminalAndNothingElsewhere() throws {
        let folder = TemporaryFolder()
        try Self.kennel(in: folder)
        let piped = try Self.cellar("verify", folder.url.path)
        #expect(piped.status == 0)
        #expect(piped.errors == "")
        let terminal = Process()
        terminal.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        terminal.arguments = ["-qec", "\(try builtExecutable("cellar").path) verify \(folder.url.path)", "/dev/null"]
        let output = Pipe()
        terminal.standardOutput = output
        try terminal.run()
        let shown = Self.text(output)
        terminal.waitUntilExit()
        #expect(terminal.terminationStatus == 0)
        #expect(shown.contains("\r\u{1B}[Kverifying Pup: 100% (3 of 3)"), "\(shown)")
        // The line is cleared before the report, which reads as it does without a terminal.
        #expect(shown.contains("\r\u{1B}[KStore \(folder.url.path), version "))
        #expect(shown.hasSuffix("Everything agrees.\r\n"))
    }

    @Test func eachCommandExplainsItselfWithHelp() throws {
        for command in ["info", "dump", "verify", "compact"] {
            let run = try Self.cellar(command, "--help")
            #expect(run.status == 0)
            #expect(run.output.contains("USAGE: cellar \(command) <folder>"), "\(run.output)")
        }
        #expect(try Self.cellar("--help").output.contains("SUBCOMMANDS:"))
    }
}
