import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// A migration step writes an edited record back where its walk stands (the cursor's own entry), while records given
/// a new id or deleted move once the walk is done. Random edits that grow records past a page, shrink them, keep them,
/// delete them and give them new ids, on stores of a few hundred records: after the migration, and after reopening,
/// the store holds exactly what the edits say, its index agrees, and the integrity check finds nothing.
@Suite("Migrations: records rewritten where the walk stands")
struct InPlaceRewriteTests {
    struct Note: Model, Equatable {
        var id: Int64
        var body: String
        var size: Int
        static let schema = Schema<Note>(name: "Note", indexes: [.index(\.size)])
    }

    /// What a step does to one record.
    enum Action: Int, CaseIterable {
        case keep, grow, shrink, delete, moveAhead
    }

    /// A body of `length` characters, which may be longer than a page (an overflow page in LMDB).
    static func body(_ id: Int64, _ length: Int) -> String {
        String(repeating: "n\(id % 10)", count: length / 2)
    }

    /// Ids moved by a step land past every id the store starts with.
    static let moveOffset: Int64 = 100_000

    @Test func randomEditsLeaveExactlyWhatTheyDescribe() async throws {
        let start = zip(Gen.int(in: 1...400), Gen.int(in: 0...3_000)).array(of: 1...300)
        let edits = zip(Gen.int(in: 0..<Action.allCases.count), Gen.int(in: 0...6_000)).array(of: 300...300)
        await checkProperty(count: 12, input: start, edits) { start, edits in
            let folder = TemporaryFolder()
            var expected: [Int64: Note] = [:]
            do {
                let store = try Store(at: folder.url, configuration: .init(models: [Note.self]))
                try store.write { tx in
                    for (id, length) in start where expected[Int64(id)] == nil {
                        let note = Note(id: Int64(id), body: Self.body(Int64(id), length), size: length)
                        try tx.insert(note)
                        expected[note.id] = note
                    }
                }
            }
            // The step's plan, by id in key order (the order the walk hands the records out in).
            var plan: [Int64: (Action, Int)] = [:]
            for (position, id) in expected.keys.sorted().enumerated() {
                plan[id] = (Action(rawValue: edits[position].0) ?? .keep, edits[position].1)
            }
            var after: [Int64: Note] = [:]
            for (id, note) in expected {
                guard let (action, length) = plan[id] else { continue }
                switch action {
                case .keep: after[id] = note
                case .grow, .shrink:
                    let size = action == .grow ? note.size + length : note.size / 2
                    after[id] = Note(id: id, body: Self.body(id, size), size: size)
                case .delete: break
                case .moveAhead:
                    after[id + Self.moveOffset] = Note(id: id + Self.moveOffset, body: note.body, size: note.size)
                }
            }
            let steps = plan
            let step = MigrationStep.to(2) { migration in
                try migration.enumerateRecords(ofType: "Note") { record in
                    guard let id = try record.value("id", as: Int64.self), let (action, length) = steps[id],
                        let size = try record.value("size", as: Int.self)
                    else { return }
                    switch action {
                    case .keep: break
                    case .grow, .shrink:
                        let size = action == .grow ? size + length : size / 2
                        try record.set("body", to: Self.body(id, size))
                        try record.set("size", to: size)
                    case .delete: record.delete()
                    case .moveAhead: try record.set("id", to: id + Self.moveOffset)
                    }
                }
            }
            let configuration = Configuration(models: [Note.self], schemaVersion: 2, migrations: [step])
            for opening in 0..<2 {
                let store = try Store(at: folder.url, configuration: configuration)
                let notes = try store.objects(Note.self).results()
                #expect(notes.count == after.count, "opening \(opening)")
                for note in notes where after[note.id] != note {
                    let wanted = after[note.id].map { "\($0.size)" } ?? "no note"
                    Issue.record("opening \(opening): note \(note.id) has size \(note.size), not \(wanted)")
                }
                for size in Set(after.values.map(\.size)).prefix(20) {
                    let found = try store.objects(Note.self).where(\.size == size).results().map(\.id).sorted()
                    #expect(found == after.values.filter { $0.size == size }.map(\.id).sorted())
                }
                #expect(try store.verifyIntegrity().problems == [])
            }
        }
    }
}
