import CellarMacros
import Foundation
import Testing

@testable import Cellar

/// A note as a Realm or SwiftData user models one: a struct inside it, optionals, a list, a set.
struct SyntaxNote: Model, Equatable {
    struct Place: Codable, Equatable, Sendable {
        var city: String
    }

    var id: Int
    var title: String
    var wordCount: Int
    var pinned: Bool
    var tags: [String]
    var labels: Set<String>
    var nick: String?
    var rating: Int?
    var place: Place
    static let schema = Schema<SyntaxNote>(
        name: "Note",
        indexes: [.index(\.wordCount), .index(\.title), .index(\.pinned), .index(\.rating), .index(\.tags)])
}

/// The same records through generated record code: conditions are checked on record bytes.
@Record
struct RecordSyntaxNote: Model, Equatable {
    @Record
    struct Place: Equatable {
        var city: String
    }

    var id: Int
    var title: String
    var wordCount: Int
    var pinned: Bool
    var tags: [String]
    var labels: Set<String>
    var nick: String?
    var rating: Int?
    var place: Place
    static let schema = Schema<RecordSyntaxNote>(
        name: "Note",
        indexes: [.index(\.wordCount), .index(\.title), .index(\.pinned), .index(\.rating), .index(\.tags)])
}

/// What both models share, so that one table of queries runs against each.
protocol SyntaxModel: Model where ID == Int {
    static func make(_ number: Int) -> Self
}

extension SyntaxModel {
    static func seeded(in folder: TemporaryFolder) throws -> Store {
        let store = try folder.store([Self.self])
        try store.write { tx in for number in 1...40 { try tx.insert(make(number)) } }
        return store
    }
}

private let titles = ["Apple pie", "apricot", "Banana", "Éclair", "anchovy", "Cherry"]

extension SyntaxNote: SyntaxModel {
    static func make(_ number: Int) -> SyntaxNote {
        SyntaxNote(
            id: number, title: titles[number % titles.count], wordCount: number % 9, pinned: number % 3 == 0,
            tags: number % 4 == 0 ? ["errand", "home"] : number % 5 == 0 ? ["work"] : [],
            labels: number % 2 == 0 ? ["even"] : ["odd"], nick: number % 7 == 0 ? nil : "n\(number % 4)",
            rating: number % 6 == 0 ? nil : number % 5, place: Place(city: number % 2 == 0 ? "Lyon" : "Nantes"))
    }
}

extension RecordSyntaxNote: SyntaxModel {
    static func make(_ number: Int) -> RecordSyntaxNote {
        let note = SyntaxNote.make(number)
        return RecordSyntaxNote(
            id: note.id, title: note.title, wordCount: note.wordCount, pinned: note.pinned, tags: note.tags,
            labels: note.labels, nick: note.nick, rating: note.rating, place: Place(city: note.place.city))
    }
}

@Suite("Queries in Realm's and SwiftData's syntax")
struct RealmQuerySyntaxTests {
    let folder = TemporaryFolder()

    /// The ids and the plan of `query`, to compare two spellings of one query.
    func outcome<M: SyntaxModel>(_ query: Query<M>) throws -> ([Int], String) {
        (try query.results().map(\.id).sorted(), try query.explain())
    }

