import Foundation
import LMDB
import Testing

@testable import Cellar

/// The version and reason of the `migrationFailed` error `open` throws; `nil`, with an issue, for anything else.
func migrationFailure(_ open: () throws(StoreError) -> Store) -> (version: Int, reason: String)? {
    do {
        _ = try open()
        Issue.record("the migration succeeded")
    } catch {
        if case .migrationFailed(let version, let reason) = error { return (version, reason) }
        Issue.record("\(error)")
    }
    return nil
}

@Suite("Migrations")
struct MigrationTests {
    let folder = TemporaryFolder()

    func fillVersion1(count: Int = 10) throws {
        let store = try Store(at: folder.url, configuration: petConfiguration(1))
        try store.write { tx in
            for index in 0..<count { try tx.insert(V1.Pet(name: "pet \(index)", age: index)) }
        }
    }

    @Test func theChangedModelIsAnErrorInRealmsWordsBeforeAnyRecordIsRead() throws {
        try fillVersion1()
        struct Pet: Model {
            var id: Int64 = 0
            var name: String
            var age: String
            var color: String
            static let schema = Schema<Pet>(name: "Pet", autoIncrement: true)
        }
        do throws(StoreError) {
            _ = try Store(at: folder.url, configuration: .init(models: [Pet.self]))
            Issue.record("the store opened")
        } catch {
            guard case .migrationRequired(let changes) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(
                changes == [
                    .propertyTypeChanged(model: "Pet", property: "age", from: "int", to: "string"),
                    .propertyAdded(
                        model: "Pet", property: "color", kind: "string", isOptional: false, hasDefault: false),
                ])
            #expect(changes.map(\.handling) == [.needsMigration, .needsMigration])
            #expect(
                error.description.hasPrefix(
                    """
                    Migration is required due to the following errors:
                    - Property 'Pet.age' has been changed from 'int' to 'string': stored values are 'int': convert \
                    'age' in a migration step.
                    - Property 'Pet.color' has been added (required, type 'string'): stored records have no value \
                    for it and it has no default: set 'color' in a migration step, or declare a default with \
                    Schema's property(_:default:).
                    Raise Configuration.schemaVersion
                    """))
        }
        // Nothing was written: the old model opens the file as before.
        let store = try Store(at: folder.url, configuration: petConfiguration(1))
        #expect(try store.count(V1.Pet.self) == 10)
    }

    @Test func versionOneToTwoToThreeAcrossReopenings() throws {
        try fillVersion1()
        do {
            let store = try Store(at: folder.url, configuration: petConfiguration(2))
            let pets = try store.objects(V2.Pet.self).results()
            #expect(pets.map(\.color) == (0..<10).map { $0 < 5 ? "brown" : "grey" })
            #expect(pets.map(\.name) == (0..<10).map { "pet \($0)" })
        }
        do {
            let store = try Store(at: folder.url, configuration: petConfiguration(2))
            #expect(try store.object(V2.Pet.self, id: 1)?.color == "brown")
            try store.write { tx in try tx.insert(V2.Pet(name: "late", age: 9, color: "white")) }
        }
        let pending = try Store.pendingChanges(at: folder.url, configuration: petConfiguration(3))
        #expect(
            pending.changes == [
                .propertyRenamed(model: "Pet", from: "name", to: "fullName"), .indexAdded(model: "Pet", index: "color"),
            ])
        #expect(pending.storedSchemaVersion == 2 && pending.migrationSteps.isEmpty && pending.rewritesRecords)
        let store = try Store(at: folder.url, configuration: petConfiguration(3))
        let grey = store.objects(V3.Pet.self).where(\.color == "grey")
        #expect(try grey.explain().contains("i/Pet.color"))
        #expect(try grey.results().map(\.fullName) == (5..<10).map { "pet \($0)" })
        // Sequences survive: the next id follows the last one ever given.
        #expect(try store.write { tx in try tx.insert(V3.Pet(fullName: "new", age: 1, color: "red")).id } == 12)
        #expect(try store.verifyIntegrity().isConsistent)
    }

    @Test func aStepThatThrowsLeavesTheStoreExactlyAsItWas() throws {
        try fillVersion1()
        _ = try Store(at: folder.url, configuration: petConfiguration(2))
        struct Refused: Error, CustomStringConvertible {
            var description: String { "pet 3 has no owner" }
        }
        var configuration = petConfiguration(3)
        configuration.schemaVersion = 4
        configuration.migrations.append(
            .to(4) { migration in
                try migration.enumerateRecords(ofType: "Pet") { pet in
                    try pet.set("fullName", to: "changed")
                    if try pet.value("age", as: Int.self) == 3 { throw Refused() }
                }
            })
        let data = try Data(contentsOf: folder.url.appendingPathComponent("data.mdb"))
        #expect(throws: StoreError.migrationFailed(version: 4, reason: "pet 3 has no owner")) {
            try Store(at: folder.url, configuration: configuration)
        }
        #expect(try Data(contentsOf: folder.url.appendingPathComponent("data.mdb")) == data)
        let store = try Store(at: folder.url, configuration: petConfiguration(2))
        #expect(try store.objects(V2.Pet.self).results().map(\.name) == (0..<10).map { "pet \($0)" })
        #expect(try Store.pendingChanges(at: folder.url, configuration: petConfiguration(2)).storedSchemaVersion == 2)
    }

    @Test func aMigrationThatLeavesRecordsUnreadableOrNotUniqueFails() throws {
        try fillVersion1()
        // The step forgets some records: they cannot be read as version 2.
        var forgetful = petConfiguration(2)
        forgetful.migrations = [
            .to(2) { migration in
                try migration.enumerateRecords(ofType: "Pet") { pet in
                    if try pet.value("age", as: Int.self)! < 5 { try pet.set("color", to: "brown") }
                }
            }
        ]
        let forgotten = migrationFailure { () throws(StoreError) in try Store(at: folder.url, configuration: forgetful)
        }
        #expect(forgotten?.version == 2)
        #expect(forgotten?.reason.contains("Pet with id 6") == true && forgotten?.reason.contains("'color'") == true)
        // In a migration's words: one sentence, advice for the step, no advice to migrate from inside a migration.
        let failure = #expect(throws: StoreError.self) { try Store(at: folder.url, configuration: forgetful) }
        let message = failure?.description ?? ""
        #expect(message.contains("after its steps ran, the stored Pet with id 6 could not be decoded at 'color'"))
        #expect(message.contains("set 'color' in a step for every Pet record that lacks it, or declare a default"))
        #expect(!message.contains("raise schemaVersion") && !message.contains(".."), "\(message)")
        // The step gives two pets one name the new model makes unique.
        struct Pet: Model {
            var id: Int64 = 0
            var name: String
            var age: Int
            static let schema = Schema<Pet>(name: "Pet", autoIncrement: true, indexes: [.unique(\.name)])
        }
        let clash = Configuration(
            models: [Pet.self], schemaVersion: 2,
            migrations: [
                .to(2) { migration in
                    try migration.enumerateRecords(ofType: "Pet") { pet in
                        if try pet.value("age", as: Int.self)! < 2 { try pet.set("name", to: "twin") }
                    }
                }
            ])
        let clashed = migrationFailure { () throws(StoreError) in try Store(at: folder.url, configuration: clash) }
        #expect(clashed?.version == 2 && clashed?.reason.contains("twin") == true)
        #expect(try Store(at: folder.url, configuration: petConfiguration(1)).count(V1.Pet.self) == 10)
    }

    @Test func stepsCreateDeleteAndRekeyRecordsOfAnyStoredModel() throws {
        try fillVersion1()
        struct Person: Model, Equatable {
            var id: String
            var pets: [Link<V2.Pet>]
            static let schema = Schema<Person>(links: [.link(\.pets)])
        }
        let configuration = Configuration(
            models: [V2.Pet.self, Person.self], schemaVersion: 2,
            migrations: [
                V2.migration,
                .to(2) { migration in
                    #expect(migration.oldSchemaVersion == 1 && migration.schemaVersion == 2)
                    #expect(try migration.count(ofType: "Pet") == 10)
                    // Split: every pet's owner becomes a Person; odd ages leave.
                    try migration.enumerateRecords(ofType: "Pet") { pet in
                        if try pet.value("age", as: Int.self)! % 2 == 1 { pet.delete() }
                    }
                    try migration.insert(Person(id: "ann", pets: [Link(id: 1), Link(id: 3)]))
                    try migration.create(ofType: "Person") { person in
                        try person.set("id", to: "bob")
                        try person.set("pets", to: [Link<V2.Pet>(id: 5)])
                    }
                    try migration.enumerateRecords(ofType: "Person") { person in
                        if try person.value("id", as: String.self) == "bob" { try person.set("id", to: "robert") }
                    }
                    #expect(throws: StoreError.duplicatePrimaryKey(model: "Person", id: "\"ann\"")) {
                        try migration.insert(Person(id: "ann", pets: []))
                    }
                },
            ])
        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.objects(V2.Pet.self).results().map(\.age) == [0, 2, 4, 6, 8])
        #expect(try store.objects(Person.self).results().map(\.id) == ["ann", "robert"])
        let pet = try #require(try store.object(V2.Pet.self, id: 5))
        #expect(try store.backlinks(to: pet, via: \Person.pets).map(\.id) == ["robert"])
        #expect(try store.verifyIntegrity().isConsistent)
    }

    @Test func idsAMigrationWritesMoveTheSequencePastThem() throws {
        try fillVersion1()
        var configuration = petConfiguration(2)
        configuration.migrations.append(
            .to(2) { migration in try migration.insert(V2.Pet(id: 100, name: "imported", age: 1, color: "red")) })
        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.write { tx in try tx.insert(V2.Pet(name: "next", age: 2, color: "red")).id } == 101)
    }

    @Test func deleteDataRemovesAModelNoLongerRegisteredButKeepsItsSequence() throws {
        struct Toy: Model {
            var id: Int64 = 0
            var name: String
            static let schema = Schema<Toy>(autoIncrement: true, indexes: [.index(\.name)])
        }
        do {
            let store = try Store(at: folder.url, configuration: .init(models: [V1.Pet.self, Toy.self]))
            try store.write { tx in
                for index in 0..<3 { try tx.insert(Toy(name: "toy \(index)")) }
                try tx.insert(V1.Pet(name: "Rex", age: 3))
            }
        }
        var configuration = petConfiguration(2)
        configuration.migrations.append(.to(2) { migration in try migration.deleteData(forType: "Toy") })
        _ = try Store(at: folder.url, configuration: configuration)
        let names = try Environment(path: folder.url.path).read { txn in
            ["r/Toy", "i/Toy.name"].map { (try? txn.openDatabase(named: $0)) ?? nil }
        }
        #expect(names.allSatisfy { $0 == nil })
        // The model comes back empty, and its ids go on from where they were.
        var withToys = petConfiguration(2)
        withToys.models.append(Toy.self)
        let store = try Store(at: folder.url, configuration: withToys)
        #expect(try store.count(Toy.self) == 0)
        #expect(try store.write { tx in try tx.insert(Toy(name: "new")).id } == 4)
    }

    @Test func anAppExtensionThatMayNotMigrateGetsTheErrorAndChangesNothing() throws {
        try fillVersion1()
        var configuration = petConfiguration(2)
        configuration.allowsMigration = false
        #expect(
            throws: StoreError.migrationRequired(changes: [
                .propertyAdded(model: "Pet", property: "color", kind: "string", isOptional: false, hasDefault: false)
            ])
        ) {
            try Store(at: folder.url, configuration: configuration)
        }
        #expect(try Store.pendingChanges(at: folder.url, configuration: configuration).storedSchemaVersion == 1)
        // Once the app has migrated, the extension opens the store.
        _ = try Store(at: folder.url, configuration: petConfiguration(2))
        #expect(try Store(at: folder.url, configuration: configuration).count(V2.Pet.self) == 10)
    }

    @Test func aLowerVersionThanTheFileIsRefused() throws {
        try fillVersion1()
        _ = try Store(at: folder.url, configuration: petConfiguration(2))
        #expect(throws: StoreError.schemaVersionTooLow(stored: 2, requested: 1)) {
            try Store(at: folder.url, configuration: petConfiguration(1))
        }
    }

    @Test func aStoreWrittenByAnotherProcessMigratesHere() throws {
        #expect(try helperOutput(["pets-v1", folder.url.path, "50"]) == "ok\n")
        let store = try Store(at: folder.url, configuration: petConfiguration(2))
        #expect(try store.objects(V2.Pet.self).where(\.color == "grey").count() == 25)
    }

    @Test func aProcessWhoseStoreAnotherProcessMigratedGetsAClearError() throws {
        try fillVersion1(count: 20)
        let store = try Store(at: folder.url, configuration: petConfiguration(1))
        #expect(try store.count(V1.Pet.self) == 20)
        #expect(try helperOutput(["migrate-v2", folder.url.path]) == "ok 20\n")
        #expect(throws: StoreError.schemaChangedElsewhere(path: folder.url.path)) {
            try store.objects(V1.Pet.self).results()
        }
        #expect(throws: StoreError.schemaChangedElsewhere(path: folder.url.path)) {
            try store.write { tx in try tx.insert(V1.Pet(name: "stale", age: 1)) }
        }
    }
}
