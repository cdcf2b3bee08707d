import Foundation
import Testing

@testable import Cellar

@Suite("Indexes on lists: an entry per element")
struct MultiEntryIndexTests {
    struct Task: Model, Equatable {
        var id: Int64 = 0
        var title: String
        var tags: [String]
        var people: Set<Int> = []
        static let schema = Schema<Task>(autoIncrement: true, indexes: [.index(\.tags), .index(\.people)])
    }

    /// The same tasks without the indexes: every condition is checked record by record.
    struct PlainTask: Model, Equatable {
        var id: Int64 = 0
        var title: String
        var tags: [String]
        var people: Set<Int> = []
        static let schema = Schema<PlainTask>(name: "PlainTask", autoIncrement: true)
    }

    static func board() throws -> Store {
        let store = try Store.inMemory(.init(models: [Task.self, PlainTask.self]))
        let tasks: [(String, [String], Set<Int>)] = [
            ("milk", ["errand", "home"], [1]), ("taxes", ["home", "paper", "home"], [1, 2]), ("bank", ["errand"], []),
            ("garden", [], [2, 3]), ("post", ["errand", "paper"], [3]),
        ]
        try store.write { tx in
            for (title, tags, people) in tasks {
                try tx.insert(Task(title: title, tags: tags, people: people))
                try tx.insert(PlainTask(title: title, tags: tags, people: people))
            }
        }
        return store
    }

    func titles(_ store: Store, _ condition: Condition<Task>) throws -> [String] {
        try store.objects(Task.self).where(condition).results().map(\.title)
    }

    @Test func containsIsAnsweredFromTheIndexAndAgreesWithAScan() throws {
        let store = try Self.board()
        for tag in ["errand", "home", "paper", "none"] {
            let indexed = store.objects(Task.self).where(.contains(\.tags, tag))
            #expect(try indexed.explain() == "use index i/Task.tags[] for tags contains \"\(tag)\"")
            let scanned = try store.objects(PlainTask.self).where(.contains(\.tags, tag)).results().map(\.title)
            #expect(try indexed.results().map(\.title) == scanned)
            #expect(try indexed.count() == scanned.count)
        }
        #expect(try titles(store, .contains(\.tags, "home")) == ["milk", "taxes"])
        #expect(try titles(store, .contains(\.people, 2)) == ["taxes", "garden"])
        #expect(
            try store.objects(Task.self).where(.contains(\.people, 3)).explain().hasPrefix("use index i/Task.people[]"))
        // A whole-list comparison is not an element's: checked record by record.
        #expect(try store.objects(Task.self).where(\.tags == ["errand"]).explain().hasPrefix("scan r/Task"))
        #expect(try titles(store, \.tags == ["errand"]) == ["bank"])
        #expect(try titles(store, .contains(\.tags, "errand") && .hasPrefix(\.title, "b")) == ["bank"])
    }

    @Test func updatesAndDeletesMoveEachElementsEntry() throws {
        let store = try Self.board()
        try store.write { tx in
            var milk = try #require(try tx.objects(Task.self).where(\.title == "milk").first())
            milk.tags = ["home", "shop"]
            try tx.update(milk)
            _ = try tx.delete(tx.objects(Task.self).where(.contains(\.tags, "paper")))
        }
        #expect(try titles(store, .contains(\.tags, "errand")) == ["bank"])
        #expect(try titles(store, .contains(\.tags, "shop")) == ["milk"])
        #expect(try titles(store, .contains(\.tags, "home")) == ["milk"])
        #expect(try titles(store, .contains(\.tags, "paper")) == [])
        let report = try store.verifyIntegrity()
        #expect(report.problems == [])
        // The index holds each (element, task) pair once, and nothing of the deleted tasks.
        let entries = try store.read { snapshot in
            try snapshot.lmdb.statistics(try store.info(for: Task.self).indexes[0]).entries
        }
        #expect(entries == 3)  // milk: home, shop; bank: errand; garden: none
    }

    /// An index of a whole list, as a generic declaration makes it (the list's type unknown to it).
    static func wholeValueIndex<M: Model, V: Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable) -> Index<M> {
        .index(path)
    }

    @Test func aStoreWithAnIndexOfWholeListsGetsAnIndexOfElementsAtOpen() throws {
        struct OldNote: Model {
            var id: Int
            var tags: [String]
            static let schema = Schema<OldNote>(name: "Note", indexes: [MultiEntryIndexTests.wholeValueIndex(\.tags)])
        }
        struct Note: Model {
            var id: Int
            var tags: [String]
            static let schema = Schema<Note>(indexes: [.index(\.tags)])
        }
        let folder = TemporaryFolder()
        do {
            let store = try Store(at: folder.url, configuration: .init(models: [OldNote.self]))
            try store.write { tx in
                try tx.insert(OldNote(id: 1, tags: ["a", "b"]))
                try tx.insert(OldNote(id: 2, tags: ["b"]))
            }
            #expect(
                try store.objects(OldNote.self).where(\.tags == ["b"]).explain()
                    == #"use index i/Note.tags for tags == ["b"]"#)
        }
        let store = try Store(at: folder.url, configuration: .init(models: [Note.self]))
        #expect(
            try store.objects(Note.self).where(.contains(\.tags, "b")).explain()
                == #"use index i/Note.tags[] for tags contains "b""#)
        #expect(try store.objects(Note.self).where(.contains(\.tags, "b")).results().map(\.id) == [1, 2])
        #expect(try store.verifyIntegrity().isConsistent)
        #expect(try store.read { snapshot in try snapshot.lmdb.openDatabase(named: "i/Note.tags") } == nil)
    }
}
