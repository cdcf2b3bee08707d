import Foundation
import LMDB
import Testing

@testable import Cellar

@Suite("Delete by query")
struct DeleteByQueryTests {
    struct Owner: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var pets: [Link<Pet>] = []
        static let schema = Schema<Owner>(
            autoIncrement: true, indexes: [.index(\.name)], links: [.link(\.pets, deleteRule: .cascade)])
    }

    struct Pet: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var age: Int
        static let schema = Schema<Pet>(autoIncrement: true, indexes: [.index(\.age)])
    }

    /// A vet who may not lose a patient: deleting a pet a vet treats is refused.
    struct Vet: Model {
        var id: Int64 = 0
        var patients: [Link<Pet>] = []
        static let schema = Schema<Vet>(autoIncrement: true, links: [.link(\.patients, targetDeleteRule: .deny)])
    }

    /// 40 pets aged 0 to 9, and four owners of ten pets each.
    static func kennel() throws -> Store {
        let store = try Store.inMemory(.init(models: [Owner.self, Pet.self, Vet.self]))
        try store.write { tx in
            for number in 0..<40 { try tx.insert(Pet(name: "Pet \(number)", age: number % 10)) }
            for owner in 0..<4 {
                let pets = (1...10).map { Link<Pet>(id: Int64(owner * 10 + $0)) }
                try tx.insert(Owner(name: "Owner \(owner)", pets: pets))
            }
        }
        return store
    }

    @Test func aQueryDeletesWhatItMatchesThroughTheOneDeletePath() throws {
        let store = try Self.kennel()
        let deleted = try store.write { tx in try tx.delete(tx.objects(Pet.self).where(\.age == 3)) }
        #expect(deleted == 4)
        #expect(try store.objects(Pet.self).where(\.age == 3).count() == 0)
        #expect(try store.count(Pet.self) == 36)
        // Every owner's list lost its pet aged 3 (the link's target rule), and the indexes agree with the records.
        #expect(try store.objects(Owner.self).results().allSatisfy { $0.pets.count == 9 })
        #expect(try store.verifyIntegrity().isConsistent)
        // A condition no index answers, and one on the ids.
        #expect(try store.write { tx in try tx.delete(tx.objects(Pet.self).where(.hasPrefix(\.name, "Pet 1"))) } == 10)
        #expect(try store.write { tx in try tx.delete(tx.objects(Pet.self).where(\.id > 35)) } == 5)
        #expect(try store.count(Pet.self) == 21)
        #expect(try store.verifyIntegrity().isConsistent)
    }

    @Test func deleteRulesFollowEveryMatchedRecord() throws {
        let store = try Self.kennel()
        // Owners cascade to their pets.
        let owners = try store.write { tx in
            try tx.delete(tx.objects(Owner.self).where(.in(\.name, ["Owner 0", "Owner 3"])))
        }
        #expect(owners == 2)
        #expect(try store.count(Pet.self) == 20)
        #expect(try store.objects(Pet.self).results().map(\.id) == Array(11...30))
        // A vet's patient may not be deleted: the whole delete is refused and nothing is written.
        try store.write { tx in try tx.insert(Vet(patients: [Link(id: 12)])) }
        #expect(throws: StoreError.self) {
            try store.write { tx in try tx.delete(tx.objects(Pet.self).where(\.age <= 2)) }
        }
        #expect(try store.count(Pet.self) == 20)
        #expect(try store.verifyIntegrity().isConsistent)
    }

    @Test func theQuerySeesTheTransactionAndItsShapeChoosesTheRecords() throws {
        let store = try Self.kennel()
        let deleted = try store.write { tx in
            try tx.insert(Pet(name: "Newcomer", age: 3))
            return try tx.delete(tx.objects(Pet.self).where(\.age == 3))
        }
        #expect(deleted == 5)
        // The two youngest by age, then id: a sort and a limit choose, as for results.
        let youngest = try store.objects(Pet.self).sorted(by: \.age).limit(2).results().map(\.id)
        #expect(try store.write { tx in try tx.delete(tx.objects(Pet.self).sorted(by: \.age).limit(2)) } == 2)
        #expect(try store.objects(Pet.self).where(.in(\.id, youngest)).count() == 0)
        #expect(try store.count(Pet.self) == 34)
    }

    @Test func frozenResultsDeleteTheRecordsThatStillExist() throws {
        let store = try Self.kennel()
        let young = try store.objects(Pet.self).where(\.age < 2).results()
        #expect(young.count == 8)
        try store.write { tx in _ = try tx.delete(Pet.self, id: young[0].id) }
        #expect(try store.write { tx in try tx.delete(young) } == 7)
        #expect(try store.objects(Pet.self).where(\.age < 2).count() == 0)
    }

    /// A record the query does not match is damaged behind Cellar's back: a query an index decides deletes without
    /// reading it; a query that must read every record finds the damage and deletes nothing.
    @Test func aQueryAnIndexDecidesReadsOnlyTheRecordsItDeletes() throws {
        let store = try Self.kennel()
        let info = try store.info(for: Pet.self)
        try store.core.environment.write { txn in
            try txn.put(info.records, key: KeyEncoding.SignedKey(40).bytes, value: [1, 0xFF, 0xFF])
        }
        #expect(try store.write { tx in try tx.delete(tx.objects(Pet.self).where(\.age == 5)) } == 4)
        #expect(try store.write { tx in try tx.delete(tx.objects(Pet.self).where(\.id <= 3)) } == 3)
        #expect(throws: StoreError.self) {
            try store.write { tx in try tx.delete(tx.objects(Pet.self).where(.hasPrefix(\.name, "Pet 2"))) }
        }
        #expect(try store.count(Pet.self) == 33)
    }
}
