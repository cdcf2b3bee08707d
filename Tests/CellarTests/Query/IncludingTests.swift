import CellarMacros
import Foundation
import Testing

@testable import Cellar

/// `including(_:)`: each record with what one of its links leads to, from one version, each target read once.
@Suite("Following links with including")
struct IncludingTests {
    struct Folder: Model, Equatable {
        var id: String
        var name: String
    }

    struct Tag: Model, Equatable {
        var id: Int64
        var label: String
    }

    /// A note's folder is declared; `pinnedTo` is a link the schema does not declare, so a delete leaves it dangling.
    struct Note: Model, Equatable {
        var id: Int64
        var title: String
        var folder: Link<Folder>?
        var tags: [Link<Tag>] = []
        var pinnedTo: Link<Folder>
        static let schema = Schema<Note>(indexes: [.index(\.title)], links: [.link(\.folder), .link(\.tags)])
    }

    /// A generated-code model that links to a plain `Codable` one, and the other way round.
    @Record
    struct FastNote: Model, Equatable {
        var id: Int64
        var tags: [Link<Tag>]
        static let schema = Schema<FastNote>(links: [.link(\.tags)])
    }

    /// A plain `Codable` model whose undeclared list leads to generated-code records, some of them gone.
    struct Board: Model, Equatable {
        var id: String
        var pinned: [Link<FastNote>]
    }

    static let models: [any Model.Type] = [Folder.self, Tag.self, Note.self, FastNote.self, Board.self]

    static func filled(_ folder: TemporaryFolder) throws -> Store {
        let store = try folder.store(models)
        try store.write { tx in
            for (id, name) in [("inbox", "Inbox"), ("work", "Work"), ("old", "Old")] {
                try tx.insert(Folder(id: id, name: name))
            }
            for id in Int64(1)...4 { try tx.insert(Tag(id: id, label: "tag \(id)")) }
            for id in Int64(1)...40 {
                let folder: Link<Folder>? = id % 4 == 0 ? nil : Link(id: ["inbox", "work", "old"][Int(id % 3)])
                let tags = [Link<Tag>(id: id % 4 + 1), Link(id: 1), Link(id: id % 4 + 1)]
                try tx.insert(
                    Note(id: id, title: "note \(id)", folder: folder, tags: tags, pinnedTo: Link(id: "old")))
                try tx.insert(FastNote(id: id, tags: tags))
            }
            try tx.delete(Tag.self, id: 4)  // its links go with it, by the declared rule
        }
        // The undeclared link keeps its id after the delete: its target is gone.
        try store.write { tx in try tx.delete(Folder.self, id: "old") }
        return store
    }

    @Test func eachRecordComesWithWhatItsLinksLeadToAsResolvingThemOneByOneGives() throws {
        let folder = TemporaryFolder()
        let store = try Self.filled(folder)
        let notes = store.objects(Note.self).where(\.title >= "note 1").sorted(by: \.title)

        let withFolders = try notes.including(\.folder).results()
        let plain = try notes.results()
        #expect(withFolders.map(\.record) == Array(plain))
        #expect(withFolders.map(\.included) == (try plain.map { try store.object($0.folder) }))
        #expect(withFolders.map(\.title) == plain.map(\.title))  // the record's properties, through the row
        #expect(withFolders.contains { $0.included == nil && $0.folder != nil } == false)
        #expect(withFolders.filter { $0.included == nil }.count == plain.filter { $0.folder == nil }.count)
        // Each folder read once, however many notes are in it: two folders are left.
        #expect(withFolders.targetsRead == 2)

        let withTags = try notes.including(\.tags).results()
        #expect(withTags.map(\.included) == (try plain.map { try store.resolve($0.tags) }))
        #expect(withTags.targetsRead == 3)
        #expect(withTags.allSatisfy { $0.included.count == $0.tags.count })

        let pinned = try notes.including(\.pinnedTo).results()
        #expect(pinned.allSatisfy { $0.included == nil })  // the target is gone: left out, as resolve leaves it
        #expect(pinned.targetsRead == 1)

        #expect(try notes.limit(3).including(\.tags).results().map(\.id) == Array(plain.prefix(3).map(\.id)))
        let first = try #require(try store.objects(Note.self).where(\.id == 3).including(\.folder).first())
        #expect(first.included == Folder(id: "inbox", name: "Inbox"))
        #expect(first.record.id == 3)
    }

