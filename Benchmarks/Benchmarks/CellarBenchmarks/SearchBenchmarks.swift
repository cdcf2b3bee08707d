// Full-text search over 100,000 documents of a few hundred words each, drawn from a fixed vocabulary with a Zipf
// distribution: Cellar's full-text index beside GRDB with an FTS5 table over the same documents, in the same run,
// and beside a `.contains` scan.
import Benchmark
import Cellar
import Foundation
import GRDB

/// A document: a title and a body.
struct Article: Model, Codable, FetchableRecord, PersistableRecord {
    var id: Int64
    var title: String
    var body: String
    static let schema = Schema<Article>(indexes: [.fullText(\.title, \.body)])
    static let databaseTableName = "article"
}

/// The same documents without a full-text index: what the index adds to a store, and the `.contains` scan.
struct PlainArticle: Model, Codable {
    var id: Int64
    var title: String
    var body: String
    static let schema = Schema<PlainArticle>(name: "Article")
}

enum SearchCorpus {
    /// As many documents as the other benchmarks' records (`CELLAR_BENCH_RECORDS`, 100,000 by default: CI's smoke run
    /// asks for 2,000), unless `CELLAR_BENCH_DOCUMENTS` says otherwise.
    static let documentCount =
        ProcessInfo.processInfo.environment["CELLAR_BENCH_DOCUMENTS"].flatMap(Int.init) ?? recordCount

    /// 20,000 made-up words of two to four syllables; the first ones are the most frequent.
    static let vocabulary: [String] = {
        let onsets = ["b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "st", "br", "pl", "tr"]
        let vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
        var random = SplitMixRandom(seed: 1)
        var seen = Set<String>()
        var words: [String] = []
        while words.count < 20_000 {
            var word = ""
            for _ in 0..<(2 + Int(random.next() % 3)) {
                word += onsets[Int(random.next() % UInt64(onsets.count))]
                word += vowels[Int(random.next() % UInt64(vowels.count))]
            }
            if seen.insert(word).inserted { words.append(word) }
        }
        return words
    }()

    /// Zipf's law with s = 1: the word of rank r is drawn in proportion to 1 / r.
    static let cumulative: [Double] = {
        var sums: [Double] = []
        var sum = 0.0
        for rank in 1...vocabulary.count {
            sum += 1 / Double(rank)
            sums.append(sum)
        }
        return sums.map { $0 / sum }
    }()

    static func word(_ random: inout SplitMixRandom) -> String {
        let draw = Double(random.next() >> 11) / Double(1 << 53)
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] < draw { low = middle + 1 } else { high = middle }
        }
        return vocabulary[low]
    }

    static func text(_ count: Int, _ random: inout SplitMixRandom) -> String {
        var words: [String] = []
        words.reserveCapacity(count)
        for position in 0..<count {
            var word = word(&random)
            if position % 12 == 0 { word = word.prefix(1).uppercased() + word.dropFirst() }
            words.append(position % 15 == 14 ? word + "." : word)
        }
        return words.joined(separator: " ")
    }

    static let articles: [Article] = {
        var random = SplitMixRandom(seed: 42)
        return (1...Int64(documentCount)).map { id in
            Article(
                id: id, title: text(4 + Int(random.next() % 5), &random),
                body: text(150 + Int(random.next() % 250), &random))
        }
    }()

    /// The searches: a word of middling frequency, two words together, a phrase of two frequent words, a prefix.
    static let single = vocabulary[60]
    static let both = "\(vocabulary[20]) \(vocabulary[90])"
    static let phrase = "\"\(vocabulary[0]) \(vocabulary[1])\""
    static let prefix = String(vocabulary[30].prefix(3)) + "*"
}

/// SplitMix64: the benchmarks' documents are the same on every run and machine.
struct SplitMixRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

func searchStore(at folder: URL? = nil) throws -> Store {
    let configuration = Cellar.Configuration(models: [Article.self], initialMapSize: 4 << 30)
    let store = try folder.map { try Store(at: $0, configuration: configuration) } ?? Store.inMemory(configuration)
    try store.write { tx in for article in SearchCorpus.articles { try tx.insert(article) } }
    return store
}

/// GRDB with the documents in a table and an FTS5 index of them (external content: the index holds no copy of the
/// text, as Cellar's holds none).
final class SearchGRDBStore {
    let folder = temporaryFolder()
    let queue: DatabaseQueue

    init(indexed: Bool = true) throws {
        queue = try DatabaseQueue(path: folder.appendingPathComponent("articles.sqlite").path)
        try queue.write { db in
            try db.create(table: "article") { table in
                table.primaryKey("id", .integer)
                table.column("title", .text).notNull()
                table.column("body", .text).notNull()
            }
            if indexed {
                try db.execute(
                    sql:
                        "CREATE VIRTUAL TABLE article_ft USING fts5(title, body, content='article', content_rowid='id')"
                )
            }
            for article in SearchCorpus.articles {
                try article.insert(db)
                if indexed {
                    try db.execute(
                        sql: "INSERT INTO article_ft(rowid, title, body) VALUES (?, ?, ?)",
                        arguments: [article.id, article.title, article.body])
                }
            }
        }
    }

