// Cellar beside raw LMDB (a hand-written byte layout: the ceiling) and GRDB (Codable records in a file database:
// the peer users pick today), on the same records, in one run.
//
// Run from this folder:  swift package benchmark
// A quick smoke run:     CELLAR_BENCH_RECORDS=2000 CELLAR_BENCH_ITERATIONS=1 swift package benchmark
import Benchmark
import CRawLMDB
import Cellar
import CellarMacros
import Foundation
import GRDB

/// The record every engine stores.
struct Dog: Model, Codable, FetchableRecord, PersistableRecord {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
}

/// The same record with generated record code (`@Record`) instead of `Codable`'s containers.
@Record
struct FastDog: Model {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
}

let recordCount = ProcessInfo.processInfo.environment["CELLAR_BENCH_RECORDS"].flatMap(Int.init) ?? 100_000
let batchDeleteCount = recordCount / 10
let singleDeleteCount = max(recordCount / 100, 10)
let iterations = ProcessInfo.processInfo.environment["CELLAR_BENCH_ITERATIONS"].flatMap(Int.init) ?? 10

let dogs: [Dog] = (1...Int64(recordCount)).map { id in
    Dog(id: id, name: "Dog \(id)", age: Int(id % 15), owner: id % 3 == 0 ? nil : id / 3)
}
let fastDogs = dogs.map { FastDog(id: $0.id, name: $0.name, age: $0.age, owner: $0.owner) }

/// Deterministic shuffled ids, so every engine reads and deletes the same ones in the same order.
let randomIDs: [Int64] = {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var ids = dogs.map(\.id)
    for i in stride(from: ids.count - 1, to: 0, by: -1) {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        ids.swapAt(i, Int(state >> 33) % (i + 1))
    }
    return ids
}()

