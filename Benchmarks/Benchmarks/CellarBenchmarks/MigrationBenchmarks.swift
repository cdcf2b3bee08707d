// Migrations and opening. A store of 100,000 dogs goes from version 1 to 2: `name` is renamed `fullName`, a required
// `label` is computed from the name and age, and an index on it is built. Cellar runs a migration step; GRDB runs the
// DatabaseMigrator migration a GRDB user would write (ALTER TABLE, one UPDATE, CREATE INDEX); raw LMDB rewrites each
// record of its hand-written layout and fills an index database. Then the cost of opening a store of 10 models whose
// schema did not change (empty, and holding records), and the part of it that describes the models.
import Benchmark
import CRawLMDB
@_spi(Benchmarks) import Cellar
import Foundation
import GRDB

enum MigratingDog {
    struct V1: Model {
        var id: Int64
        var name: String
        var age: Int
        var owner: Int64?
        static let schema = Schema<V1>(name: "Dog", indexes: [.index(\.age)])
    }

    struct V2: Model {
        var id: Int64
        var fullName: String
        var age: Int
        var owner: Int64?
        var label: String
        static let schema = Schema<V2>(name: "Dog", indexes: [.index(\.age), .index(\.label)])
    }

    static let toVersion2 = MigrationStep.to(2) { migration in
        try migration.enumerateRecords(ofType: "Dog") { dog in
            let name = try dog.value("name", as: String.self) ?? ""
            let age = try dog.value("age", as: Int.self) ?? 0
            dog.rename("name", to: "fullName")
            try dog.set("label", to: "\(name) (\(age))")
        }
    }

    /// A closed store of version 1 holding every dog.
    static func filledFolder() throws -> URL {
        let folder = temporaryFolder()
        let store = try Store(at: folder, configuration: .init(models: [V1.self], initialMapSize: 256 << 20))
        try store.write { tx in
            for dog in dogs { try tx.insert(V1(id: dog.id, name: dog.name, age: dog.age, owner: dog.owner)) }
        }
        return folder
    }
}

/// The raw peer's index of labels: label bytes → record key, DUPSORT.
final class MigratingRawStore {
    let raw: RawStore
    let labels: MDB_dbi

    init() throws {
        raw = try RawStore(filled: true)
        labels = try raw.openDatabase("labels", duplicates: true)
    }

    /// Appends each record's label (its length and UTF-8) and indexes it: read all, then write all, as a
    /// rewrite must (a cursor may not write while it walks).
    func migrate() throws {
        try raw.write { txn in
            var rewritten: [([UInt8], [UInt8])] = []
            rewritten.reserveCapacity(recordCount)
            try Raw.withCursor(txn, raw.database) { cursor in
                var entry = try Raw.move(cursor, MDB_FIRST)
                while let (key, value) = entry {
                    let dog = RawLayout.dog(id: RawLayout.id(key), from: value)
                    var record = Array(value)
                    var label = "\(dog.name) (\(dog.age))"
                    label.withUTF8 { utf8 in
                        withUnsafeBytes(of: UInt32(utf8.count).littleEndian) {
                            record.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self))
                        }
                        record.append(contentsOf: utf8)
                    }
                    rewritten.append((Array(key), record))
                    entry = try Raw.move(cursor, MDB_NEXT)
                }
            }
            for (key, value) in rewritten {
                try key.withUnsafeBytes { key in
                    try value.withUnsafeBytes { value in
                        try Raw.put(txn, raw.database, key: key, value: value)
                        let nameLength = Int(
                            UInt32(littleEndian: value.loadUnaligned(fromByteOffset: 17, as: UInt32.self)))
                        try Raw.put(
                            txn, labels, key: UnsafeRawBufferPointer(rebasing: value[(25 + nameLength)...]), value: key)
                    }
                }
            }
        }
    }
}

/// GRDB's version 1 schema, registered the way a GRDB app does, with every dog inserted.
func migratingGRDBStore() throws -> (GRDBStore, DatabaseMigrator) {
    let store = try GRDBStore(filled: true)
    try store.queue.write { db in try db.create(index: "dog_age", on: "dog", columns: ["age"]) }
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v2") { db in
        try db.alter(table: "dog") { table in
            table.rename(column: "name", to: "fullName")
            table.add(column: "label", .text).notNull().defaults(to: "")
        }
        try db.execute(sql: "UPDATE dog SET label = fullName || ' (' || age || ')'")
        try db.create(index: "dog_label", on: "dog", columns: ["label"])
    }
    return (store, migrator)
}

// MARK: - Ten models, for the cost of opening

/// Where a shelf stands: a nested value in each of the ten models.
struct Place: Codable, Sendable {
    var room: String
    var level: Int?
}

// Ten models of an app, each with a few properties of common kinds, a nested value and an index. Written out, not
// generic: a generic model can only have a computed `schema`, rebuilt (key paths named) at every access.
struct Shelf0: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf0>(indexes: [.index(\.rank)])
}

struct Shelf1: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf1>(indexes: [.index(\.rank)])
}

struct Shelf2: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf2>(indexes: [.index(\.rank)])
}

struct Shelf3: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf3>(indexes: [.index(\.rank)])
}

