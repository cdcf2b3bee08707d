// Indexed queries over 100,000 dogs whose ages run 0...19 (5,000 dogs each): Cellar's planner beside GRDB with
// SQL indexes and raw LMDB with hand-written DUPSORT indexes, in the same run.
import Benchmark
import Cellar
import Foundation
import GRDB
import LMDB

/// The benchmark dog with indexes on age and name.
struct IndexedDog: Model, Codable, FetchableRecord, PersistableRecord {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<IndexedDog>(indexes: [.index(\.age), .index(\.name)])
    static let databaseTableName = "indexed_dog"
}

let indexedDogs: [IndexedDog] = dogs.map { IndexedDog(id: $0.id, name: $0.name, age: Int($0.id % 20), owner: $0.owner) }
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

/// Raw LMDB: records as in `RawLayout`, plus `age` (8 big-endian bytes) → id and `name` (UTF-8) → id, DUPSORT.
final class IndexedRawStore {
    let raw: RawStore
    let ages: LMDB.Database
    let names: LMDB.Database

    init() throws {
        raw = try RawStore(filled: false)
        (ages, names) = try raw.environment.write { txn in
            (
                try txn.createDatabase(named: "ages", flags: .duplicateSort),
                try txn.createDatabase(named: "names", flags: .duplicateSort)
            )
        }
        try raw.environment.write { txn in
            var buffer: [UInt8] = []
            for dog in indexedDogs {
                let key = RawLayout.key(dog.id)
                RawLayout.value(Dog(id: dog.id, name: dog.name, age: dog.age, owner: dog.owner), into: &buffer)
                try txn.put(raw.database, key: key, value: buffer)
                try txn.put(ages, key: RawLayout.key(Int64(dog.age)), value: key)
                try txn.put(names, key: Array(dog.name.utf8), value: key)
            }
        }
    }

    /// Decodes the dogs whose ids an index lists for keys in `lower...upper`, stopping after `limit`.
    func dogs(in index: LMDB.Database, from lower: [UInt8], through upper: [UInt8]?, limit: Int = .max) throws -> [Dog]
    {
        var found: [Dog] = []
        try raw.environment.read { txn in
            try txn.withCursor(index) { cursor in
                // LMDB refuses an empty key: an open lower bound starts at the first entry.
                var entry = try lower.isEmpty ? cursor.first() : lower.withUnsafeBytes { try cursor.seek(atLeast: $0) }
                while let (key, id) = entry, found.count < limit,
                    upper.map({ !$0.lexicographicallyPrecedes(key) }) ?? true
                {
                    if let bytes = try txn.get(raw.database, key: id) {
                        found.append(
                            RawLayout.dog(
                                id: Int64(bitPattern: UInt64(bigEndian: id.loadUnaligned(as: UInt64.self))), from: bytes
                            ))
                    }
                    entry = try cursor.next()
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
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try store.objects(IndexedDog.self).where(\.age == queriedAge).results())
            }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("query age == \(queriedAge) (\(expectedMatches) dogs): raw LMDB") { benchmark in
        let store = try IndexedRawStore()
        let key = RawLayout.key(Int64(queriedAge))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try store.dogs(in: store.ages, from: key, through: key)) }
        benchmark.stopMeasurement()
    }
    Benchmark("query age == \(queriedAge) (\(expectedMatches) dogs): GRDB") { benchmark in
        let store = try IndexedGRDBStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.queue.read { db in try IndexedDog.filter(Column("age") == queriedAge).fetchAll(db) })
        }
        benchmark.stopMeasurement()
    }

    for engine in cellarEngines {
        Benchmark("query age in \(ageRange): \(engine.name)") { benchmark in
            let store = try indexedCellarStore(decodesInParallel: engine.decodesInParallel)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try store.objects(IndexedDog.self).where(.between(\.age, ageRange)).results())
            }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("query age in \(ageRange): raw LMDB") { benchmark in
        let store = try IndexedRawStore()
        let (lower, upper) = (RawLayout.key(Int64(ageRange.lowerBound)), RawLayout.key(Int64(ageRange.upperBound)))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try store.dogs(in: store.ages, from: lower, through: upper)) }
        benchmark.stopMeasurement()
    }
    Benchmark("query age in \(ageRange): GRDB") { benchmark in
        let store = try IndexedGRDBStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(
                try store.queue.read { db in try IndexedDog.filter(ageRange.contains(Column("age"))).fetchAll(db) })
        }
        benchmark.stopMeasurement()
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
            blackHole(try store.dogs(in: store.names, from: [], through: nil, limit: 20))
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
        let key = RawLayout.key(Int64(queriedAge))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(
                try store.raw.environment.read { txn in
                    try txn.withCursor(store.ages) { cursor in
                        try key.withUnsafeBytes { try cursor.seek(to: $0) } == nil ? 0 : try cursor.duplicateCount()
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
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(try store.objects(IndexedDog.self).where(\.owner == rareOwner).results())
            }
            benchmark.stopMeasurement()
        }
    }
    Benchmark("query owner == \(rareOwner), no index (a scan): raw LMDB") { benchmark in
        let store = try IndexedRawStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.dogs(in: store.raw.database, from: [], through: nil).filter { $0.owner == rareOwner })
        }
        benchmark.stopMeasurement()
    }
    Benchmark("query owner == \(rareOwner), no index (a scan): GRDB") { benchmark in
        let store = try IndexedGRDBStore()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try store.queue.read { db in try IndexedDog.filter(Column("owner") == rareOwner).fetchAll(db) })
        }
        benchmark.stopMeasurement()
    }
}
