import Foundation
import LMDB
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
    struct Tag: Model, Equatable {
        var id: Int64
        var name: String
        static let schema = Schema<Tag>(name: "RewriteTag")
    }

    /// Three tags, migrated by `step`; what the store holds after.
    func migrated(_ step: @escaping @Sendable (Migration) throws -> Void) throws -> [Tag] {
        let folder = TemporaryFolder()
        do {
            let store = try Store(at: folder.url, configuration: .init(models: [Tag.self]))
            try store.write { tx in for id in 1...3 { try tx.insert(Tag(id: Int64(id), name: "tag \(id)")) } }
        }
        let configuration = Configuration(models: [Tag.self], schemaVersion: 2, migrations: [.to(2, step)])
        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.verifyIntegrity().problems == [])
        return try store.objects(Tag.self).results().map { $0 }
    }

    /// A nested enumeration deletes the record the outer walk stands on, which the outer body then edits: the edit is
    /// written by the record's key (the walk's cursor no longer stands on it: LMDB's `MDB_CURRENT` would have
    /// rewritten the next record, or a slot past the page's end), and the walk goes on with the next record, each
    /// visited once. Names of the same size and of another, and the last record.
    @Test(arguments: [(2, "tag 9"), (2, "a longer name"), (3, "a longer name")])
    func anEditAfterANestedDeleteOfItsRecordIsWrittenByKey(edited: Int, name: String) throws {
        let visits = Lock<[Int64]>([])
        let tags = try migrated { migration in
            try migration.enumerateRecords(ofType: "RewriteTag") { outer in
                let id = try outer.value("id", as: Int64.self) ?? 0
                visits.withLock { $0.append(id) }
                guard id == edited else { return }
                try migration.enumerateRecords(ofType: "RewriteTag") { inner in
                    if try inner.value("id", as: Int64.self) == id { inner.delete() }
                }
                try outer.set("name", to: name)
            }
        }
        var expected = (1...3).map { Tag(id: Int64($0), name: "tag \($0)") }
        expected[edited - 1].name = name
        #expect(tags == expected)
        #expect(visits.withLock { $0 } == [1, 2, 3])
    }

    /// `deleteData` of the model being walked empties its database under the walk; an edit after it is written by key
    /// and the walk ends (the cursor, reset by the drop, must not start again from the first record).
    @Test func anEditAfterDeleteDataIsWrittenAndTheWalkEnds() throws {
        struct Endless: Error {}
        let visits = Lock(0)
        let tags = try migrated { migration in
            try migration.enumerateRecords(ofType: "RewriteTag") { record in
                // A walk that started again would never end: it fails instead.
                let visit = visits.withLock { count in
                    count += 1
                    return count
                }
                guard visit < 10 else { throw Endless() }
                guard try record.value("id", as: Int64.self) == 2 else { return }
                try migration.deleteData(forType: "RewriteTag")
                try record.set("name", to: "kept")
            }
        }
        #expect(tags == [Tag(id: 2, name: "kept")])
        #expect(visits.withLock { $0 } == 2)
    }

    /// Edits are written as the walk goes: records edited before `deleteData` go with the rest, and records given a
    /// new id before it move in when the walk ends.
    @Test func deleteDataTakesWhatWasWrittenBeforeItAndMovesComeAfter() throws {
        let tags = try migrated { migration in
            try migration.enumerateRecords(ofType: "RewriteTag") { record in
                switch try record.value("id", as: Int64.self) ?? 0 {
                case 1: try record.set("name", to: "edited")
                case 2: try record.set("id", to: Int64(20))
                default: try migration.deleteData(forType: "RewriteTag")
                }
            }
        }
        #expect(tags == [Tag(id: 20, name: "tag 2")])
    }

    /// A body that throws stops the enumeration, which rethrows: the records before are written, their moves
    /// included, and the one it threw on is left as it was. A step that lets the error through fails the migration
    /// with nothing written.
    @Test func aThrowingBodyStopsTheWalkWithWhatCameBeforeWritten() throws {
        struct Stop: Error {}
        let tags = try migrated { migration in
            #expect(throws: Stop.self) {
                try migration.enumerateRecords(ofType: "RewriteTag") { record in
                    switch try record.value("id", as: Int64.self) ?? 0 {
                    case 1: try record.set("name", to: "edited")
                    case 2: try record.set("id", to: Int64(20))
                    default:
                        try record.set("name", to: "never written")
                        throw Stop()
                    }
                }
            }
        }
        #expect(tags == [Tag(id: 1, name: "edited"), Tag(id: 3, name: "tag 3"), Tag(id: 20, name: "tag 2")])
        #expect(throws: StoreError.self) {
            _ = try migrated { migration in
                try migration.enumerateRecords(ofType: "RewriteTag") { record in
                    try record.set("name", to: "edited")
                    if try record.value("id", as: Int64.self) == 2 { throw Stop() }
                }
            }
        }
    }
}