    /// The 20 best matches, decoded, as an app's search screen asks for them.
    func top20(_ query: String) throws -> [Article] {
        try queue.read { db in
            try Article.fetchAll(
                db,
                sql: """
                    SELECT article.* FROM (SELECT rowid, rank FROM article_ft WHERE article_ft MATCH ? ORDER BY rank \
                    LIMIT 20) AS best JOIN article ON article.id = best.rowid ORDER BY best.rank
                    """, arguments: [query])
        }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}

/// The stores the search benchmarks read, built once per run.
final class SearchStores: @unchecked Sendable {
    static let shared = SearchStores()
    lazy var cellar: Store = { try! searchStore() }()
    lazy var grdb: SearchGRDBStore = { try! SearchGRDBStore() }()
}

/// With `CELLAR_BENCH_SEARCH_SIZES` set, prints the size of each engine's full-text index (the compacted store or
/// vacuumed database with the index, less the same without it) and exits.
enum SearchSizes {
    static func runIfAsked() {
        guard ProcessInfo.processInfo.environment["CELLAR_BENCH_SEARCH_SIZES"] != nil else { return }
        do {
            let folder = temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            func compacted(_ name: String, _ models: [any Model.Type]) throws -> Int {
                let store = try Store(
                    at: folder.appendingPathComponent("store"),
                    configuration: .init(models: models, initialMapSize: 4 << 30))
                let copy = folder.appendingPathComponent(name)
                try store.compact(to: copy)
                return try size(of: copy.appendingPathComponent("data.mdb"))
            }
            _ = try searchStore(at: folder.appendingPathComponent("store"))
            let withIndex = try compacted("with", [Article.self])
            let without = try compacted("without", [PlainArticle.self])
            let sqlite = try SearchGRDBStore()
            let plain = try SearchGRDBStore(indexed: false)
            for store in [sqlite, plain] { try store.queue.writeWithoutTransaction { try $0.execute(sql: "VACUUM") } }
            let sqliteWith = try size(of: sqlite.folder.appendingPathComponent("articles.sqlite"))
            let sqliteWithout = try size(of: plain.folder.appendingPathComponent("articles.sqlite"))
            let words = SearchCorpus.articles.reduce(0) {
                $0 + $1.body.split(separator: " ").count + $1.title.split(separator: " ").count
            }
            print("documents: \(SearchCorpus.documentCount), words: \(words)")
            print(
                "Cellar: store \(withIndex) bytes with the index, \(without) without: index \(withIndex - without) bytes"
            )
            print(
                "FTS5: database \(sqliteWith) bytes with the index, \(sqliteWithout) without: index \(sqliteWith - sqliteWithout) bytes"
            )
            print(
                String(
                    format: "Cellar's index / FTS5's: %.2f",
                    Double(withIndex - without) / Double(sqliteWith - sqliteWithout)))
            exit(0)
        } catch {
            print("search sizes: \(error)")
            exit(1)
        }
    }

    static func size(of url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
    }
}

func searchBenchmarks() {
    let once = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .milliseconds, warmupIterations: 0, maxDuration: .seconds(600),
        maxIterations: 1)
    let count = SearchCorpus.documentCount
    Benchmark("search: index \(count) documents in one transaction: Cellar", configuration: once) { benchmark in
        let store = try Store.inMemory(.init(models: [Article.self], initialMapSize: 4 << 30))
        benchmark.startMeasurement()
        try store.write { tx in for article in SearchCorpus.articles { try tx.insert(article) } }
        benchmark.stopMeasurement()
    }
    Benchmark("search: index \(count) documents in one transaction: GRDB FTS5", configuration: once) { benchmark in
        benchmark.startMeasurement()
        blackHole(try SearchGRDBStore())
        benchmark.stopMeasurement()
    }
    Benchmark("search: store \(count) documents without an index: GRDB", configuration: once) { benchmark in
        benchmark.startMeasurement()
        blackHole(try SearchGRDBStore(indexed: false))
        benchmark.stopMeasurement()
    }

    let searches = [
        ("one word", SearchCorpus.single), ("two words", SearchCorpus.both), ("a phrase", SearchCorpus.phrase),
        ("a prefix", SearchCorpus.prefix),
    ]
    for (name, query) in searches {
        Benchmark("search \(name), top 20 by BM25: Cellar") { benchmark in
            let store = SearchStores.shared.cellar
            try measure(benchmark, warmingUp: 1) {
                blackHole(try store.objects(Article.self).where(.matches(query)).limit(20).results())
            }
        }
        Benchmark("search \(name), top 20 by BM25: GRDB FTS5") { benchmark in
            let store = SearchStores.shared.grdb
            try measure(benchmark, warmingUp: 1) { blackHole(try store.top20(query)) }
        }
    }
    Benchmark("search one word, first 20 by a .contains scan: Cellar") { benchmark in
        let store = SearchStores.shared.cellar
        let word = " \(SearchCorpus.vocabulary[5000]) "
        try measure(benchmark, warmingUp: 1) {
            blackHole(try store.objects(Article.self).where(.contains(\.body, word)).limit(20).results())
        }
    }
}
