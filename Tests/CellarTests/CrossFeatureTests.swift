import Foundation
import Testing

@testable import Cellar

/// Features tried together on purpose, so that the next seam is found by a test: a `@Record` model with a unique
/// index and an owning, cascading link to a plain `Codable` model whose properties capture must not decode from
/// placeholders, with an index of single values and one of list elements, through opening, writing, reopening, a
/// migration, observation, deletes by rule, `cellar dump` and `cellar verify`, and `verifyIntegrity()` after each.
@Suite("Features together")
struct CrossFeatureTests {
    let folder = TemporaryFolder()

    static func pet(_ id: String, age: Int) -> CrossPet {
        CrossPet(
            id: id, age: age, shape: age % 2 == 0 ? .circle(radius: Double(age)) : .label(text: id, size: age),
            zone: TimeZone(identifier: "Asia/Tokyo") ?? .gmt, flavours: [.mint: age > 2], huge: Int128(age) << 90,
            tags: ["t\(age % 3)", "all"], note: nil)
    }

    static let models: [any Model.Type] = [CrossOwner.self, CrossPet.self]

    func expectSound(_ store: Store, _ comment: Comment) throws {
        #expect(try store.verifyIntegrity().problems == [], comment)
    }

    @Test func openWriteReopenMigrateObserveDeleteDumpAndVerify() async throws {
        do {
            let store = try folder.store(Self.models)
            try await store.write { tx in
                for (index, name) in ["Ann", "Bo"].enumerated() {
                    let pets = (0..<3).map { Self.pet("\(name)-\($0)", age: index * 3 + $0) }
                    for pet in pets { try tx.insert(pet) }
                    var owner = CrossOwner(name: name, pets: pets.map(Link.init))
                    try tx.insert(&owner)
                }
            }
            try expectSound(store, "after the first write")
        }
        // Reopened, queried by both indexes and by the link's backlinks.
        do {
            let store = try folder.store(Self.models)
            #expect(try await store.objects(CrossPet.self).where(\.age >= 3).count() == 3)
            #expect(try await store.objects(CrossPet.self).where(.contains(\.tags, "t0")).count() == 2)
            let ann = try #require(try await store.objects(CrossOwner.self).where(\.name == "Ann").first())
            #expect(
                try await store.objects(CrossPet.self).results().filter { $0.id.hasPrefix("Ann") }.count
                    == ann.pets.count)
            try expectSound(store, "after reopening")
        }
        // A migration that touches both models.
        let store = try await Store(
            at: folder.url,
            configuration: .init(
                models: Self.models, schemaVersion: 2,
                migrations: [
                    .to(2) { migration in
                        try migration.enumerateRecords(ofType: "CrossPet") { pet in try pet.set("note", to: "v2") }
                        try migration.enumerateRecords(ofType: "CrossOwner") { owner in
                            try owner.set("name", to: (try owner.value("name", as: String.self) ?? "") + "!")
                        }
                    }
                ]))
        #expect(try await store.objects(CrossPet.self).results().allSatisfy { $0.note == "v2" })
        #expect(try await store.objects(CrossOwner.self).where(\.name == "Ann!").count() == 1)
        try expectSound(store, "after the migration")

        // Observation of the pets while an owner is deleted: its pets go by the cascade.
        var changes = store.changes(of: store.objects(CrossPet.self).sorted(by: \.age)).makeAsyncIterator()
        let initial = try #require(try await changes.next())
        #expect(initial.results.count == 6)
        try await store.write { tx in
            let bo = try #require(try tx.objects(CrossOwner.self).where(\.name == "Bo!").first())
            try tx.delete(CrossOwner.self, id: bo.id)
        }
        let change = try #require(try await changes.next())
        #expect(change.results.map(\.id) == ["Ann-0", "Ann-1", "Ann-2"])
        #expect(change.deletions == [3, 4, 5])
        try expectSound(store, "after the cascade")

        // An owned pet moved to a new owner in one transaction stays; the tool reads and checks it all.
        try await store.write { tx in
            var ann = try #require(try tx.objects(CrossOwner.self).where(\.name == "Ann!").first())
            let moved = ann.pets.removeLast()
            try tx.update(ann)
            var cy = CrossOwner(name: "Cy", pets: [moved])
            try tx.insert(&cy)
        }
        #expect(try await store.count(CrossPet.self) == 3)
        try expectSound(store, "after the move")
        let dump = try CellarToolTests.cellar("dump", folder.url.path, "CrossPet", "--json")
        #expect(dump.status == 0 && dump.output.contains("Asia/Tokyo"), "\(dump.errors)")
        let verify = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(verify.status == 0, "\(verify.output)")
    }
}
