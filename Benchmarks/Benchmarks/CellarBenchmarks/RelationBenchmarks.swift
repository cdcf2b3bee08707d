// Links and backlinks: 25,000 people own 100,000 dogs (four each, in order). Cellar keeps `[Link<Dog>]` in each
// person and a backlink database; GRDB has the schema a GRDB user would write (a pivot table with its indexes and
// ON DELETE CASCADE foreign keys); raw LMDB stores each person's dog ids in its record beside a hand-kept DUPSORT
// backlink database, all in the same run.
import Benchmark
import CRawLMDB
import Cellar
import Foundation
import GRDB

struct LinkedDog: Model, Codable, FetchableRecord, PersistableRecord {
    var id: Int64
    var name: String
    var age: Int
    static let schema = Schema<LinkedDog>(indexes: [.index(\.age)])
    static let databaseTableName = "dog"
}

struct LinkedPerson: Model, Codable, FetchableRecord, PersistableRecord {
    var id: Int64
    var name: String
    var dogs: [Link<LinkedDog>]
    static let schema = Schema<LinkedPerson>(links: [.link(\.dogs)])
    static let databaseTableName = "person"
    // GRDB stores the list in the pivot table, not in the person's row.
    enum Columns { static let id = Column("id") }
    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["name"] = name
    }
    init(id: Int64, name: String, dogs: [Link<LinkedDog>]) {
        self.id = id
        self.name = name
        self.dogs = dogs
    }
    init(row: Row) throws {
        self.init(id: row["id"], name: row["name"], dogs: [])
    }
}

let dogsPerPerson = 4
let linkedDogs: [LinkedDog] = dogs.map { LinkedDog(id: $0.id, name: $0.name, age: $0.age) }
let linkedPeople: [LinkedPerson] = (1...Int64(recordCount / dogsPerPerson)).map { id in
    let first = (id - 1) * Int64(dogsPerPerson) + 1
    return LinkedPerson(
        id: id, name: "Person \(id)", dogs: (first..<first + Int64(dogsPerPerson)).map { Link(id: $0) })
}
let minimumAge = 3
/// The dogs of the delete benchmark: a tenth, in random order, each in one person's list.
let deletedDogIDs = Array(randomIDs.prefix(batchDeleteCount))

func linkedCellarStore(decodesInParallel: Bool = true) throws -> Store {
    let store = try Store.inMemory(
        decoding(
            inParallel: decodesInParallel,
            .init(models: [LinkedPerson.self, LinkedDog.self], initialMapSize: 512 << 20)))
    try store.write { tx in
        for dog in linkedDogs { try tx.insert(dog) }
        for person in linkedPeople { try tx.insert(person) }
    }
    return store
}

/// Raw LMDB: dogs as in `RawLayout` with an `age` → id DUPSORT index; a person is its name's length and UTF-8,
/// then its dogs' 8-byte keys; `backlinks` maps a dog's key to its people's keys (DUPSORT).
final class LinkedRawStore {
    let raw: RawStore
    let ages: MDB_dbi
    let people: MDB_dbi
    let backlinks: MDB_dbi

    init() throws {
        raw = try RawStore(filled: false)
        ages = try raw.openDatabase("ages", duplicates: true)
        people = try raw.openDatabase("people")
        backlinks = try raw.openDatabase("backlinks", duplicates: true)
        try raw.write { txn in
            var buffer = RawLayout.Buffer()
            for dog in dogs {
                try RawLayout.withKey(dog.id) { key in
                    try Raw.put(txn, raw.database, key: key, value: buffer.encode(dog))
                    try RawLayout.withKey(Int64(dog.age)) { age in try Raw.put(txn, ages, key: age, value: key) }
                }
            }
            var record: [UInt8] = []
            for person in linkedPeople {
                Self.encode(name: person.name, dogs: person.dogs.map(\.id), into: &record)
                try RawLayout.withKey(person.id) { key in
                    try record.withUnsafeBytes { try Raw.put(txn, people, key: key, value: $0) }
                    for dog in person.dogs {
                        try RawLayout.withKey(dog.id) { dog in try Raw.put(txn, backlinks, key: dog, value: key) }
                    }
                }
            }
        }
    }