func temporaryFolder() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("cellar-bench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

// MARK: - Cellar

/// The configuration of the benchmarks' Cellar store, which a second process opens too.
let cellarConfiguration = Cellar.Configuration(models: [Dog.self], initialMapSize: 256 << 20)

/// Cellar as it runs by default (large results decoded on every core), and kept on one core as the peers are.
let cellarEngines: [(name: String, decodesInParallel: Bool)] = [("Cellar", true), ("Cellar (one core)", false)]
/// The same with the `@Record` model.
let generatedEngines: [(name: String, decodesInParallel: Bool)] = [
    ("Cellar @Record", true), ("Cellar @Record (one core)", false),
]

/// `configuration` with parallel decoding on or off.
func decoding(inParallel: Bool, _ configuration: Cellar.Configuration) -> Cellar.Configuration {
    var configuration = configuration
    configuration.decodesInParallel = inParallel
    return configuration
}

func cellarStore(filled: Bool, decodesInParallel: Bool = true) throws -> Store {
    let store = try Store.inMemory(decoding(inParallel: decodesInParallel, cellarConfiguration))
    if filled { try store.write { tx in for dog in dogs { try tx.insert(dog) } } }
    return store
}

/// A store of the `@Record` dogs.
func generatedStore(filled: Bool, decodesInParallel: Bool = true) throws -> Store {
    let store = try Store.inMemory(
        decoding(inParallel: decodesInParallel, .init(models: [FastDog.self], initialMapSize: 256 << 20)))
    if filled { try store.write { tx in for dog in fastDogs { try tx.insert(dog) } } }
    return store
}

// MARK: - GRDB

final class GRDBStore {
    let folder = temporaryFolder()
    let queue: DatabaseQueue

    init(filled: Bool) throws {
        queue = try DatabaseQueue(path: folder.appendingPathComponent("dogs.sqlite").path)
        try queue.write { db in
            try db.create(table: "dog") { table in
                table.primaryKey("id", .integer)
                table.column("name", .text).notNull()
                table.column("age", .integer).notNull()
                table.column("owner", .integer)
            }
        }
        if filled { try queue.write { db in for dog in dogs { try dog.insert(db) } } }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}

// MARK: - The benchmarks

/// Runs a read benchmark's operation `warmingUp` times with the clock stopped, then once per scaled iteration with it
/// running. Each sample builds a fresh store, and the first reads of a new store fault its pages in and fill the
/// engines' caches (LMDB's map, SQLite's page cache): what an app that keeps its store open pays once, not per query.
/// Every engine is warmed alike.
func measure(_ benchmark: Benchmark, warmingUp runs: Int = 3, _ operation: () throws -> Void) rethrows {
    for _ in 0..<runs { try operation() }
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations { try operation() }
    benchmark.stopMeasurement()
}

/// For operations of a microsecond or so: a thousand per sample, timed in nanoseconds, so neither the clock's
/// resolution nor the table's unit rounds them away.
func repeatedConfiguration() -> Benchmark.Configuration {
    var configuration = Benchmark.defaultConfiguration
    configuration.scalingFactor = .kilo
    configuration.timeUnits = .nanoseconds
    return configuration
}

let benchmarks: @Sendable () -> Void = {
    OtherProcessWriter.runIfAsked()
    SearchSizes.runIfAsked()
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput], timeUnits: .microseconds, warmupIterations: min(iterations, 1),
        maxDuration: .seconds(5), maxIterations: iterations)

    // Each benchmark builds its store before starting the clock and stops the clock before the store is closed
    // and its files are deleted.

    // Insert every record in one transaction, into an empty store made before the clock starts.
    Benchmark("insert \(recordCount) in one transaction: Cellar") { benchmark in
        let store = try cellarStore(filled: false)
        benchmark.startMeasurement()
        try store.write { tx in for dog in dogs { try tx.insert(dog) } }
        benchmark.stopMeasurement()
    }
    Benchmark("insert \(recordCount) in one transaction: Cellar @Record") { benchmark in
        let store = try generatedStore(filled: false)
        benchmark.startMeasurement()
        try store.write { tx in for dog in fastDogs { try tx.insert(dog) } }
        benchmark.stopMeasurement()
    }
    Benchmark("insert \(recordCount) in one transaction: raw LMDB") { benchmark in
        let store = try RawStore(filled: false)
        benchmark.startMeasurement()
        try store.insertAll()
        benchmark.stopMeasurement()
    }
    Benchmark("insert \(recordCount) in one transaction: GRDB") { benchmark in
        let store = try GRDBStore(filled: false)
        benchmark.startMeasurement()
        try store.queue.write { db in for dog in dogs { try dog.insert(db) } }
        benchmark.stopMeasurement()
    }

    // Random primary-key gets with a full decode, all inside one read transaction.
    Benchmark("get \(recordCount) by id: Cellar") { benchmark in
        let store = try cellarStore(filled: true)
        try measure(benchmark, warmingUp: 1) {
            try store.read { snapshot in
                for id in randomIDs { blackHole(try snapshot.object(Dog.self, id: id)) }
            }
        }
    }
    Benchmark("get \(recordCount) by id: Cellar @Record") { benchmark in
        let store = try generatedStore(filled: true)
        try measure(benchmark, warmingUp: 1) {
            try store.read { snapshot in
                for id in randomIDs { blackHole(try snapshot.object(FastDog.self, id: id)) }
            }
        }
    }
    Benchmark("get \(recordCount) by id: raw LMDB") { benchmark in
        let store = try RawStore(filled: true)
        try measure(benchmark, warmingUp: 1) {
            try store.read { txn in
                for id in randomIDs {
                    try RawLayout.withKey(id) { key in
                        guard let bytes = try Raw.get(txn, store.database, key: key) else { return }
                        blackHole(RawLayout.dog(id: id, from: bytes))
                    }
                }
            }
        }
    }
    Benchmark("get \(recordCount) by id: GRDB fetchOne") { benchmark in
        let store = try GRDBStore(filled: true)
        try measure(benchmark, warmingUp: 1) {
            try store.queue.read { db in
                for id in randomIDs { blackHole(try Dog.fetchOne(db, key: id)) }
            }
        }
    }
    Benchmark("get \(recordCount) by id: GRDB cached statement") { benchmark in
        let store = try GRDBStore(filled: true)
        try measure(benchmark, warmingUp: 1) {
            try store.queue.read { db in
                let statement = try db.cachedStatement(sql: "SELECT * FROM dog WHERE id = ?")
                for id in randomIDs { blackHole(try Dog.fetchOne(statement, arguments: [id])) }
            }
        }
    }

    // A full scan that decodes every record.
    for engine in cellarEngines {
        Benchmark("scan \(recordCount): \(engine.name)") { benchmark in
            let store = try cellarStore(filled: true, decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                blackHole(try store.objects(Dog.self).results())
            }
        }
    }
    for engine in generatedEngines {
        Benchmark("scan \(recordCount): \(engine.name)") { benchmark in
            let store = try generatedStore(filled: true, decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                blackHole(try store.objects(FastDog.self).results())
            }
        }
    }
    Benchmark("scan \(recordCount): raw LMDB") { benchmark in
        let store = try RawStore(filled: true)
        try measure(benchmark) {
            var all: [Dog] = []
            try store.read { txn in
                try Raw.withCursor(txn, store.database) { cursor in
                    var entry = try Raw.move(cursor, MDB_FIRST)
                    while let (key, value) = entry {
                        all.append(RawLayout.dog(id: RawLayout.id(key), from: value))
                        entry = try Raw.move(cursor, MDB_NEXT)
                    }
                }
            }
            blackHole(all)
        }
    }
    Benchmark("scan \(recordCount): GRDB") { benchmark in
        let store = try GRDBStore(filled: true)
        try measure(benchmark) {
            blackHole(try store.queue.read { db in try Dog.fetchAll(db) })
        }
    }

    // Delete a tenth of the records by id in one transaction.
    Benchmark("delete \(batchDeleteCount) by id in one transaction: Cellar") { benchmark in
        let store = try cellarStore(filled: true)
        benchmark.startMeasurement()
        try store.write { tx in for id in randomIDs.prefix(batchDeleteCount) { try tx.delete(Dog.self, id: id) } }
        benchmark.stopMeasurement()
    }
    Benchmark("delete \(batchDeleteCount) by id in one transaction: Cellar @Record") { benchmark in
        let store = try generatedStore(filled: true)
        benchmark.startMeasurement()
        try store.write { tx in
            for id in randomIDs.prefix(batchDeleteCount) { try tx.delete(FastDog.self, id: id) }
        }
        benchmark.stopMeasurement()
    }
    Benchmark("delete \(batchDeleteCount) by id in one transaction: raw LMDB") { benchmark in
        let store = try RawStore(filled: true)
        benchmark.startMeasurement()
        try store.write { txn in
            for id in randomIDs.prefix(batchDeleteCount) {
                try RawLayout.withKey(id) { key in try Raw.delete(txn, store.database, key: key) }
            }
        }
        benchmark.stopMeasurement()
    }
    Benchmark("delete \(batchDeleteCount) by id in one transaction: GRDB") { benchmark in
        let store = try GRDBStore(filled: true)
        benchmark.startMeasurement()
        try store.queue.write { db in
            for id in randomIDs.prefix(batchDeleteCount) { try Dog.deleteOne(db, key: id) }
        }
        benchmark.stopMeasurement()
    }

    // Delete records one transaction each: every commit is flushed to disk (fsync) by all three.
    Benchmark("delete \(singleDeleteCount) by id, one transaction each: Cellar") { benchmark in
        let store = try cellarStore(filled: true)
        benchmark.startMeasurement()
        for id in randomIDs.prefix(singleDeleteCount) { try store.write { tx in try tx.delete(Dog.self, id: id) } }
        benchmark.stopMeasurement()
    }
    Benchmark("delete \(singleDeleteCount) by id, one transaction each: raw LMDB") { benchmark in
        let store = try RawStore(filled: true)
        benchmark.startMeasurement()
        for id in randomIDs.prefix(singleDeleteCount) {
            try store.write { txn in
                try RawLayout.withKey(id) { key in try Raw.delete(txn, store.database, key: key) }
            }
        }
        benchmark.stopMeasurement()
    }
    Benchmark("delete \(singleDeleteCount) by id, one transaction each: GRDB") { benchmark in
        let store = try GRDBStore(filled: true)
        benchmark.startMeasurement()
        for id in randomIDs.prefix(singleDeleteCount) {
            try store.queue.write { db in _ = try Dog.deleteOne(db, key: id) }
        }
        benchmark.stopMeasurement()
    }

    queryBenchmarks()
    relationBenchmarks()
    migrationBenchmarks()
    observationBenchmarks()
    searchBenchmarks()
}
