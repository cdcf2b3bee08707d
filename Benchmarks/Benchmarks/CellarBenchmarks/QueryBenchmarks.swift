// Indexed queries over 100,000 dogs whose ages run 0...19 (5,000 dogs each): Cellar's planner beside GRDB with
// SQL indexes and raw LMDB with hand-written DUPSORT indexes, in the same run.
import Benchmark
import CRawLMDB
import Cellar
import CellarMacros
import Foundation
import GRDB

/// The benchmark dog with indexes on age and name.
struct IndexedDog: Model, Codable, FetchableRecord, PersistableRecord {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<IndexedDog>(indexes: [.index(\.age), .index(\.name)])
    static let databaseTableName = "indexed_dog"
}

/// The same with generated record code.
@Record
struct FastIndexedDog: Model {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<FastIndexedDog>(indexes: [.index(\.age), .index(\.name)])
}

let indexedDogs: [IndexedDog] = dogs.map { IndexedDog(id: $0.id, name: $0.name, age: Int($0.id % 20), owner: $0.owner) }
let fastIndexedDogs = indexedDogs.map { FastIndexedDog(id: $0.id, name: $0.name, age: $0.age, owner: $0.owner) }
let queriedAge = 7
let ageRange = 5...7
/// An owner id that only a few dogs have, for the filter that no index answers.
let rareOwner: Int64 = 1_000

func indexedCellarStore(decodesInParallel: Bool = true) throws -> Store {
    let store = try Store.inMemory(
        decoding(inParallel: decodesInParallel, .init(models: [IndexedDog.self], initialMapSize: 512 << 20)))
    try store.write { tx in for dog in indexedDogs { try tx.insert(dog) } }
    return store
}

func indexedGeneratedStore(decodesInParallel: Bool = true) throws -> Store {
    let store = try Store.inMemory(
        decoding(inParallel: decodesInParallel, .init(models: [FastIndexedDog.self], initialMapSize: 512 << 20)))
    try store.write { tx in for dog in fastIndexedDogs { try tx.insert(dog) } }
    return store
}

/// Raw LMDB: records as in `RawLayout`, plus `age` (8 big-endian bytes) → id and `name` (UTF-8) → id, DUPSORT.
final class IndexedRawStore {
    let raw: RawStore
    let ages: MDB_dbi
    let names: MDB_dbi

    init() throws {
        raw = try RawStore(filled: false)
        ages = try raw.openDatabase("ages", duplicates: true)
        names = try raw.openDatabase("names", duplicates: true)
        try raw.write { txn in
            var buffer = RawLayout.Buffer()
            for dog in indexedDogs {
                let record = Dog(id: dog.id, name: dog.name, age: dog.age, owner: dog.owner)
                try RawLayout.withKey(dog.id) { key in
                    try Raw.put(txn, raw.database, key: key, value: buffer.encode(record))
                    try RawLayout.withKey(Int64(dog.age)) { age in try Raw.put(txn, ages, key: age, value: key) }
                    var name = dog.name
                    try name.withUTF8 { try Raw.put(txn, names, key: UnsafeRawBufferPointer($0), value: key) }
                }
            }
        }
    }

    /// Decodes the dogs whose ids an index lists from `lower` (the first entry when `nil`) through `upper` (the
    /// last when `nil`), stopping after `limit`.
    func dogs(in index: MDB_dbi, from lower: Int64?, through upper: Int64?, limit: Int = .max) throws -> [Dog] {
        var found: [Dog] = []
        try raw.read { txn in
            // Records looked up with a cursor, as the ids come in order: LMDB tries the cursor's page first.
            try Raw.withCursor(txn, raw.database) { records in
                try Raw.withCursor(txn, index) { cursor in
                    var entry =
                        try lower.map { lower in
                            try RawLayout.withKey(lower) { try Raw.move(cursor, MDB_SET_RANGE, key: $0) }
                        } ?? Raw.move(cursor, MDB_FIRST)
                    while let (key, id) = entry, found.count < limit, upper.map({ RawLayout.id(key) <= $0 }) ?? true {
                        if let (_, bytes) = try Raw.move(records, MDB_SET_KEY, key: id) {
                            found.append(RawLayout.dog(id: RawLayout.id(id), from: bytes))
                        }
                        entry = try Raw.move(cursor, MDB_NEXT)
                    }
                }
            }
        }
        return found
    }

    /// The first `limit` dogs in name order, read through the name index.
    func dogsByName(limit: Int) throws -> [Dog] {
        var found: [Dog] = []
        try raw.read { txn in
            try Raw.withCursor(txn, names) { cursor in
                var entry = try Raw.move(cursor, MDB_FIRST)
                while let (_, id) = entry, found.count < limit {
                    if let bytes = try Raw.get(txn, raw.database, key: id) {
                        found.append(RawLayout.dog(id: RawLayout.id(id), from: bytes))
                    }
                    entry = try Raw.move(cursor, MDB_NEXT)
                }
            }
        }
        return found
    }
}

final class IndexedGRDBStore {
    let folder = temporaryFolder()
    let queue: DatabaseQueue

