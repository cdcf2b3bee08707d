import CCRC32C
import CellarMacros
import Foundation
import LMDB
import Testing

@testable import Cellar

/// A model whose records the tests change behind the store's back: an index on `name`, and `age` and `note` read
/// from bytes by queries.
struct Sealed: Model, Equatable {
    var id: Int64
    var name: String
    var age: Int
    var note: String
    static let schema = Schema<Sealed>(indexes: [.index(\.name), .fullText(\.note)])
}

/// The same with generated record code, linking to `Sealed` records (removed from its bytes when one is deleted).
@Record
struct SealedOwner: Model, Equatable {
    var id: Int64
    var name: String
    var friends: [Link<Sealed>]
    static let schema = Schema<SealedOwner>(links: [.link(\.friends)])
}

@Suite("Records that know they changed")
struct RecordChecksumTests {
    let folder = TemporaryFolder()

    static func crc(_ bytes: [UInt8]) -> (hardware: UInt32, portable: UInt32) {
        (cellar_crc32c(0, bytes, bytes.count), cellar_crc32c_portable(0, bytes, bytes.count))
    }

    // MARK: The checksum

    /// The check values of CRC-32C (RFC 3720, B.4, and the catalogue's "123456789"), both ways of computing it.
    @Test func theChecksumIsCRC32C() {
        let vectors: [([UInt8], UInt32)] = [
            (Array("123456789".utf8), 0xE306_9283),
            ([UInt8](repeating: 0, count: 32), 0x8A91_36AA),
            ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
            (Array(0...31), 0x46DD_794E),
            (Array((0...31).reversed()), 0x113F_DB5C),
            ([], 0),
        ]
        for (bytes, expected) in vectors {
            #expect(Self.crc(bytes) == (expected, expected), "\(bytes.count) bytes")
        }
        print("CRC-32C with the CPU's instruction: \(cellar_crc32c_uses_hardware() == 1)")
    }

    /// The CPU's instruction and the tables agree on every length and alignment, and a checksum continued over a
    /// second part is the checksum of the whole.
    @Test func theInstructionAndTheTablesAgree() {
        var generator = SeededGenerator(seed: 27)
        let buffer = (0..<1_100).map { _ in UInt8.random(in: 0...255, using: &generator) }
        buffer.withUnsafeBytes { raw in
            for _ in 0..<2_000 {
                let start = Int.random(in: 0..<16, using: &generator)
                let count = Int.random(in: 0...(raw.count - start), using: &generator)
                let part = UnsafeRawBufferPointer(rebasing: raw[start..<start + count])
                let whole = cellar_crc32c(0, part.baseAddress, count)
                #expect(whole == cellar_crc32c_portable(0, part.baseAddress, count), "\(start) + \(count)")
                let split = Int.random(in: 0...count, using: &generator)
                let first = cellar_crc32c(0, part.baseAddress, split)
                #expect(cellar_crc32c(first, part.baseAddress.map { $0 + split }, count - split) == whole)
            }
        }
    }

    // MARK: Every reader refuses a changed record

