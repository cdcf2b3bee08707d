import Foundation
import LMDB
import Testing

@testable import Cellar

/// A note with a weighted title, a body and an optional comment, searched through one full-text index.
struct Memo: Model, Equatable {
    var id: String
    var title: String
    var body: String
    var comment: String?
    var folder: String = "inbox"

    static let schema = Schema<Memo>(indexes: [
        .fullText(.field(\.title, weight: 2), .field(\.body), .field(\.comment)), .index(\.folder),
    ])
}

@Suite("Search: full-text index")
struct FullTextSearchTests {
    let folder = TemporaryFolder()

    func ids(_ query: Query<Memo>) throws -> [String] { try query.results().map(\.id) }

    func seeded() throws -> Store {
        let store = try folder.store([Memo.self])
        try store.write { tx in
            try tx.insert(Memo(id: "a", title: "Dog park", body: "We walked to the park with the dog."))
            try tx.insert(Memo(id: "b", title: "Groceries", body: "Milk, bread, dog food, parsley."))
            try tx.insert(Memo(id: "c", title: "Café", body: "The café by the park has great coffee.", comment: "Go!"))
            try tx.insert(Memo(id: "d", title: "東京", body: "東京都の公園で犬と散歩した。", folder: "trips"))
            try tx.insert(Memo(id: "e", title: "Empty", body: ""))
        }
        return store
    }

    @Test func wordsPhrasesPrefixesAndOperatorsFindTheRightRecords() throws {
        let store = try seeded()
        func found(_ text: String) throws -> Set<String> {
            Set(try ids(store.objects(Memo.self).where(.matches(text))))
        }
        #expect(try found("dog") == ["a", "b"])
        #expect(try found("DOG park") == ["a"])
        #expect(try found("\"dog park\"") == ["a"])
        #expect(try found("\"park dog\"").isEmpty)
        #expect(try found("par*") == ["a", "b", "c"])
        #expect(try found("cafe") == ["c"])
        #expect(try found("coffee OR milk") == ["b", "c"])
        #expect(try found("park NOT dog") == ["c"])
        #expect(try found("公園") == ["d"])
        #expect(try found("京都") == ["d"])
        #expect(try found("犬") == ["d"])
        #expect(try found("go") == ["c"])
        #expect(try found("").isEmpty)
        #expect(try found("zebra").isEmpty)
    }

