import CellarMacros
import Foundation
import LMDB
import Testing

@testable import Cellar

/// A cookbook that owns its recipes: deleting it deletes them, and their words leave the index.
struct Cookbook: Model, Equatable {
    var id: String
    var title: String
    var recipes: [Link<Recipe>] = []
    static let schema = Schema<Cookbook>(links: [.link(\.recipes, deleteRule: .cascade, ownsTargets: true)])
}

struct Recipe: Model, Equatable {
    var id: String
    var title: String
    var steps: String
    static let schema = Schema<Recipe>(indexes: [.fullText(.field(\.title, weight: 3), .field(\.steps))])
}

/// The same recipes, read and written through `@Record`'s generated code.
@Record
struct RecordRecipe: Model, Equatable {
    var id: String
    var title: String
    var steps: String
    static let schema = Schema<RecordRecipe>(
        name: "Recipe", indexes: [.fullText(.field(\.title, weight: 3), .field(\.steps))])
}

/// A full-text index where it meets the other features: delete rules, migrations, observation, read-only stores,
/// `@Record`, the `cellar` tool, damaged files, and texts of every kind.
@Suite("Search: with the other features")
struct FullTextAcrossFeaturesTests {
    let folder = TemporaryFolder()

    func ids<M: Model>(_ query: Query<M>) throws -> [String] where M.ID == String { try query.results().map(\.id) }

    func fill(_ store: Store) throws {
        try store.write { tx in
            let recipes = [
                Recipe(id: "soup", title: "Miso soup", steps: "Heat the dashi, whisk in the miso, add tofu."),
                Recipe(id: "curry", title: "カレー", steps: "玉ねぎを炒めて、カレールーを入れる。"),
                Recipe(id: "kimchi", title: "김치찌개", steps: "김치를 볶고 물을 붓는다. Add tofu."),
            ]
            for recipe in recipes { try tx.insert(recipe) }
            try tx.insert(Cookbook(id: "home", title: "Home", recipes: recipes.map(Link.init)))
        }
    }