    @Test func recordsAndTargetsComeFromOneVersion() throws {
        let folder = TemporaryFolder()
        let store = try Self.filled(folder)
        // Inside a write, a query sees the transaction's own writes: the renamed folder comes with its notes.
        let renamed = try store.write { tx in
            try tx.update(Folder(id: "work", name: "Work, renamed"))
            return try tx.objects(Note.self).where(\.id == 1).including(\.folder).results()
        }
        #expect(renamed.first?.included?.name == "Work, renamed")
        // Inside a read, the snapshot's version.
        let (rows, version) = try store.read { snapshot in
            (try snapshot.objects(Note.self).including(\.tags).results(), try snapshot.version)
        }
        #expect(rows.version == version)
        try store.write { tx in try tx.delete(Tag.self, id: 1) }
        #expect(rows.allSatisfy { row in row.included.contains { $0.id == 1 } })  // frozen: still there
    }

    @Test func generatedRecordCodeOnEitherSide() throws {
        let folder = TemporaryFolder()
        let store = try Self.filled(folder)
        let rows = try store.objects(FastNote.self).including(\.tags).results()
        #expect(rows.count == 40)
        #expect(rows.map(\.included) == (try rows.map { try store.resolve($0.record.tags) }))
        // The other way round, with targets gone in the middle of a list and one named twice.
        try store.write { tx in
            try tx.insert(Board(id: "b", pinned: [Link(id: 3), Link(id: 99), Link(id: 5), Link(id: 3), Link(id: 98)]))
        }
        let board = try #require(try store.objects(Board.self).including(\.pinned).first())
        #expect(board.included.map(\.id) == [3, 5, 3])
        #expect(board.included == (try store.resolve(board.pinned)))
    }

    /// Enough distinct targets that they are decoded on every core, as a large query's records are.
    @Test func manyTargetsDecodeInParallelAndInOrder() throws {
        let store = try Store.inMemory(.init(models: [Tag.self, Note.self, Folder.self]))
        let count = Int64(ParallelDecoding.minimumRecords + 500)
        try store.write { tx in
            for id in 1...count { try tx.insert(Tag(id: id, label: "tag \(id)")) }
            for id in Int64(1)...10 {
                let tags = stride(from: count - id + 1, through: 1, by: -10).map { Link<Tag>(id: $0) }
                try tx.insert(Note(id: id, title: "n\(id)", folder: nil, tags: tags, pinnedTo: Link(id: "none")))
            }
        }
        let rows = try store.objects(Note.self).including(\.tags).results()
        #expect(rows.targetsRead == Int(count))
        for row in rows {
            #expect(row.included.map(\.id) == row.tags.map(\.id))
            #expect(row.included.allSatisfy { $0.label == "tag \($0.id)" })
        }
    }

    @Test func asyncFormsAndAReadOnlyStore() async throws {
        let folder = TemporaryFolder()
        do { _ = try Self.filled(folder) }
        var configuration = Configuration(models: Self.models)
        configuration.readOnly = true
        let store = try await Store(at: folder.url, configuration: configuration)
        let rows = try await store.objects(Note.self).including(\.folder).results()
        #expect(rows.count == 40)
        #expect(try await store.objects(Note.self).including(\.tags).first()?.included.map(\.id) == [2, 1, 2])
    }

    /// A link no schema declares, to a model the store does not register.
    struct Loose: Model {
        var id: Int64
        var target: Link<Folder>?
    }

    @Test func aTargetModelTheStoreDoesNotRegisterIsAnError() throws {
        let store = try Store.inMemory(.init(models: [Loose.self]))
        try store.write { tx in try tx.insert(Loose(id: 1, target: Link(id: "x"))) }
        #expect(throws: StoreError.modelNotRegistered(model: "Folder")) {
            try store.objects(Loose.self).including(\.target).results()
        }
        // Refused whether or not a record links anywhere: the mistake shows on the first run, not with the first data.
        #expect(throws: StoreError.modelNotRegistered(model: "Folder")) {
            try store.objects(Loose.self).where(\.id == 9).including(\.target).results()
        }
    }
}