    @Test func aPropertySearchLooksOnlyAtThatProperty() throws {
        let store = try seeded()
        #expect(try Set(ids(store.objects(Memo.self).where(.matches(\.title, "dog")))) == ["a"])
        #expect(try Set(ids(store.objects(Memo.self).where(.matches(\.body, "dog")))) == ["a", "b"])
        #expect(try Set(ids(store.objects(Memo.self).where(.matches(\.comment, "go")))) == ["c"])
        // The `where { }` form makes the same condition.
        #expect(try Set(ids(store.objects(Memo.self).where { $0.body.matches("dog") })) == ["a", "b"])
        #expect(
            try Set(ids(store.objects(Memo.self).where { $0.comment.matches("go") && $0.folder == "inbox" })) == ["c"])
    }

    @Test func resultsComeBestFirstAndAWeightCounts() throws {
        let store = try folder.store([Memo.self])
        try store.write { tx in
            try tx.insert(Memo(id: "body", title: "x", body: "kayak"))
            try tx.insert(Memo(id: "title", title: "kayak", body: "x"))
            try tx.insert(Memo(id: "long", title: "y", body: "kayak " + String(repeating: "filler ", count: 50)))
            for number in 0..<20 { try tx.insert(Memo(id: "other\(number)", title: "z", body: "nothing here")) }
        }
        // The title weighs twice the body; a long body dilutes its one match.
        #expect(try ids(store.objects(Memo.self).where(.matches("kayak"))) == ["title", "body", "long"])
        #expect(try ids(store.objects(Memo.self).where(.matches("kayak")).limit(1)) == ["title"])
        #expect(try ids(store.objects(Memo.self).where(.matches("kayak")).offset(1).limit(1)) == ["body"])
        // A sort of its own replaces the ranking.
        #expect(
            try ids(store.objects(Memo.self).where(.matches("kayak")).sorted(by: \.id)) == ["body", "long", "title"])
        #expect(try store.objects(Memo.self).where(.matches("kayak")).explain().contains("best first"))
    }

    @Test func theIndexFollowsUpdatesAndDeletes() throws {
        let store = try seeded()
        try store.write { tx in
            try tx.update(Memo(id: "a", title: "Cat park", body: "We walked to the park with the cat."))
            try tx.delete(Memo.self, id: "b")
            try tx.upsert(Memo(id: "f", title: "Dog", body: "A new dog."))
        }
        #expect(try Set(ids(store.objects(Memo.self).where(.matches("dog")))) == ["f"])
        #expect(try Set(ids(store.objects(Memo.self).where(.matches("cat")))) == ["a"])
        #expect(try Set(ids(store.objects(Memo.self).where(.matches("parsley")))).isEmpty)
    }

    @Test func theCheaperSideDrivesAndTheRankingIsTheSameEitherWay() throws {
        let store = try folder.store([Memo.self])
        try store.write { tx in
            for number in 0..<300 {
                let body = "dog " + String(repeating: "walk ", count: number % 5) + (number % 50 == 0 ? "kayak" : "")
                try tx.insert(
                    Memo(id: "m\(number)", title: "t", body: body, folder: number % 100 == 0 ? "trips" : "inbox"))
            }
        }
        // Three notes in trips, three hundred with "dog": the folder's index drives, and the search ranks its notes.
        let dogsOnTrips = store.objects(Memo.self).where(.matches("dog") && \.folder == "trips")
        let plan = try dogsOnTrips.explain()
        #expect(plan.hasPrefix("use index i/Memo.folder for folder == \"trips\""), "\(plan)")
        #expect(plan.contains("rank in memory by BM25"), "\(plan)")
        // Six notes with "kayak", three hundred in the inbox: the search drives.
        let kayaksInInbox = store.objects(Memo.self).where(.matches("kayak") && \.folder == "inbox")
        #expect(try kayaksInInbox.explain().hasPrefix("search full-text index t/Memo.title+body+comment"))
        // Both words: no more documents than the rarer has (six), however common the other.
        let bothInInbox = store.objects(Memo.self).where(.matches("dog kayak") && \.folder == "inbox")
        #expect(try bothInInbox.explain().hasPrefix("search full-text index t/Memo.title+body+comment"))
        // The order is the search's either way: the same as ranking every match, then keeping the folder's.
        let ranked = try store.objects(Memo.self).where(.matches("dog")).searchResults()
        #expect(try ids(dogsOnTrips) == ranked.filter { $0.value.folder == "trips" }.map(\.value.id))
        let scores = try dogsOnTrips.searchResults().map(\.score)
        #expect(scores == ranked.filter { $0.value.folder == "trips" }.map(\.score))
        let kayaks = try store.objects(Memo.self).where(.matches("kayak")).searchResults()
        #expect(try ids(kayaksInInbox) == kayaks.filter { $0.value.folder == "inbox" }.map(\.value.id))
    }

    @Test func anIndexDeclaredLaterIsBuiltFromTheRecordsAndDroppedWhenUndeclared() throws {
        struct Plain: Model {
            var id: String
            var title: String
            var body: String
            var comment: String?
            var folder: String
            static let schema = Schema<Plain>(name: "Memo")
        }
        do {
            let store = try folder.store([Plain.self])
            try store.write { tx in
                try tx.insert(Plain(id: "a", title: "Dog park", body: "walk", comment: nil, folder: "x"))
            }
        }
        do {
            let store = try folder.store([Memo.self])
            #expect(try ids(store.objects(Memo.self).where(.matches("dog"))) == ["a"])
        }
        do {
            let store = try folder.store([Plain.self])
            try store.read { snapshot in
                let txn = try snapshot.lmdb
                #expect(try txn.openDatabase(named: "t/Memo.title+body+comment") == nil)
                #expect(try txn.openDatabase(named: "d/Memo.title+body+comment") == nil)
            }
        }
    }

    @Test func tiesComeInIdOrderWhicheverSideDrivesAndAnOpenLimitKeepsThemAll() throws {
        let store = try folder.store([Memo.self])
        try store.write { tx in
            for id in ["m2", "m1", "m3"] { try tx.insert(Memo(id: id, title: "t", body: "same words", folder: "x")) }
            for number in 0..<40 { try tx.insert(Memo(id: "o\(number)", title: "t", body: "other", folder: "y")) }
        }
        #expect(try ids(store.objects(Memo.self).where(.matches("same"))) == ["m1", "m2", "m3"])
        let byFolder = store.objects(Memo.self).where(.matches("same OR other") && \.folder == "x")
        #expect(try byFolder.explain().hasPrefix("use index i/Memo.folder"))
        #expect(try ids(byFolder) == ["m1", "m2", "m3"])
        #expect(try ids(store.objects(Memo.self).where(.matches("same")).offset(1).limit(.max)) == ["m2", "m3"])
    }

    @Test func anIndexWhosePropertiesChangeUnderTheSameNameIsBuiltAgain() throws {
        struct Before: Model {
            var id: String
            var title: String
            var body: String
            static let schema = Schema<Before>(name: "Doc", indexes: [.fullText(\.title, name: "search")])
        }
        struct After: Model {
            var id: String
            var title: String
            var body: String
            static let schema = Schema<After>(name: "Doc", indexes: [.fullText(\.body, \.title, name: "search")])
        }
        do {
            let store = try folder.store([Before.self])
            try store.write { tx in try tx.insert(Before(id: "a", title: "kayak", body: "canoe")) }
        }
        let store = try folder.store([After.self])
        #expect(try store.objects(After.self).where(.matches(\.body, "canoe")).results().map(\.id) == ["a"])
        #expect(try store.objects(After.self).where(.matches(\.title, "kayak")).results().map(\.id) == ["a"])
        #expect(try store.objects(After.self).where(.matches(\.body, "kayak")).results().isEmpty)
        #expect(try store.verifyIntegrity().problems == [])
    }
}