    /// Each closure condition beside the key-path condition it must equal: the same records and the same plan.
    static var pairs: [(String, @Sendable (QueryRow<SyntaxNote>) -> Condition<SyntaxNote>, Condition<SyntaxNote>)] {
        [
            ("greater", { $0.wordCount > 3 }, \.wordCount > 3),
            ("at most", { $0.wordCount <= 2 }, \.wordCount <= 2),
            ("equal", { $0.title == "Banana" }, \.title == "Banana"),
            ("not equal", { $0.title != "Banana" }, \.title != "Banana"),
            ("and", { $0.wordCount > 3 && $0.title.starts(with: "A") }, \.wordCount > 3 && .hasPrefix(\.title, "A")),
            ("or", { $0.wordCount == 1 || $0.pinned }, \.wordCount == 1 || \.pinned == true),
            ("not", { !($0.wordCount > 3) }, !(\.wordCount > 3)),
            ("prefix", { $0.title.starts(with: "Ap") }, .hasPrefix(\.title, "Ap")),
            (
                "prefix ignoring case", { $0.title.starts(with: "ap", options: .caseInsensitive) },
                .hasPrefix(\.title, "ap", options: .caseInsensitive)
            ),
            ("suffix", { $0.title.ends(with: "y") }, .hasSuffix(\.title, "y")),
            (
                "contains ignoring case and diacritics",
                { $0.title.contains("ECL", options: [.caseInsensitive, .diacriticInsensitive]) },
                .contains(\.title, "ECL", options: [.caseInsensitive, .diacriticInsensitive])
            ),
            ("in", { $0.wordCount.in([1, 4, 8]) }, .in(\.wordCount, [1, 4, 8])),
            ("between", { $0.wordCount.contains(2...4) }, .between(\.wordCount, 2...4)),
            ("nil", { $0.nick == nil }, \.nick == nil),
            ("not nil", { $0.nick != nil }, \.nick != nil),
            ("optional greater", { $0.rating > 2 }, \.rating > 2),
            ("optional less", { $0.rating < 2 }, \.rating < 2),
            ("optional at most", { $0.rating <= 1 }, \.rating <= 1),
            ("nested", { $0.place.city == "Lyon" }, \.place.city == "Lyon"),
            ("list", { $0.tags.contains("errand") }, .contains(\.tags, "errand")),
            ("set", { $0.labels.contains("even") }, .contains(\.labels, "even")),
            (
                "any of a list", { $0.tags.containsAny(in: ["work", "home"]) },
                .contains(\.tags, "work") || .contains(\.tags, "home")
            ),
            ("bool and", { $0.pinned && $0.wordCount > 2 }, \.pinned == true && \.wordCount > 2),
            ("not bool", { !$0.pinned }, \.pinned == false),
        ]
    }

    /// The forms whose conditions generated record code checks on bytes: a field, a nested one, an optional, a list.
    static var recordPairs:
        [(String, @Sendable (QueryRow<RecordSyntaxNote>) -> Condition<RecordSyntaxNote>, Condition<RecordSyntaxNote>)]
    {
        [
            ("greater", { $0.wordCount > 3 }, \.wordCount > 3),
            ("not equal", { $0.title != "Banana" }, \.title != "Banana"),
            ("optional less", { $0.rating < 2 }, \.rating < 2),
            ("nested", { $0.place.city == "Lyon" }, \.place.city == "Lyon"),
            ("list", { $0.tags.contains("errand") }, .contains(\.tags, "errand")),
            ("suffix", { $0.title.ends(with: "y") }, .hasSuffix(\.title, "y")),
            ("bool or", { $0.pinned || $0.nick == nil }, \.pinned == true || \.nick == nil),
        ]
    }

    func closureFormsMatchKeyPathForms<M: SyntaxModel>(
        _: M.Type, _ pairs: [(String, @Sendable (QueryRow<M>) -> Condition<M>, Condition<M>)]
    ) throws {
        let store = try M.seeded(in: folder)
        for (name, closure, condition) in pairs {
            let written = try outcome(store.objects(M.self).where(closure))
            let expected = try outcome(store.objects(M.self).where(condition))
            #expect(written == expected, "\(name)")
            #expect(!written.0.isEmpty, "\(name) matched nothing: the pair proves little")
        }
    }

    @Test func closureFormsGiveTheKeyPathFormsRecordsAndPlans() throws {
        try closureFormsMatchKeyPathForms(SyntaxNote.self, Self.pairs)
    }

    @Test func closureFormsGiveTheKeyPathFormsRecordsAndPlansWithGeneratedCode() throws {
        try closureFormsMatchKeyPathForms(RecordSyntaxNote.self, Self.recordPairs)
    }

    @Test func closureFormsUseTheIndexesTheKeyPathFormsUse() throws {
        let store = try SyntaxNote.seeded(in: folder)
        let notes = store.objects(SyntaxNote.self)
        #expect(try notes.where { $0.wordCount > 3 }.explain() == "use index i/Note.wordCount for wordCount > 3")
        #expect(try notes.where { $0.rating < 2 }.explain().hasPrefix("use index i/Note.rating for rating < 2"))
        #expect(try notes.where { $0.pinned }.explain() == "use index i/Note.pinned for pinned == true")
        #expect(try notes.where(\.pinned).explain() == "use index i/Note.pinned for pinned == true")
        #expect(try notes.where(!\.pinned).explain() == "use index i/Note.pinned for pinned == false")
        #expect(try notes.where { $0.tags.contains("home") }.explain().hasPrefix("use index i/Note.tags"))
    }

