import Foundation
import Testing

@testable import Cellar

/// Changes a store applies by itself or as the schema declares, with no migration and no version bump.
@Suite("Schema changes at opening")
struct SchemaChangeTests {
    enum Before {
        struct Pet: Model, Equatable {
            var id: Int
            var name: String
            var age: Int
            static let schema = Schema<Pet>(name: "Pet", indexes: [.index(\.name)])
        }
    }

    enum Optional {
        /// `nickname` added as optional, `name` index dropped, `age` indexed, a new model beside it.
        struct Pet: Model, Equatable {
            var id: Int
            var name: String
            var age: Int
            var nickname: String?
            static let schema = Schema<Pet>(name: "Pet", indexes: [.index(\.age)])
        }

        struct Toy: Model {
            var id: Int
        }
    }

    @Test func automaticChangesApplyAtTheSameVersionAndAreListedBeforehand() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Before.Pet.self])
            try store.write { tx in
                for id in 1...20 { try tx.insert(Before.Pet(id: id, name: "pet \(id)", age: id % 7)) }
            }
        }
        let configuration = Configuration(models: [Optional.Pet.self, Optional.Toy.self])
        let pending = try Store.pendingChanges(at: folder.url, configuration: configuration)
        #expect(
            pending.changes == [
                .propertyAdded(model: "Pet", property: "nickname", kind: "string", isOptional: true, hasDefault: false),
                .indexAdded(model: "Pet", index: "age"), .indexRemoved(model: "Pet", index: "name"),
                .modelAdded(model: "Toy"),
            ])
        #expect(pending.migrationSteps.isEmpty && !pending.rewritesRecords && pending.unmigratedChanges.isEmpty)
        #expect(pending.storedSchemaVersion == 1)
        #expect(pending.changes.map(\.description)[0] == "Property 'Pet.nickname' has been added.")
        #expect(pending.changes.allSatisfy { $0.handling == .automatic })

        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.objects(Optional.Pet.self).where(\.age == 3).explain().contains("i/Pet.age"))
        #expect(try store.objects(Optional.Pet.self).where(\.age == 3).results().map(\.id) == [3, 10, 17])
        #expect(try store.object(Optional.Pet.self, id: 1)?.nickname == nil)
        #expect(try Store.pendingChanges(at: folder.url, configuration: configuration).isEmpty)
        #expect(try store.verifyIntegrity().isConsistent)
    }

    @Test func pendingChangesWritesNothing() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([V1.Pet.self])
            try store.write { tx in try tx.insert(V1.Pet(name: "Rex", age: 3)) }
        }
        let data = folder.url.appendingPathComponent("data.mdb")
        let before = try Data(contentsOf: data)
        let pending = try Store.pendingChanges(at: folder.url, configuration: petConfiguration(2))
        #expect(pending.migrationSteps == [2] && pending.rewritesRecords)
        #expect(
            pending.changes == [
                .propertyAdded(model: "Pet", property: "color", kind: "string", isOptional: false, hasDefault: false)
            ])
        #expect(try Data(contentsOf: data) == before)
        let missing = folder.url.appendingPathComponent("not-there")
        #expect(
            try Store.pendingChanges(at: missing, configuration: petConfiguration(1)).changes == [
                .modelAdded(model: "Pet")
            ])
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    enum Declared {
        /// `name` renamed to `title`, a required `legs` with a default: no migration needed.
        struct Pet: Model, Equatable {
            var id: Int
            var title: String
            var age: Int
            var legs: Int
            static let schema = Schema<Pet>(name: "Pet", indexes: [.index(\.title)])
                .property(\.title, renamedFrom: "name")
                .property(\.legs, default: 4)
        }

        /// The model renamed from Pet to Animal, with its auto-increment sequence.
        struct Animal: Model, Equatable {
            var id: Int64 = 0
            var name: String
            var age: Int
            static let schema = Schema<Animal>(autoIncrement: true, indexes: [.index(\.age)]).renamed(from: "Pet")
        }
    }

    /// `title` is stored under the key `name`, and its schema says `title` was renamed from `name`.
    struct RenamedToAKeyItDoesNotStore: Model {
        var id: Int
        var title: String
        enum CodingKeys: String, CodingKey {
            case id
            case title = "name"
        }
        static let schema = Schema<RenamedToAKeyItDoesNotStore>().property(\.title, renamedFrom: "name")
    }

    /// Its coding keys are seen only in what it writes: its first write is refused, and nothing is written.
    @Test func aRenameToAKeyTheModelDoesNotStoreIsRefusedAtItsFirstWrite() throws {
        let folder = TemporaryFolder()
        let configuration = Configuration(models: [RenamedToAKeyItDoesNotStore.self])
        let refusal = StoreError.invalidSchema(
            model: "RenamedToAKeyItDoesNotStore",
            reason: "its Schema renames \"name\" to \"title\", which is not a key it stores (it stores \"id\", "
                + "\"name\"); a renamed property's coding key must be its name")
        let store = try Store(at: folder.url, configuration: configuration)
        for _ in 0..<2 {
            #expect(throws: refusal) {
                try store.write { tx in try tx.insert(RenamedToAKeyItDoesNotStore(id: 1, title: "a")) }
            }
        }
        #expect(try store.objects(RenamedToAKeyItDoesNotStore.self).count() == 0)
    }

    @Test func declaredRenamesAndDefaultsRewriteTheRecordsOnceAtOpening() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Before.Pet.self])
            try store.write { tx in
                for id in 1...5 { try tx.insert(Before.Pet(id: id, name: "pet \(id)", age: id)) }
            }
        }
        let configuration = Configuration(models: [Declared.Pet.self])
        #expect(
            try Store.pendingChanges(at: folder.url, configuration: configuration).changes == [
                .propertyRenamed(model: "Pet", from: "name", to: "title"),
                .propertyAdded(model: "Pet", property: "legs", kind: "int", isOptional: false, hasDefault: true),
                .indexAdded(model: "Pet", index: "title"), .indexRemoved(model: "Pet", index: "name"),
            ])
        do {
            let store = try Store(at: folder.url, configuration: configuration)
            #expect(try store.object(Declared.Pet.self, id: 2) == Declared.Pet(id: 2, title: "pet 2", age: 2, legs: 4))
            #expect(try store.objects(Declared.Pet.self).where(\.title == "pet 4").results().map(\.id) == [4])
            #expect(try store.verifyIntegrity().isConsistent)
        }
        // Reopened, nothing is left to do, and the values stay.
        #expect(try Store.pendingChanges(at: folder.url, configuration: configuration).isEmpty)
        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.objects(Declared.Pet.self).results().map(\.title) == (1...5).map { "pet \($0)" })
    }

    @Test func aRenamedModelKeepsItsRecordsAndItsSequence() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([V1.Pet.self])
            try store.write { tx in
                for age in 1...3 { try tx.insert(V1.Pet(name: "pet \(age)", age: age)) }
                try tx.delete(V1.Pet.self, id: 3)
            }
        }
        let store = try folder.store([Declared.Animal.self])
        #expect(try store.objects(Declared.Animal.self).results().map(\.name) == ["pet 1", "pet 2"])
        let next = try store.write { tx in try tx.insert(Declared.Animal(name: "new", age: 2)).id }
        #expect(next == 4, "the sequence moved with the model: id 3 is never handed out again")
        #expect(try store.objects(Declared.Animal.self).where(\.age == 2).results().map(\.id) == [2, 4])
        #expect(try store.verifyIntegrity().isConsistent)
        #expect(try store.read { snapshot in try snapshot.count(Declared.Animal.self) } == 3)
    }

    enum Removed {
        struct Pet: Model {
            var id: Int
            var name: String
            static let schema = Schema<Pet>(name: "Pet")
        }
    }

    enum ReAdded {
        /// `age` back as a string: the old integers must never be read as it.
        struct Pet: Model {
            var id: Int
            var name: String
            var age: String?
            static let schema = Schema<Pet>(name: "Pet")
        }

        /// `age` back with its old kind: the old values are read again.
        struct SameKind: Model {
            var id: Int
            var name: String
            var age: Int?
            static let schema = Schema<SameKind>(name: "Pet")
        }
    }

    @Test func aRemovedPropertyAddedBackWithAnotherKindNeverReadsTheOldValues() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Before.Pet.self])
            try store.write { tx in
                for id in 1...3 { try tx.insert(Before.Pet(id: id, name: "pet \(id)", age: id * 10)) }
            }
        }
        do {
            let store = try folder.store([Removed.Pet.self])
            #expect(try store.objects(Removed.Pet.self).count() == 3)
        }
        // Opened again unchanged (planned from the schema's bytes alone): the removed property stays on the books.
        do { _ = try folder.store([Removed.Pet.self]) }
        do {
            let store = try folder.store([ReAdded.Pet.self])
            #expect(try store.objects(ReAdded.Pet.self).results().map(\.age) == [nil, nil, nil])
            try store.write { tx in try tx.update(ReAdded.Pet(id: 2, name: "pet 2", age: "two")) }
        }
        // The integers were cleared when `age` came back as a string; the string is not an integer either.
        #expect(
            throws: StoreError.migrationRequired(changes: [
                .propertyTypeChanged(model: "Pet", property: "age", from: "string", to: "int")
            ])
        ) { try folder.store([ReAdded.SameKind.self]) }
    }

    @Test func aRemovedPropertyAddedBackWithItsKindReadsItsValuesAgain() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Before.Pet.self])
            try store.write { tx in try tx.insert(Before.Pet(id: 1, name: "Rex", age: 7)) }
        }
        // An older app extension that lacks the property opens the store in between.
        _ = try folder.store([Removed.Pet.self])
        let store = try folder.store([ReAdded.SameKind.self])
        #expect(try store.object(ReAdded.SameKind.self, id: 1)?.age == 7)
    }

    enum Nested {
        struct Address: Codable, Sendable {
            var street: String
            var zip: Int
        }

        struct Street: Codable, Sendable {
            var street: String
        }

        struct TextZip: Codable, Sendable, Equatable {
            var street: String
            var zip: String?
        }

        struct NumberZip: Codable, Sendable, Equatable {
            var street: String
            var zip: Int?
        }

        struct V1: Model {
            var id: Int
            var home: Address
            var past: [Address]
            var byYear: [String: Address]
            static let schema = Schema<V1>(name: "Home")
        }

        struct V2: Model {
            var id: Int
            var home: Street
            var past: [Street]
            var byYear: [String: Street]
            static let schema = Schema<V2>(name: "Home")
        }

        struct V3: Model {
            var id: Int
            var home: TextZip
            var past: [TextZip]
            var byYear: [String: TextZip]
            static let schema = Schema<V3>(name: "Home")
        }

        struct SameKind: Model {
            var id: Int
            var home: NumberZip
            var past: [NumberZip]
            var byYear: [String: NumberZip]
            static let schema = Schema<SameKind>(name: "Home")
        }
    }

    func fillNested(_ folder: TemporaryFolder) throws {
        let store = try folder.store([Nested.V1.self])
        try store.write { tx in
            for id in 1...3 {
                let address = Nested.Address(street: "street \(id)", zip: id * 1_000)
                try tx.insert(Nested.V1(id: id, home: address, past: [address, address], byYear: ["2020": address]))
            }
        }
        let removed = try folder.store([Nested.V2.self])
        #expect(try removed.objects(Nested.V2.self).count() == 3)
    }

    @Test func aNestedFieldAddedBackWithAnotherKindIsClearedInObjectsListsAndDictionaries() throws {
        let folder = TemporaryFolder()
        try fillNested(folder)
        let changes = try Store.pendingChanges(at: folder.url, configuration: .init(models: [Nested.V3.self])).changes
        #expect(
            changes
                == ["home.zip", "past.zip", "byYear.zip"].map {
                    .propertyAdded(model: "Home", property: $0, kind: "string", isOptional: true, hasDefault: false)
                })
        let store = try folder.store([Nested.V3.self])
        let homes = try store.objects(Nested.V3.self).results()
        #expect(homes.map(\.home) == (1...3).map { Nested.TextZip(street: "street \($0)", zip: nil) })
        #expect(homes.allSatisfy { $0.past.allSatisfy { $0.zip == nil } && $0.byYear["2020"]?.zip == nil })
        #expect(homes.allSatisfy { $0.past.count == 2 && $0.byYear["2020"]?.street == $0.home.street })
    }

    @Test func aNestedFieldAddedBackWithItsKindReadsItsValuesAgain() throws {
        let folder = TemporaryFolder()
        try fillNested(folder)
        let store = try folder.store([Nested.SameKind.self])
        let homes = try store.objects(Nested.SameKind.self).results()
        #expect(homes.map(\.home.zip) == [1_000, 2_000, 3_000])
        #expect(homes.map { $0.past.map(\.zip) } == [[1_000, 1_000], [2_000, 2_000], [3_000, 3_000]])
    }
}
