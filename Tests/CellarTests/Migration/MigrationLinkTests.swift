import Foundation
import Testing

@testable import Cellar

/// A migration edits and deletes records without their types: what it leaves must keep every link sound, and its
/// re-keys apply as a whole.
@Suite("Migrations keep links sound")
struct MigrationLinkTests {
    typealias Person = Seed.Person
    typealias Dog = Seed.Dog
    let folder = TemporaryFolder()

    func fill() throws {
        let store = try folder.store(Seed.models)
        try store.write { tx in
            for (id, age) in [("taro", 3), ("hana", 5), ("kuro", 1)] { try tx.insert(Dog(id: id, name: id, age: age)) }
            var alice = Person(name: "Alice", dogs: [Link(id: "taro"), Link(id: "kuro")])
            try tx.insert(&alice)
        }
    }

    func open(_ step: @escaping @Sendable (Migration) throws -> Void) throws(StoreError) -> Store {
        try Store(
            at: folder.url,
            configuration: .init(models: Seed.models, schemaVersion: 2, migrations: [.to(2, step)]))
    }

    @Test func deletingALinkedRecordInAStepFailsTheMigrationNamingTheLink() throws {
        try fill()
        let failure = migrationFailure { () throws(StoreError) in
            try open { migration in
                try migration.enumerateRecords(ofType: "Dog") { dog in
                    if try dog.value("age", as: Int.self) == 1 { dog.delete() }
                }
            }
        }
        #expect(failure?.version == 2)
        #expect(failure?.reason.contains("Person.dogs") == true && failure?.reason.contains("\"kuro\"") == true)
        let store = try folder.store(Seed.models)
        #expect(try store.count(Dog.self) == 3)
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func deleteDataOfALinkedModelFailsTooUnlessTheStepDropsTheLinks() throws {
        try fill()
        let failure = migrationFailure { () throws(StoreError) in
            try open { migration in try migration.deleteData(forType: "Dog") }
        }
        #expect(failure?.reason.contains("Person.dogs") == true)
        // Dropping the links in the same step makes it sound.
        let store = try open { migration in
            try migration.deleteData(forType: "Dog")
            try migration.enumerateRecords(ofType: "Person") { person in try person.set("dogs", to: [String]()) }
        }
        #expect(try store.count(Dog.self) == 0)
        #expect(try store.objects(Person.self).first()?.dogs == [])
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func renumberingEveryRecordAppliesAsAWhole() throws {
        let store = try folder.store([Dog.self])
        try store.write { tx in
            for id in 1...5 { try tx.insert(Dog(id: "\(id)", name: "dog \(id)", age: id)) }
        }
        struct Numbered: Model {
            var id: Int
            var name: String
            static let schema = Schema<Numbered>(name: "Tag")
        }
        let tags = TemporaryFolder()
        do {
            let first = try tags.store([Numbered.self])
            try first.write { tx in for id in 1...5 { try tx.insert(Numbered(id: id, name: "tag \(id)")) } }
        }
        let shifted = try Store(
            at: tags.url,
            configuration: .init(
                models: [Numbered.self], schemaVersion: 2,
                migrations: [
                    .to(2) { migration in
                        try migration.enumerateRecords(ofType: "Tag") { tag in
                            try tag.set("id", to: try tag.value("id", as: Int.self)! + 1)
                        }
                    }
                ]))
        #expect(try shifted.objects(Numbered.self).results().map(\.id) == [2, 3, 4, 5, 6])
        #expect(try shifted.object(Numbered.self, id: 2)?.name == "tag 1")
    }

    @Test func twoRecordsReKeyedOntoOneIdFailInWordsAMigrationUses() throws {
        struct Numbered: Model {
            var id: Int
            var name: String
            static let schema = Schema<Numbered>(name: "Tag")
        }
        do {
            let first = try folder.store([Numbered.self])
            try first.write { tx in for id in 1...3 { try tx.insert(Numbered(id: id, name: "tag \(id)")) } }
        }
        let failure = migrationFailure { () throws(StoreError) in
            try Store(
                at: folder.url,
                configuration: .init(
                    models: [Numbered.self], schemaVersion: 2,
                    migrations: [
                        .to(2) { migration in
                            try migration.enumerateRecords(ofType: "Tag") { tag in try tag.set("id", to: 7) }
                        }
                    ]))
        }
        let message = StoreError.migrationFailed(version: 2, reason: failure?.reason ?? "").description
        #expect(message.contains("two Tag records with id 7"), "\(message)")
        #expect(!message.contains("upsert") && !message.contains(".."), "\(message)")
    }
}