    @Test func aCascadingDeleteTakesTheRecipesWordsOutOfTheIndex() throws {
        let store = try folder.store([Cookbook.self, Recipe.self])
        try fill(store)
        #expect(try Set(ids(store.objects(Recipe.self).where(.matches("tofu")))) == ["soup", "kimchi"])
        try store.write { tx in try tx.delete(Cookbook.self, id: "home") }
        #expect(try ids(store.objects(Recipe.self).where(.matches("tofu"))).isEmpty)
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func aMigrationThatRewritesTextRebuildsTheIndex() throws {
        do { try fill(try folder.store([Cookbook.self, Recipe.self])) }
        let store = try Store(
            at: folder.url,
            configuration: .init(
                models: [Cookbook.self, Recipe.self], schemaVersion: 2,
                migrations: [
                    .to(2) { migration in
                        try migration.enumerateRecords(ofType: "Recipe") { recipe in
                            let steps = try recipe.value("steps", as: String.self) ?? ""
                            try recipe.set("steps", to: steps.replacingOccurrences(of: "tofu", with: "seitan"))
                        }
                    }
                ]))
        #expect(try ids(store.objects(Recipe.self).where(.matches("tofu"))).isEmpty)
        #expect(try Set(ids(store.objects(Recipe.self).where(.matches("seitan")))) == ["soup", "kimchi"])
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func anObserverOfASearchSeesANewMatchInItsPlace() async throws {
        let store = try folder.store([Cookbook.self, Recipe.self])
        try fill(store)
        var changes = store.changes(of: store.objects(Recipe.self).where(.matches("tofu"))).makeAsyncIterator()
        let initial = try #require(try await changes.next())
        #expect(Set(initial.results.map(\.id)) == ["soup", "kimchi"])
        try await store.write { tx in
            try tx.insert(Recipe(id: "mapo", title: "Tofu tofu tofu", steps: "Mapo tofu."))
            try tx.insert(Recipe(id: "bread", title: "Bread", steps: "Knead."))
        }
        let change = try #require(try await changes.next())
        // The new recipe says tofu four times, in the title that weighs three: it comes first.
        #expect(change.results.first?.id == "mapo")
        #expect(change.results.count == 3)
        #expect(change.insertions == [0])
    }

    /// The note `cellar-test-helper notes-on-request` saves.
    struct Note: Model {
        var id: String
        var text: String
        static let schema = Schema<Note>(indexes: [.fullText(\.text)])
    }

    @Test(.hangGuard) func anObserverOfASearchSeesAnotherProcessesEdits() async throws {
        let store = try await Store(at: folder.url, configuration: .init(models: [Note.self], durability: .none))
        let seen = Lock<[String]?>(nil)
        let observer = Task.detached {
            for try await change in store.changes(of: store.objects(Note.self).where(.matches("dog park"))) {
                seen.withLock { $0 = change.results.map(\.id) }
            }
        }
        defer { observer.cancel() }
        #expect(await holds(within: .seconds(30)) { seen.withLock { $0 } == [] })

        let helper = try HelperOnRequest(["notes-on-request", folder.url.path])
        var printed = helper.lines.makeAsyncIterator()
        // Each edit of the other process, and the search's results the observer must then deliver, best first.
        let steps: [(line: String, expected: [String])] = [
            ("a The dog ran to the park.", ["a"]),
            ("b Milk, eggs, bread.", ["a"]),
            ("c Dog park, dog park, dog park!", ["c", "a"]),
            ("b A park for every dog in town", ["c", "a", "b"]),
            ("a The cat stayed home.", ["c", "b"]),
            ("c", ["b"]),
        ]
        for (number, step) in steps.enumerated() {
            try helper.send(step.line)
            #expect(await printed.next() == "ok", "the helper saved step \(number)")
            let delivered = await holds(within: .seconds(30)) { seen.withLock { $0 } == step.expected }
            #expect(delivered, "step \(number): expected \(step.expected), saw \(seen.withLock { $0 } ?? [])")
        }
        #expect(await helper.finish() == 0, "the helper exits once its input ends")
        #expect(try await store.verifyIntegrity().problems == [])
    }

    @Test func aReadOnlyStoreAndRecordCodeSearchTheSameIndex() throws {
        do { try fill(try folder.store([Cookbook.self, Recipe.self])) }
        do {
            let store = try Store(
                at: folder.url, configuration: ReadOnlyStoreTests.readOnly([Cookbook.self, Recipe.self]))
            #expect(try Set(ids(store.objects(Recipe.self).where(.matches("miso")))) == ["soup"])
            #expect(try store.objects(Recipe.self).where(.matches("miso")).explain().contains("t/Recipe.title+steps"))
        }
        let store = try folder.store([RecordRecipe.self])
        try store.write { tx in try tx.upsert(RecordRecipe(id: "soup", title: "Clear soup", steps: "No miso.")) }
        #expect(try ids(store.objects(RecordRecipe.self).where(.matches(\.title, "clear"))) == ["soup"])
        #expect(try ids(store.objects(RecordRecipe.self).where(.matches(\.title, "miso"))).isEmpty)
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func anIndexFromAnotherTokenizerIsRefusedReadOnlyAndRebuiltForWriting() throws {
        do {
            let store = try folder.store([Cookbook.self, Recipe.self])
            try fill(store)
            // What an index built by an earlier tokenizer looks like: another definition stored beside it.
            try store.write { tx in
                let documents = try store.info(for: Recipe.self).fullText[0].documents
                try tx.writable.put(documents, key: FullTextStorage.definitionKey, value: Array("words/0".utf8))
            }
        }
        let readOnly = ReadOnlyStoreTests.readOnly([Cookbook.self, Recipe.self])
        #expect {
            try Store(at: folder.url, configuration: readOnly)
        } throws: { error in
            guard case StoreError.readOnly(_, let reason) = error else { return false }
            return reason.contains("t/Recipe.title+steps") && reason.contains("open the store once for writing")
        }
        do {
            let store = try folder.store([Cookbook.self, Recipe.self])
            #expect(try Set(ids(store.objects(Recipe.self).where(.matches("tofu")))) == ["soup", "kimchi"])
            #expect(try store.verifyIntegrity().problems == [])
        }
        let store = try Store(at: folder.url, configuration: readOnly)
        #expect(try ids(store.objects(Recipe.self).where(.matches("miso"))) == ["soup"])
    }

    @Test func theToolListsAndChecksTheIndex() throws {
        do { try fill(try folder.store([Cookbook.self, Recipe.self])) }
        let info = try CellarToolTests.cellar("info", folder.url.path)
        #expect(info.output.contains("full-text index t/Recipe.title+steps"), "\(info.output)")
        let verify = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(verify.status == 0, "\(verify.output)")
    }

    /// A note whose text is stored under another name than its property's: the tool, which reads records without
    /// the type, cannot read the text.
    struct RenamedNote: Model {
        var id: String
        var text: String
        enum CodingKeys: String, CodingKey {
            case id
            case text = "t"
        }
        static let schema = Schema<RenamedNote>(indexes: [.fullText(\.text)])
    }

    @Test func theToolChecksTheStructureOfAnIndexWhoseTextsItCannotRead() throws {
        do {
            let store = try folder.store([RenamedNote.self])
            try store.write { tx in
                for number in 0..<20 { try tx.insert(RenamedNote(id: "n\(number)", text: "dog \(number)")) }
            }
            // The store reads the texts through the type: its search and its check see them under any stored name.
            #expect(try ids(store.objects(RenamedNote.self).where(.matches("\"dog 7\""))) == ["n7"])
            #expect(try store.verifyIntegrity().problems == [])
        }
        let sound = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(sound.status == 0, "\(sound.output)")
        #expect(sound.output.contains("full-text index t/RenamedNote.text: sound"), "\(sound.output)")
        do {
            let store = try folder.store([RenamedNote.self])
            try damageBlocks(of: "dog", RenamedNote.self, in: store)
            #expect(try !store.verifyIntegrity().problems.isEmpty)
        }
        let damaged = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(damaged.status != 0 && damaged.output.contains("a block of \"dog\" is damaged"), "\(damaged.output)")
    }

    /// Overwrites the blocks of `term` in the first full-text index of `type` with bytes that are no block.
    func damageBlocks<M: Model>(of term: String, _ type: M.Type, in store: Store) throws {
        try store.write { tx in
            let postings = try store.info(for: M.self).fullText[0].postings
            let txn = try tx.writable
            var keys: [[UInt8]] = []
            try txn.walk(postings) { entry in
                if PostingBlock.parse(key: entry.key) != nil, entry.key.starts(with: Array(term.utf8) + [0]) {
                    keys.append(Array(entry.key))
                }
                return true
            }
            for key in keys { try txn.put(postings, key: key, value: [0xFF, 0xFF, 0x01]) }
        }
    }

    @Test func textsOfEveryKindAreFoundAndNoneBreaksTheIndex() throws {
        let store = try folder.store([Memo.self])
        let long = (0..<120_000).map { $0 % 1_000 == 999 ? "needle" : "haystack\($0 % 17)" }.joined(separator: " ")
        try store.write { tx in
            try tx.insert(Memo(id: "ja", title: "日本語", body: "東京スカイツリーに行きました。とても高いです。"))
            try tx.insert(Memo(id: "ko", title: "한국어", body: "서울에서 맛있는 비빔밥을 먹었어요."))
            try tx.insert(Memo(id: "zh", title: "中文", body: "我们在北京吃了烤鸭。"))
            try tx.insert(Memo(id: "mixed", title: "Trip", body: "Tokyo東京 trip with カメラ and 🍣 sushi!"))
            try tx.insert(Memo(id: "emoji", title: "🎉🎉", body: "👍🏽 party 🍕"))
            try tx.insert(Memo(id: "empty", title: "", body: "", comment: ""))
            try tx.insert(Memo(id: "long", title: "Long", body: long))
        }
        #expect(long.utf8.count > 1_000_000)
        func found(_ text: String) throws -> Set<String> {
            Set(try ids(store.objects(Memo.self).where(.matches(text))))
        }
        #expect(try found("スカイツリー") == ["ja"])
        #expect(try found("高い") == ["ja"])
        #expect(try found("비빔밥") == ["ko"])
        #expect(try found("서울") == ["ko"])
        #expect(try found("北京") == ["zh"])
        #expect(try found("烤鸭") == ["zh"])
        #expect(try found("東京") == ["ja", "mixed"])
        #expect(try found("tokyo") == ["mixed"])
        #expect(try found("🍣 OR 🍕") == ["mixed", "emoji"])
        #expect(try found("👍") == ["emoji"])
        #expect(try found("needle") == ["long"])
        #expect(try found("\"haystack15 needle\"") == ["long"])
        let hit = try #require(try store.objects(Memo.self).where(.matches("needle")).searchResults().first)
        let snippet = hit.snippet(of: \.body, words: 5)
        #expect(snippet.marked().contains("[needle]"))
        #expect(snippet.isCutAtStart && snippet.isCutAtEnd)
        #expect(try store.verifyIntegrity().problems == [])
        try store.write { tx in
            try tx.update(Memo(id: "long", title: "Long", body: "short now"))
            try tx.delete(Memo.self, id: "ja")
        }
        #expect(try found("needle").isEmpty)
        #expect(try found("東京") == ["mixed"])
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func snippetsMarkTheMatchedWords() throws {
        let store = try folder.store([Memo.self])
        try store.write { tx in
            try tx.insert(
                Memo(id: "a", title: "Walk", body: "Yesterday we walked all the way to the big dog park by the river."))
            try tx.insert(Memo(id: "b", title: "京都", body: "東京都の公園"))
        }
        let hit = try #require(try store.objects(Memo.self).where(.matches("\"dog park\"")).searchResults().first)
        #expect(hit.score > 0)
        #expect(hit.snippet(of: \.body, words: 6).marked() == "…the big [dog] [park] by the…")
        #expect(hit.snippet(of: \.comment) == nil)
        let japanese = try #require(try store.objects(Memo.self).where(.matches(\.body, "東京")).searchResults().first)
        #expect(japanese.snippet(of: \.body).marked() == "[東京]都の公園")
    }

    @Test func aDamagedBlockIsReportedAndASearchThrowsInWords() throws {
        let store = try folder.store([Memo.self])
        try store.write { tx in
            for number in 0..<50 { try tx.insert(Memo(id: "m\(number)", title: "dog", body: "park \(number)")) }
        }
        try damageBlocks(of: "dog", Memo.self, in: store)
        let problems = try store.verifyIntegrity().problems
        #expect(
            problems.contains { $0.contains("full-text index t/Memo.title+body+comment") && $0.contains("damaged") })
        #expect(throws: StoreError.self) { try store.objects(Memo.self).where(.matches("dog")).results() }
        let verify = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(verify.status != 0 && verify.output.contains("t/Memo.title+body+comment"), "\(verify.output)")
        #expect(try Set(ids(store.objects(Memo.self).where(.matches("\"park 7\"")))) == ["m7"])
    }
}