    @Test func optionalComparisonsNeverMatchNil() throws {
        let store = try SyntaxNote.seeded(in: folder)
        let expected = (1...40).map(SyntaxNote.make).filter { ($0.rating ?? .max) < 2 }.map(\.id)
        #expect(try store.objects(SyntaxNote.self).where { $0.rating < 2 }.results().map(\.id).sorted() == expected)
        // Checked on each record rather than read from the index (a negation is never answered by one): the same.
        let scanned = store.objects(SyntaxNote.self).where(!(!(\.rating < 2)))
        #expect(try scanned.explain().hasPrefix("scan"))
        #expect(try scanned.results().map(\.id).sorted() == expected)
    }

    @Test func boolKeyPathsAreConditions() throws {
        let store = try SyntaxNote.seeded(in: folder)
        let pinned = (1...40).filter { $0 % 3 == 0 }
        #expect(try store.objects(SyntaxNote.self).where(\.pinned).results().map(\.id) == pinned)
        #expect(try store.objects(SyntaxNote.self).where(!\.pinned).count() == 40 - pinned.count)
        #expect(try store.objects(SyntaxNote.self).where { $0.pinned }.results().map(\.id) == pinned)
    }

    // MARK: #Predicate

    @Test func aPredicateThatConditionsCanSayIsThoseConditions() throws {
        let store = try SyntaxNote.seeded(in: folder)
        let notes = store.objects(SyntaxNote.self)
        let cases: [(String, Predicate<SyntaxNote>, Condition<SyntaxNote>)] = [
            ("and", #Predicate { $0.pinned && $0.wordCount > 3 }, \.pinned == true && \.wordCount > 3),
            ("value first", #Predicate { 3 < $0.wordCount }, \.wordCount > 3),
            (
                "or and not", #Predicate { !($0.wordCount == 1) || $0.title == "Banana" },
                !(\.wordCount == 1) || \.title == "Banana"
            ),
            ("not bool", #Predicate { !$0.pinned }, \.pinned == false),
            ("prefix", #Predicate { $0.title.starts(with: "Ap") }, .hasPrefix(\.title, "Ap")),
            ("contains text", #Predicate { $0.title.contains("an") }, .contains(\.title, "an")),
            ("list", #Predicate { $0.tags.contains("errand") }, .contains(\.tags, "errand")),
            ("set", #Predicate { $0.labels.contains("odd") }, .contains(\.labels, "odd")),
            ("in", #Predicate { [1, 4].contains($0.wordCount) }, .in(\.wordCount, [1, 4])),
            ("nil", #Predicate { $0.nick == nil }, \.nick == nil),
            ("not nil", #Predicate { $0.nick != nil }, \.nick != nil),
            ("nested", #Predicate { $0.place.city == "Nantes" }, \.place.city == "Nantes"),
        ]
        for (name, predicate, condition) in cases {
            #expect(try outcome(notes.where(predicate)) == outcome(notes.where(condition)), "\(name)")
        }
        #expect(
            try notes.where(#Predicate { $0.wordCount > 3 }).explain() == "use index i/Note.wordCount for wordCount > 3"
        )
    }

    @Test func aPredicatePartConditionsCannotSayIsEvaluatedOnEachRecord() throws {
        let store = try SyntaxNote.seeded(in: folder)
        let notes = store.objects(SyntaxNote.self)
        let predicate = #Predicate<SyntaxNote> { $0.wordCount > 3 && $0.wordCount * 2 < 14 }
        let expected = (1...40).map(SyntaxNote.make).filter { $0.wordCount > 3 && $0.wordCount * 2 < 14 }.map(\.id)
        #expect(try notes.where(predicate).results().map(\.id).sorted() == expected)
        let plan = try notes.where(predicate).explain()
        #expect(plan.hasPrefix("use index i/Note.wordCount for wordCount > 3"), "\(plan)")
        #expect(
            plan.hasSuffix("check each record for the #Predicate's Comparison(Arithmetic, Value) expression"), "\(plan)"
        )
    }
}
