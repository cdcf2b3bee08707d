import Foundation
import LMDB
import PropertyBased
import Testing

@testable import Cellar

/// Random edits of stored records through `DynamicRecord`, mirrored on the typed value: whatever the edits, the record
/// written back decodes as the typed value says, and fields nobody touched keep their bytes.
@Suite("Migrations: dynamic record edits agree with the typed model")
struct DynamicRecordPropertyTests {
    struct Bag: Model, Equatable {
        var id: Int
        var count: Int?
        var label: String?
        var ratio: Double?
        var scores: [Int]?
        var inner: Inner?
    }

    struct Inner: Codable, Equatable, Sendable {
        var name: String
        var flags: [Bool]
    }

    /// One edit: which field, and what to do with it.
    struct Edit: CustomStringConvertible {
        let field: Int
        let action: Int
        let seed: Int
        var description: String { "(\(field), \(action), \(seed))" }
    }

    static let fields = ["count", "label", "ratio", "scores", "inner"]

    /// Applies `edit` to the record and to the typed value the same way.
    func apply(_ edit: Edit, to record: inout DynamicRecord, _ value: inout Bag) throws {
        let field = Self.fields[edit.field]
        guard edit.action > 0 else {
            record.remove(field)
            switch field {
            case "count": value.count = nil
            case "label": value.label = nil
            case "ratio": value.ratio = nil
            case "scores": value.scores = nil
            default: value.inner = nil
            }
            return
        }
        switch field {
        case "count":
            value.count = edit.seed &* 7919
            try record.set(field, to: value.count)
        case "label":
            value.label = String(repeating: "é\0x", count: edit.seed % 5)
            try record.set(field, to: value.label)
        case "ratio":
            value.ratio = Double(edit.seed) / 3
            try record.set(field, to: value.ratio)
        case "scores":
            value.scores = (0..<(edit.seed % 6)).map { $0 * edit.seed }
            try record.set(field, to: value.scores)
        default:
            value.inner = Inner(name: "n\(edit.seed)", flags: (0..<(edit.seed % 4)).map { $0 % 2 == 0 })
            try record.set(field, to: value.inner)
        }
    }

    @Test func editsAgreeWithTheTypedValue() async throws {
        // Records are edited in memory; the model's database is only named.
        let folder = TemporaryFolder()
        let environment = try Environment(path: folder.url.path)
        let database = try environment.write { try $0.createDatabase(named: "r/Bag") }
        let edits = zip(Gen.int(in: 0...4), Gen.int(in: 0...3), Gen.int(in: 0...1_000))
            .map { Edit(field: $0, action: $1, seed: $2) }.array(of: 0...12)
        let start = zip(Gen.int(in: 0...1_000), Gen.bool)
        await checkProperty(count: 300, input: start, edits) { start, edits in
            var value = Bag(
                id: start.0, count: start.1 ? start.0 : nil, label: start.1 ? nil : "start", ratio: 1.5,
                scores: start.1 ? [1, 2] : nil, inner: start.1 ? Inner(name: "x", flags: [true]) : nil)
            let encoder = RecordEncoder(dictionary: .empty)
            let bytes = try encoder.encode(value)
            let model = MigratingModel(name: "Bag", records: database, dictionary: encoder.absorbAddedNames())
            var record = DynamicRecord(
                model: model, fields: try bytes.withUnsafeBytes { try RecordFields(record: $0) },
                primaryKey: try KeyEncoding.key(value.id))
            // Parsing and writing back an untouched record gives its bytes.
            #expect(record.fields.serialized == bytes)
            for edit in edits { try apply(edit, to: &record, &value) }
            #expect(try record.decode(as: Bag.self) == value)
            #expect(try record.value("inner", as: Inner.self) == value.inner)
            #expect(try record.value("count", as: Int.self) == value.count)
            #expect(record.contains("id") && record.fieldNames.first == "id")
        }
    }
}