struct Shelf4: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf4>(indexes: [.index(\.rank)])
}

struct Shelf5: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf5>(indexes: [.index(\.rank)])
}

struct Shelf6: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf6>(indexes: [.index(\.rank)])
}

struct Shelf7: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf7>(indexes: [.index(\.rank)])
}

struct Shelf8: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf8>(indexes: [.index(\.rank)])
}

struct Shelf9: Model {
    var id: String
    var title: String
    var rank: Int
    var created: Date
    var tags: [String]
    var place: Place?
    var note: String?
    static let schema = Schema<Shelf9>(indexes: [.index(\.rank)])
}

/// Inserts 100 shelves of `type` (one of `tenModels`), each with a place and a note.
private func fillShelf<M: Model>(_ type: M.Type, in tx: WriteTransaction) throws {
    for number in 0..<100 {
        let json = """
            {"id": "s\(number)", "title": "shelf \(number)", "rank": \(number), "created": 0, "tags": ["a", "b"],
             "place": {"room": "hall", "level": \(number)}, "note": "n"}
            """
        try tx.insert(try JSONDecoder().decode(M.self, from: Data(json.utf8)))
    }
}

let tenModels: [any Model.Type] = [
    Shelf0.self, Shelf1.self, Shelf2.self, Shelf3.self, Shelf4.self, Shelf5.self, Shelf6.self, Shelf7.self,
    Shelf8.self, Shelf9.self,
]

func migrationBenchmarks() {
    let repeated = repeatedConfiguration()

    Benchmark("migrate \(recordCount) records (rename, computed property, index): Cellar") { benchmark in
        let folder = try MigratingDog.filledFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = Configuration(
            models: [MigratingDog.V2.self], schemaVersion: 2, initialMapSize: 256 << 20,
            migrations: [MigratingDog.toVersion2])
        benchmark.startMeasurement()
        let store = try Store(at: folder, configuration: configuration)
        benchmark.stopMeasurement()
        blackHole(store)
    }
    Benchmark("migrate \(recordCount) records (rename, computed property, index): raw LMDB") { benchmark in
        let store = try MigratingRawStore()
        benchmark.startMeasurement()
        try store.migrate()
        benchmark.stopMeasurement()
    }
    Benchmark("migrate \(recordCount) records (rename, computed property, index): GRDB") { benchmark in
        let (store, migrator) = try migratingGRDBStore()
        benchmark.startMeasurement()
        try migrator.migrate(store.queue)
        benchmark.stopMeasurement()
    }

    // Opening a store whose schema did not change: what every launch pays.
    Benchmark("open a store of 10 unchanged models: Cellar", configuration: repeated) { benchmark in
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = Configuration(models: tenModels)
        _ = try Store(at: folder, configuration: configuration)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try Store(at: folder, configuration: configuration)) }
        benchmark.stopMeasurement()
    }
    // The same with 100 records in each model: opening decodes the first record of each with the model's own type
    // (the records, not a guess, say whether the model still reads them).
    Benchmark("open a store of 10 unchanged models holding records: Cellar", configuration: repeated) { benchmark in
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = Configuration(models: tenModels)
        do {
            // Released before the measurement: a Store still open shares its file with the next, which then opens
            // nothing.
            let store = try Store(at: folder, configuration: configuration)
            try store.write { tx in
                for type in tenModels { try fillShelf(type, in: tx) }
            }
        }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(try Store(at: folder, configuration: configuration)) }
        benchmark.stopMeasurement()
    }
    Benchmark("open a store of 10 unchanged models: raw LMDB", configuration: repeated) { benchmark in
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let names = (0..<10).map { "Shelf\($0)" }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var env: OpaquePointer?
            try check(mdb_env_create(&env))
            try check(mdb_env_set_maxdbs(env, 16))
            try check(mdb_env_open(env, folder.path, UInt32(MDB_NOTLS), 0o644))
            var txn: OpaquePointer?
            try check(mdb_txn_begin(env, nil, 0, &txn))
            for name in names {
                var dbi = MDB_dbi()
                try check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi))
                blackHole(dbi)
            }
            try check(mdb_txn_commit(txn))
            mdb_env_close(env)
        }
        benchmark.stopMeasurement()
    }
    Benchmark("open a store of 10 unchanged models: GRDB", configuration: repeated) { benchmark in
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("shelves.sqlite").path
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            for number in 0..<10 {
                try db.create(table: "shelf\(number)") { table in
                    table.primaryKey("id", .text)
                    table.column("title", .text).notNull()
                    table.column("rank", .integer).notNull().indexed()
                    table.column("created", .datetime).notNull()
                    table.column("tags", .jsonText).notNull()
                    table.column("place", .jsonText)
                    table.column("note", .text)
                }
            }
        }
        try migrator.migrate(try DatabaseQueue(path: path))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let queue = try DatabaseQueue(path: path)
            try migrator.migrate(queue)
            blackHole(queue)
        }
        benchmark.stopMeasurement()
    }
    Benchmark("describe the schemas of 10 models (first opening only): Cellar", configuration: repeated) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try describeSchemasUncached(tenModels)) }
    }
}