    init() throws {
        queue = try DatabaseQueue(path: folder.appendingPathComponent("dogs.sqlite").path)
        try queue.write { db in
            try db.create(table: "indexed_dog") { table in
                table.primaryKey("id", .integer)
                table.column("name", .text).notNull().indexed()
                table.column("age", .integer).notNull().indexed()
                table.column("owner", .integer)
            }
            for dog in indexedDogs { try dog.insert(db) }
        }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}

func queryBenchmarks() {
    let expectedMatches = recordCount / 20
    let repeated = repeatedConfiguration()

    for engine in cellarEngines {
        Benchmark("query age == \(queriedAge) (\(expectedMatches) dogs): \(engine.name)") { benchmark in
            let store = try indexedCellarStore(decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                blackHole(try store.objects(IndexedDog.self).where(\.age == queriedAge).results())
            }
        }
    }
    for engine in generatedEngines {
        Benchmark("query age == \(queriedAge) (\(expectedMatches) dogs): \(engine.name)") { benchmark in
            let store = try indexedGeneratedStore(decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                blackHole(try store.objects(FastIndexedDog.self).where(\.age == queriedAge).results())
            }
        }
    }
    Benchmark("query age == \(queriedAge) (\(expectedMatches) dogs): raw LMDB") { benchmark in
        let store = try IndexedRawStore()
        let age = Int64(queriedAge)
        try measure(benchmark) {
            blackHole(try store.dogs(in: store.ages, from: age, through: age))
        }
    }
    Benchmark("query age == \(queriedAge) (\(expectedMatches) dogs): GRDB") { benchmark in
        let store = try IndexedGRDBStore()
        try measure(benchmark) {
            blackHole(try store.queue.read { db in try IndexedDog.filter(Column("age") == queriedAge).fetchAll(db) })
        }
    }

    for engine in cellarEngines {
        Benchmark("query age in \(ageRange): \(engine.name)") { benchmark in
            let store = try indexedCellarStore(decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                blackHole(try store.objects(IndexedDog.self).where(.between(\.age, ageRange)).results())
            }
        }
    }
    Benchmark("query age in \(ageRange): raw LMDB") { benchmark in
        let store = try IndexedRawStore()
        let (lower, upper) = (Int64(ageRange.lowerBound), Int64(ageRange.upperBound))
        try measure(benchmark) {
            blackHole(try store.dogs(in: store.ages, from: lower, through: upper))
        }
    }
    Benchmark("query age in \(ageRange): GRDB") { benchmark in
        let store = try IndexedGRDBStore()
        try measure(benchmark) {
            blackHole(
                try store.queue.read { db in try IndexedDog.filter(ageRange.contains(Column("age"))).fetchAll(db) })
        }
    }

    Benchmark("query top 20 by name: Cellar", configuration: repeated) { benchmark in
        let store = try indexedCellarStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.objects(IndexedDog.self).sorted(by: \.name).limit(20).results())
        }
        benchmark.stopMeasurement()
    }
    Benchmark("query top 20 by name: raw LMDB", configuration: repeated) { benchmark in
        let store = try IndexedRawStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.dogsByName(limit: 20))
        }
        benchmark.stopMeasurement()
    }
    Benchmark("query top 20 by name: GRDB", configuration: repeated) { benchmark in
        let store = try IndexedGRDBStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.queue.read { db in try IndexedDog.order(Column("name")).limit(20).fetchAll(db) })
        }
        benchmark.stopMeasurement()
    }

    Benchmark("query count age == \(queriedAge): Cellar", configuration: repeated) { benchmark in
        let store = try indexedCellarStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.objects(IndexedDog.self).where(\.age == queriedAge).count())
        }
        benchmark.stopMeasurement()
    }
    Benchmark("query count age == \(queriedAge): raw LMDB", configuration: repeated) { benchmark in
        let store = try IndexedRawStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(
                try store.raw.read { txn in
                    try Raw.withCursor(txn, store.ages) { cursor in
                        try RawLayout.withKey(Int64(queriedAge)) { key -> Int in
                            guard try Raw.move(cursor, MDB_SET, key: key) != nil else { return 0 }
                            var count = 0
                            try check(mdb_cursor_count(cursor, &count))
                            return count
                        }
                    }
                })
        }
        benchmark.stopMeasurement()
    }
    Benchmark("query count age == \(queriedAge): GRDB", configuration: repeated) { benchmark in
        let store = try IndexedGRDBStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.queue.read { db in try IndexedDog.filter(Column("age") == queriedAge).fetchCount(db) })
        }
        benchmark.stopMeasurement()
    }

    for engine in cellarEngines {
        Benchmark("query owner == \(rareOwner), no index (a scan): \(engine.name)") { benchmark in
            let store = try indexedCellarStore(decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                blackHole(try store.objects(IndexedDog.self).where(\.owner == rareOwner).results())
            }
        }
    }
    for engine in generatedEngines {
        Benchmark("query owner == \(rareOwner), no index (a scan): \(engine.name)") { benchmark in
            let store = try indexedGeneratedStore(decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                blackHole(try store.objects(FastIndexedDog.self).where(\.owner == rareOwner).results())
            }
        }
    }
    // The raw peer checks the owner field in place and decodes only the dogs that match, as SQLite does.
    Benchmark("query owner == \(rareOwner), no index (a scan): raw LMDB") { benchmark in
        let store = try IndexedRawStore()
        try measure(benchmark) {
            var found: [Dog] = []
            try store.raw.read { txn in
                try Raw.withCursor(txn, store.raw.database) { cursor in
                    var entry = try Raw.move(cursor, MDB_FIRST)
                    while let (key, value) = entry {
                        if RawLayout.owner(from: value) == rareOwner {
                            found.append(RawLayout.dog(id: RawLayout.id(key), from: value))
                        }
                        entry = try Raw.move(cursor, MDB_NEXT)
                    }
                }
            }
            blackHole(found)
        }
    }
    Benchmark("query owner == \(rareOwner), no index (a scan): GRDB") { benchmark in
        let store = try IndexedGRDBStore()
        try measure(benchmark) {
            blackHole(try store.queue.read { db in try IndexedDog.filter(Column("owner") == rareOwner).fetchAll(db) })
        }
    }
}