    static func encode(name: String, dogs: [Int64], into buffer: inout [UInt8]) {
        buffer.removeAll(keepingCapacity: true)
        var name = name
        name.withUTF8 { utf8 in
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) {
                buffer.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self))
            }
            buffer.append(contentsOf: utf8)
        }
        for dog in dogs {
            RawLayout.withKey(dog) { buffer.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
        }
    }

    static func person(id: Int64, from bytes: UnsafeRawBufferPointer) -> (id: Int64, name: String, dogs: [Int64]) {
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)))
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[4..<4 + length]), as: UTF8.self)
        let dogs = stride(from: 4 + length, to: bytes.count, by: 8).map {
            Int64(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: $0, as: UInt64.self)))
        }
        return (id, name, dogs)
    }

    /// The people whose lists hold `dog`, read through the backlink database.
    func owners(of dog: Int64, in txn: OpaquePointer) throws -> [(id: Int64, name: String, dogs: [Int64])] {
        var found: [(id: Int64, name: String, dogs: [Int64])] = []
        try Raw.withCursor(txn, backlinks) { cursor in
            var entry = try RawLayout.withKey(dog) { try Raw.move(cursor, MDB_SET, key: $0) }
            while let (_, person) = entry {
                if let bytes = try Raw.get(txn, people, key: person) {
                    found.append(Self.person(id: RawLayout.id(person), from: bytes))
                }
                entry = try Raw.move(cursor, MDB_NEXT_DUP)
            }
        }
        return found
    }
}

final class LinkedGRDBStore {
    let folder = temporaryFolder()
    let queue: DatabaseQueue