    /// Every bit of a record, flipped alone, and every truncation, is refused by each reader of stored records:
    /// `Codable` and generated decoding, the reader without a type (migrations, `cellar`), the field reader of
    /// migrations and sync. Before checksums, about a tenth of such changes decoded as another value.
    @Test func everyFlippedBitAndEveryTruncationIsRefusedByEveryReader() throws {
        let pet = CrossFeatureTests.pet("checksum", age: 5)
        let (codable, codableKeys) = try encoded(pet)
        let (generated, generatedKeys) = try generatedBytes(Everything.sample(3))
        var refused = 0
        func expectRefused(_ bytes: [UInt8], _ comment: Comment) {
            let refusals = bytes.withUnsafeBytes { raw in
                [
                    (try? RecordDecoder().decodeRecord(CrossPet.self, from: raw, dictionary: codableKeys)) == nil,
                    (try? RecordFormat.body(of: raw)) == nil,
                    (try? RecordValue(record: raw, dictionary: codableKeys)) == nil,
                    (try? RecordFields(record: raw)) == nil,
                ]
            }
            #expect(refusals == [true, true, true, true], comment)
            if !refusals.contains(false) { refused += 1 }
        }
        for (record, name) in [(codable, "Codable"), (generated, "generated")] {
            for position in record.indices {
                for bit in 0..<8 {
                    var changed = record
                    changed[position] ^= 1 << bit
                    expectRefused(changed, "\(name): bit \(bit) of byte \(position) flipped")
                    if name == "generated" {
                        #expect(throws: (any Error).self) {
                            try readGenerated(Everything.self, changed, dictionary: generatedKeys)
                        }
                    }
                }
            }
            for count in 0..<record.count {
                expectRefused(Array(record.prefix(count)), "\(name): cut to \(count) bytes")
            }
            // The format byte of the records without a checksum: the checksum is then read as part of the value,
            // which no longer ends where the record does.
            var former = record
            former[0] = RecordFormat.uncheckedVersion
            expectRefused(former, "\(name): format byte 2 changed to 1")
        }
        print("changed records refused by every reader: \(refused)")
        #expect(refused == 9 * (codable.count + generated.count) + 2)
    }

    // MARK: In a store

    /// Writes Sealed records 1…5 (record 3 carrying `marker` in its note), and an owner linking to 2 and 3.
    func fill(marker: String = "checksum-marker-7f3a") throws {
        let store = try folder.store([Sealed.self, SealedOwner.self])
        try store.write { tx in
            for id in Int64(1)...5 {
                try tx.insert(Sealed(id: id, name: "s\(id)", age: Int(id), note: id == 3 ? marker : "plain \(id)"))
            }
            try tx.insert(SealedOwner(id: 1, name: "owner-marker-9b1d", friends: [Link(id: 2), Link(id: 3)]))
        }
    }

    /// Flips a bit in every copy of `marker` in the store's file (LMDB may keep older copies in free pages), as a
    /// failing disk would: the pages stay sound, only the record's bytes change.
    func flipOnDisk(_ marker: String) throws {
        let url = folder.url.appendingPathComponent("data.mdb")
        var file = try Data(contentsOf: url)
        var found = 0
        var start = file.startIndex
        while let range = file.range(of: Data(marker.utf8), in: start..<file.endIndex) {
            file[range.lowerBound + 3] ^= 0x04
            found += 1
            start = range.upperBound
        }
        #expect(found > 0)
        try file.write(to: url)
    }

    static func isChecksumFailure(_ error: any Error, model: String, id: String) -> Bool {
        guard case .decodingFailed(let failedModel, let failedID, _, let reason) = error as? StoreError else {
            return false
        }
        return failedModel == model && failedID == id && reason.hasPrefix("the record's checksum")
    }

    /// A record whose bytes changed on the disk: the store opens (its pages are sound), and every read of the record
    /// says which record it is and that its bytes changed: a get, a scan, a query whose condition is read from the
    /// bytes (the record must not drop out of the results), `verifyIntegrity()` and `cellar verify`. Deleting it is the way out, and it leaves no index entry behind.
    @Test func aRecordChangedOnTheDiskIsNamedByEveryRead() throws {
        try fill()
        try flipOnDisk("checksum-marker-7f3a")
        let store = try folder.store([Sealed.self, SealedOwner.self])
        let failure = { (error: any Error) in Self.isChecksumFailure(error, model: "Sealed", id: "3") }
        #expect(try store.object(Sealed.self, id: 2)?.name == "s2")
        #expect { try store.object(Sealed.self, id: 3) } throws: { failure($0) }
        #expect { try store.objects(Sealed.self).results() } throws: { failure($0) }
        let byBytes = store.objects(Sealed.self).where(\.age == 99)
        #expect(try byBytes.explain().contains("bytes"))
        #expect { try byBytes.results() } throws: { failure($0) }
        #expect { try store.objects(Sealed.self).where(\.note == "nothing").results() } throws: { failure($0) }
        #expect(try store.objects(Sealed.self).where(\.name == "s4").results().map(\.id) == [4])
        // The record alone: the index entries it cannot vouch for are not reported as entries no record gives.
        let problems = try store.verifyIntegrity().problems
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.hasPrefix("Sealed 3 cannot be decoded: The stored Sealed with id 3") == true)
        #expect(problems.first?.contains("the record's checksum") == true)
        let tool = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(tool.status != 0)
        let reported = tool.output.components(separatedBy: "Problems:\n").last ?? ""
        #expect(reported.hasPrefix("  Sealed 3 cannot be decoded: the record's checksum"), "\(tool.output)")
        #expect(reported.split(separator: "\n").count == 1, "\(tool.output)")
        let dump = try CellarToolTests.cellar("dump", folder.url.path, "Sealed")
        #expect(dump.output.split(separator: "\n").count == 4, "\(dump.output)")
        #expect(dump.errors.contains("cellar: Sealed 3 cannot be decoded: the record's checksum"), "\(dump.errors)")

        try store.write { tx in try tx.delete(Sealed.self, id: 3) }
        #expect(try store.objects(Sealed.self).results().map(\.id) == [1, 2, 4, 5])
        #expect(try store.object(SealedOwner.self, id: 1)?.friends.map(\.id) == [2])
        #expect(try store.verifyIntegrity().problems == [])
    }

    /// A changed record of a `@Record` model, read through its generated code, is named the same way; a delete rule
    /// that must rewrite it (to drop a link) stops there and changes nothing, and deleting it is the way out.
    @Test func aChangedRecordOfARecordModelIsNamedAndADeleteRuleStopsAtIt() throws {
        try fill()
        try flipOnDisk("owner-marker-9b1d")
        let store = try folder.store([Sealed.self, SealedOwner.self])
        let failure = { (error: any Error) in Self.isChecksumFailure(error, model: "SealedOwner", id: "1") }
        #expect { try store.object(SealedOwner.self, id: 1) } throws: { failure($0) }
        #expect { try store.objects(SealedOwner.self).where(\.name == "x").results() } throws: { failure($0) }
        #expect { try store.write { tx in try tx.delete(Sealed.self, id: 2) } } throws: { failure($0) }
        #expect(try store.object(Sealed.self, id: 2) != nil)
        try store.write { tx in try tx.delete(SealedOwner.self, id: 1) }
        try store.write { tx in try tx.delete(Sealed.self, id: 2) }
        #expect(try store.objects(Sealed.self).results().map(\.id) == [1, 3, 4, 5])
        #expect(try store.verifyIntegrity().problems == [])
    }

    /// Opening at a new schema version decodes every record of a model whose properties capture cannot see into (a
    /// `TimeZone`, an enum with associated values): a changed record there is damage, not a migration to ask for.
    @Test func theCheckAtOpeningCallsAChangedRecordDamageNotAMigration() throws {
        do {
            let store = try folder.store(CrossFeatureTests.models)
            try store.write { tx in
                for age in 0..<4 {
                    var pet = CrossFeatureTests.pet("p\(age)", age: age)
                    if age == 2 { pet.note = "opening-marker-51c2" }
                    try tx.insert(pet)
                }
            }
        }
        try flipOnDisk("opening-marker-51c2")
        #expect {
            try folder.store(CrossFeatureTests.models, schemaVersion: 2)
        } throws: { error in
            Self.isChecksumFailure(error, model: "CrossPet", id: "\"p2\"")
        }
    }

    /// What a record's description says, in full.
    @Test func theErrorSaysWhatHappenedAndWhatToDo() throws {
        try fill()
        try flipOnDisk("checksum-marker-7f3a")
        let store = try folder.store([Sealed.self, SealedOwner.self])
        do {
            _ = try store.object(Sealed.self, id: 3)
            Issue.record("a changed record was read")
        } catch {
            let text = error.description
            #expect(text.hasPrefix("The stored Sealed with id 3 could not be decoded: the record's checksum (0x"))
            #expect(text.contains("delete the record and write it again, or restore the store from a backup."))
            #expect(!text.contains("migrate"))
        }
    }

    // MARK: Stores written before checksums

    /// Rewrites the store as Cellar wrote it before checksums: every record without its checksum, in format 1, and
    /// `_meta`'s format marker 1.
    func writeAsBeforeChecksums() throws {
        let environment = try Environment(path: folder.url.path)
        defer { environment.close() }
        try environment.write { txn in
            for model in ["Sealed", "SealedOwner"] {
                let records = try #require(try txn.openDatabase(named: DatabaseName.records(model)))
                var rewritten: [([UInt8], [UInt8])] = []
                try txn.walk(records) { entry in
                    #expect(entry.value.first == RecordFormat.version)
                    var body = Array(entry.value.dropLast(RecordFormat.checksumSize))
                    body[0] = RecordFormat.uncheckedVersion
                    rewritten.append((Array(entry.key), body))
                    return true
                }
                for (key, value) in rewritten { try txn.put(records, key: key, value: value) }
            }
            let meta = try #require(try txn.openDatabase(named: "_meta"))
            try txn.put(meta, key: StoreCore.formatKey, value: [1])
        }
    }

    /// The format byte of each stored record of `model`, by id.
    func storedFormats(_ store: Store, _ model: any Model.Type) throws -> [String: UInt8] {
        let info = try store.info(for: model)
        var formats: [String: UInt8] = [:]
        try store.core.environment.read { txn in
            _ = try txn.walk(info.records) { entry in
                formats[KeyEncoding.describe(entry.key)] = entry.value.first
                return true
            }
        }
        return formats
    }

    /// The format `_meta`'s marker names: read through `store` when it is open (a process opens a file once).
    func formatMarker(_ store: Store? = nil) throws -> UInt8? {
        if let store {
            return try store.core.environment.read { txn in
                try txn.get(store.core.meta, key: StoreCore.formatKey)?.first
            }
        }
        var options = EnvironmentOptions()
        options.readOnly = true
        let environment = try Environment(path: folder.url.path, options: options)
        defer { environment.close() }
        return try environment.read { txn in
            try txn.openDatabase(named: "_meta").flatMap { try txn.get($0, key: StoreCore.formatKey)?.first }
        }
    }

    /// A store of format 1 opens read-only unchanged, and for writing is marked format 2; its records read as
    /// before, by every path; an upsert that changes nothing leaves a record as it was, and a record written again
    /// (replaced, or its link removed in its bytes by a delete rule) gains its checksum.
    @Test func aStoreWrittenBeforeChecksumsReadsAndIsSealedAsItIsWritten() throws {
        try fill()
        try writeAsBeforeChecksums()
        do {
            let readOnly = try Store(
                at: folder.url, configuration: ReadOnlyStoreTests.readOnly([Sealed.self, SealedOwner.self]))
            #expect(try readOnly.objects(Sealed.self).results().map(\.id) == [1, 2, 3, 4, 5])
            #expect(try readOnly.objects(Sealed.self).where(\.age > 3).results().map(\.id) == [4, 5])
        }
        #expect(try formatMarker() == 1)
        let tool = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(tool.status == 0, "\(tool.output)")
        #expect(tool.output.contains("5 written before records carried a checksum"), "\(tool.output)")

        let store = try folder.store([Sealed.self, SealedOwner.self])
        #expect(try formatMarker(store) == 2)
        #expect(try store.object(Sealed.self, id: 3)?.note == "checksum-marker-7f3a")
        #expect(try store.objects(Sealed.self).where(\.age > 3).results().map(\.id) == [4, 5])
        #expect(try store.objects(Sealed.self).where(\.name == "s2").results().map(\.id) == [2])
        #expect(try store.object(SealedOwner.self, id: 1)?.friends.map(\.id) == [2, 3])

        let version = try store.read { try $0.version }
        try store.write { tx in try tx.upsert(Sealed(id: 1, name: "s1", age: 1, note: "plain 1")) }
        #expect(try store.read { try $0.version } == version, "an upsert that changed nothing committed a change")
        try store.write { tx in
            try tx.update(Sealed(id: 2, name: "s2", age: 20, note: "plain 2"))
            try tx.delete(Sealed.self, id: 3)
        }
        #expect(try storedFormats(store, Sealed.self) == ["1": 1, "2": 2, "4": 1, "5": 1])
        #expect(try storedFormats(store, SealedOwner.self) == ["1": 2])
        #expect(try store.object(SealedOwner.self, id: 1)?.friends.map(\.id) == [2])
        #expect(try store.object(Sealed.self, id: 2)?.age == 20)
        #expect(try store.verifyIntegrity().problems == [])
    }

    /// A migration step that edits `Sealed` records with the ids `marking`.
    static func migration(marking ids: Set<Int64>) -> Configuration {
        var configuration = Configuration(models: [Sealed.self, SealedOwner.self], schemaVersion: 2)
        configuration.migrations = [
            .to(2) { migration in
                try migration.enumerateRecords(ofType: "Sealed") { record in
                    if let id = try record.value("id", as: Int64.self), ids.contains(id) {
                        try record.set("note", to: "migrated \(id)")
                    }
                }
            }
        ]
        return configuration
    }

    /// A migration reads records of either format and writes what it changes sealed.
    @Test func aMigrationSealsWhatItRewrites() throws {
        try fill()
        try writeAsBeforeChecksums()
        let store = try Store(at: folder.url, configuration: Self.migration(marking: [2, 4]))
        #expect(try storedFormats(store, Sealed.self) == ["1": 1, "2": 2, "3": 1, "4": 2, "5": 1])
        #expect(
            try store.objects(Sealed.self).results().map(\.note) == [
                "plain 1", "migrated 2", "checksum-marker-7f3a", "migrated 4", "plain 5",
            ])
        #expect(try store.verifyIntegrity().problems == [])
    }

    /// A record whose checksum fails stops a migration that reads it, naming the record, and leaves the store as it
    /// was.
    @Test func aMigrationStopsAtAChangedRecord() throws {
        try fill()
        try flipOnDisk("checksum-marker-7f3a")
        let before = try Data(contentsOf: folder.url.appendingPathComponent("data.mdb"))
        #expect {
            try Store(at: folder.url, configuration: Self.migration(marking: [3]))
        } throws: { error in
            "\(error)".contains("Sealed with id 3") && "\(error)".contains("the record's checksum")
        }
        #expect(try Data(contentsOf: folder.url.appendingPathComponent("data.mdb")) == before)
    }
}