    init() throws {
        var configuration = GRDB.Configuration()
        configuration.foreignKeysEnabled = true
        queue = try DatabaseQueue(
            path: folder.appendingPathComponent("people.sqlite").path, configuration: configuration)
        try queue.write { db in
            try db.create(table: "dog") { table in
                table.primaryKey("id", .integer)
                table.column("name", .text).notNull()
                table.column("age", .integer).notNull().indexed()
            }
            try db.create(table: "person") { table in
                table.primaryKey("id", .integer)
                table.column("name", .text).notNull()
            }
            // The ordered to-many list: one row per entry, its position kept, both ends indexed.
            try db.create(table: "personDog") { table in
                table.column("personId", .integer).notNull().references("person", onDelete: .cascade)
                table.column("dogId", .integer).notNull().indexed().references("dog", onDelete: .cascade)
                table.column("position", .integer).notNull()
                table.primaryKey(["personId", "position"])
            }
            for dog in linkedDogs { try dog.insert(db) }
            let statement = try db.makeStatement(
                sql: "INSERT INTO personDog (personId, dogId, position) VALUES (?, ?, ?)")
            for person in linkedPeople {
                try person.insert(db)
                for (position, dog) in person.dogs.enumerated() {
                    try statement.execute(arguments: [person.id, dog.id, position])
                }
            }
        }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}

func relationBenchmarks() {
    let repeated = repeatedConfiguration()
    let ownersTitle = "query owners of dogs aged \(minimumAge)+ (\(recordCount) dogs, \(linkedPeople.count) people)"

    for engine in cellarEngines {
        Benchmark("\(ownersTitle): \(engine.name)") { benchmark in
            let store = try linkedCellarStore(decodesInParallel: engine.decodesInParallel)
            try measure(benchmark) {
                let oldDogs = store.objects(LinkedDog.self).where(\.age >= minimumAge)
                blackHole(try store.objects(LinkedPerson.self).backlinking(oldDogs, via: \.dogs).results())
            }
        }
    }
    Benchmark("\(ownersTitle): raw LMDB") { benchmark in
        let store = try LinkedRawStore()
        try measure(benchmark) {
            try store.raw.read { txn in
                var owners = Set<Int64>()
                try Raw.withCursor(txn, store.ages) { ages in
                    try Raw.withCursor(txn, store.backlinks) { backlinks in
                        var entry = try RawLayout.withKey(Int64(minimumAge)) {
                            try Raw.move(ages, MDB_SET_RANGE, key: $0)
                        }
                        while let (_, dog) = entry {
                            var person = try Raw.move(backlinks, MDB_SET, key: dog)
                            while let (_, key) = person {
                                owners.insert(RawLayout.id(key))
                                person = try Raw.move(backlinks, MDB_NEXT_DUP)
                            }
                            entry = try Raw.move(ages, MDB_NEXT)
                        }
                    }
                }
                var found: [(id: Int64, name: String, dogs: [Int64])] = []
                try Raw.withCursor(txn, store.people) { people in
                    for id in owners.sorted() {
                        try RawLayout.withKey(id) { key in
                            if let (_, bytes) = try Raw.move(people, MDB_SET_KEY, key: key) {
                                found.append(LinkedRawStore.person(id: id, from: bytes))
                            }
                        }
                    }
                }
                blackHole(found)
            }
        }
    }
    Benchmark("\(ownersTitle): GRDB") { benchmark in
        let store = try LinkedGRDBStore()
        try measure(benchmark) {
            blackHole(
                try store.queue.read { db in
                    try LinkedPerson.fetchAll(
                        db,
                        sql: """
                            SELECT DISTINCT person.* FROM person
                            JOIN personDog ON personDog.personId = person.id
                            JOIN dog ON dog.id = personDog.dogId
                            WHERE dog.age >= ?
                            """, arguments: [minimumAge])
                })
        }
    }

    // Following links: a page of people, each with its four dogs, from one version.
    let page = Int64(linkedPeople.count / 25)
    let includingTitle = "query \(page) people with their \(dogsPerPerson) dogs each"
    Benchmark("\(includingTitle): Cellar including(\\.dogs)") { benchmark in
        let store = try linkedCellarStore()
        try measure(benchmark) {
            blackHole(try store.objects(LinkedPerson.self).where(\.id <= page).including(\.dogs).results())
        }
    }
    Benchmark("\(includingTitle): Cellar resolve one by one") { benchmark in
        let store = try linkedCellarStore()
        try measure(benchmark) {
            let people = try store.objects(LinkedPerson.self).where(\.id <= page).results()
            blackHole(try people.map { person in (person, try store.resolve(person.dogs)) })
        }
    }
    Benchmark("\(includingTitle): raw LMDB") { benchmark in
        let store = try LinkedRawStore()
        try measure(benchmark) {
            try store.raw.read { txn in
                var found: [((id: Int64, name: String, dogs: [Int64]), [Dog])] = []
                try Raw.withCursor(txn, store.people) { people in
                    var entry = try RawLayout.withKey(1) { try Raw.move(people, MDB_SET_RANGE, key: $0) }
                    while let (key, bytes) = entry, RawLayout.id(key) <= page {
                        let person = LinkedRawStore.person(id: RawLayout.id(key), from: bytes)
                        var owned: [Dog] = []
                        for dog in person.dogs {
                            try RawLayout.withKey(dog) { key in
                                if let bytes = try Raw.get(txn, store.raw.database, key: key) {
                                    owned.append(RawLayout.dog(id: dog, from: bytes))
                                }
                            }
                        }
                        found.append((person, owned))
                        entry = try Raw.move(people, MDB_NEXT)
                    }
                }
                blackHole(found)
            }
        }
    }
    Benchmark("\(includingTitle): GRDB") { benchmark in
        let store = try LinkedGRDBStore()
        try measure(benchmark) {
            // What GRDB's including(all:) runs: the people, then their dogs in one query, joined in memory.
            blackHole(
                try store.queue.read { db in
                    let people = try LinkedPerson.fetchAll(
                        db, sql: "SELECT * FROM person WHERE id <= ?", arguments: [page])
                    var dogsByPerson: [Int64: [LinkedDog]] = [:]
                    let rows = try Row.fetchCursor(
                        db,
                        sql: """
                            SELECT dog.*, personDog.personId FROM personDog JOIN dog ON dog.id = personDog.dogId
                            WHERE personDog.personId <= ? ORDER BY personDog.personId, personDog.position
                            """, arguments: [page])
                    while let row = try rows.next() {
                        dogsByPerson[row["personId"], default: []].append(
                            LinkedDog(id: row["id"], name: row["name"], age: row["age"]))
                    }
                    return people.map { ($0, dogsByPerson[$0.id] ?? []) }
                })
        }
    }
    Benchmark("query backlinks of one dog: Cellar", configuration: repeated) { benchmark in
        let store = try linkedCellarStore()
        benchmark.startMeasurement()
        for iteration in benchmark.scaledIterations {
            let dog = linkedDogs[Int(randomIDs[iteration % randomIDs.count] - 1)]
            blackHole(try store.backlinks(to: dog, via: \LinkedPerson.dogs))
        }
        benchmark.stopMeasurement()
    }
    Benchmark("query backlinks of one dog: raw LMDB", configuration: repeated) { benchmark in
        let store = try LinkedRawStore()
        benchmark.startMeasurement()
        for iteration in benchmark.scaledIterations {
            let dog = randomIDs[iteration % randomIDs.count]
            blackHole(try store.raw.read { txn in try store.owners(of: dog, in: txn) })
        }
        benchmark.stopMeasurement()
    }
    Benchmark("query backlinks of one dog: GRDB", configuration: repeated) { benchmark in
        let store = try LinkedGRDBStore()
        benchmark.startMeasurement()
        for iteration in benchmark.scaledIterations {
            let dog = randomIDs[iteration % randomIDs.count]
            blackHole(
                try store.queue.read { db in
                    try LinkedPerson.fetchAll(
                        db,
                        sql: """
                            SELECT person.* FROM person JOIN personDog ON personDog.personId = person.id
                            WHERE personDog.dogId = ?
                            """, arguments: [dog])
                })
        }
        benchmark.stopMeasurement()
    }

    // Every deleted dog sits in one person's list: the list loses it (`.nullify`; GRDB's pivot rows cascade).
    Benchmark("delete \(batchDeleteCount) linked dogs in one transaction: Cellar") { benchmark in
        let store = try linkedCellarStore()
        benchmark.startMeasurement()
        try store.write { tx in try tx.delete(LinkedDog.self, ids: deletedDogIDs) }
        benchmark.stopMeasurement()
    }
    Benchmark("delete \(batchDeleteCount) linked dogs in one transaction: raw LMDB") { benchmark in
        let store = try LinkedRawStore()
        benchmark.startMeasurement()
        try store.raw.write { txn in
            var buffer: [UInt8] = []
            for id in deletedDogIDs {
                try RawLayout.withKey(id) { key in
                    for owner in try store.owners(of: id, in: txn) {
                        LinkedRawStore.encode(name: owner.name, dogs: owner.dogs.filter { $0 != id }, into: &buffer)
                        try RawLayout.withKey(owner.id) { person in
                            try buffer.withUnsafeBytes { try Raw.put(txn, store.people, key: person, value: $0) }
                        }
                    }
                    try Raw.delete(txn, store.backlinks, key: key)
                    if let bytes = try Raw.get(txn, store.raw.database, key: key) {
                        let age = RawLayout.dog(id: id, from: bytes).age
                        try RawLayout.withKey(Int64(age)) { age in try Raw.delete(txn, store.ages, key: age, value: key)
                        }
                    }
                    try Raw.delete(txn, store.raw.database, key: key)
                }
            }
        }
        benchmark.stopMeasurement()
    }
    Benchmark("delete \(batchDeleteCount) linked dogs in one transaction: GRDB") { benchmark in
        let store = try LinkedGRDBStore()
        benchmark.startMeasurement()
        try store.queue.write { db in _ = try LinkedDog.deleteAll(db, keys: deletedDogIDs) }
        benchmark.stopMeasurement()
    }
}
