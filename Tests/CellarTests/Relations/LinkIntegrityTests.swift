import Foundation
import LMDB
import Testing

@testable import Cellar

@Suite("Relationships: integrity")
struct LinkIntegrityTests {
    typealias Person = Seed.Person
    typealias Dog = Seed.Dog

    let folder = TemporaryFolder()

    @Test func aLinkToNothingIsRefusedAtCommitWhateverTheOrderOfInserts() throws {
        let store = try folder.store(Seed.models)
        #expect {
            try store.write { tx in try tx.insert(Person(name: "Alice", dogs: [Link(id: "ghost")])) }
        } throws: { error in
            error as? StoreError
                == .linkTargetMissing(link: "Person.dogs", source: "1", target: "Dog", targetID: "\"ghost\"")
        }
        #expect(try store.count(Person.self) == 0)
        // The target inserted later in the same transaction is fine, and so is a link removed again before the end.
        try store.write { tx in
            var alice = try tx.insert(Person(name: "Alice", dogs: [Link(id: "taro"), Link(id: "ghost")]))
            try tx.insert(Dog(id: "taro", name: "Taro", age: 3))
            alice.dogs.removeAll { $0.id == "ghost" }
            try tx.update(alice)
        }
        #expect(try store.objects(Person.self).first()?.dogs == [Link(id: "taro")])
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func aLinkWhoseIdIsTooLongForAKeyIsRefusedAndWritesNothing() throws {
        let store = try folder.store(Seed.models)
        let long = String(repeating: "x", count: 600)
        #expect {
            try store.write { tx in try tx.insert(Person(name: "Alice", dogs: [Link(id: long)])) }
        } throws: { error in
            guard case .keyTooLong(let model, let property, let length, _) = error as? StoreError else { return false }
            return model == "Dog" && property == "id" && length > 600
        }
        #expect(try store.count(Person.self) == 0)
    }

    @Test func aLinkDeclaredToDangleMayNameNothing() throws {
        typealias Draft = Albums.Draft
        let store = try folder.store(Albums.models)
        try store.write { tx in try tx.insert(Draft(id: 1, photos: [Link(id: 7)])) }
        let draft = try #require(try store.object(Draft.self, id: 1))
        #expect(try store.object(draft.photos[0]) == nil)
        #expect(try store.resolve(draft.photos).isEmpty)
        try store.write { tx in try tx.insert(Albums.Photo(id: 7)) }
        #expect(try store.resolve(draft.photos).map(\.id) == [7])
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func savingAnOldCopyDoesNotBringADeletedLinkBack() throws {
        let store = try folder.store(Seed.models)
        try store.write { tx in
            try tx.insert(Dog(id: "taro", name: "Taro", age: 3))
            try tx.insert(Dog(id: "hanako", name: "Hanako", age: 5))
            try tx.insert(Person(name: "Alice", dogs: [Link(id: "taro"), Link(id: "hanako")]))
        }
        var stale = try #require(try store.object(Person.self, id: 1))
        try store.write { tx in try tx.delete(Dog.self, id: "hanako") }
        // The copy still names Hanako: saving it would make a dangling link, so the write is refused and says why.
        stale.name = "Alice Smith"
        #expect {
            try store.write { tx in try tx.update(stale) }
        } throws: { error in
            guard case .linkTargetMissing(_, _, _, let id) = error as? StoreError else { return false }
            return id == "\"hanako\"" && error.localizedDescription.contains("read it again")
        }
        #expect(try store.object(Person.self, id: 1)?.name == "Alice")
        #expect(try store.object(Person.self, id: 1)?.dogs == [Link(id: "taro")])
        // Read again, changed, saved: fine.
        try store.write { tx in
            var fresh = try #require(try tx.object(Person.self, id: 1))
            fresh.name = "Alice Smith"
            try tx.update(fresh)
        }
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func aLinkToAModelNotInTheConfigurationIsRefusedAtOpen() throws {
        #expect {
            try folder.store([Person.self])
        } throws: { error in
            guard case .invalidSchema(let model, let reason) = error as? StoreError else { return false }
            return model == "Person" && reason.contains("its link dogs leads to Dog")
                && reason.contains("add Dog.self")
        }
    }

    @Test func aLinkDeclaredOnStoredRecordsIsIndexedAtOpenAndDroppedWhenUndeclared() throws {
        struct Unlinked: Model {
            var id: Int64 = 0
            var name: String
            var dogs: [Link<Dog>] = []
            static let schema = Schema<Unlinked>(name: "Person", autoIncrement: true, indexes: [.index(\.name)])
        }
        do {
            let store = try folder.store([Unlinked.self, Dog.self])
            try store.write { tx in
                try tx.insert(Dog(id: "taro", name: "Taro", age: 3))
                try tx.insert(Unlinked(name: "Alice", dogs: [Link(id: "taro")]))
            }
        }
        do {
            let store = try folder.store(Seed.models)
            let taro = try #require(try store.object(Dog.self, id: "taro"))
            #expect(try store.backlink(to: taro, via: \Person.dogs)?.name == "Alice")
            #expect(try store.verifyIntegrity().problems == [])
            try store.write { tx in try tx.update(Person(id: 1, name: "Alice")) }
        }
        do {
            // Undeclared, the link's database is dropped; deleting the dog no longer touches Alice.
            let store = try folder.store([Unlinked.self, Dog.self])
            try store.write { tx in try tx.update(Unlinked(id: 1, name: "Alice", dogs: [Link(id: "taro")])) }
            try store.write { tx in try tx.delete(Dog.self, id: "taro") }
            #expect(try store.object(Unlinked.self, id: 1)?.dogs == [Link(id: "taro")])
        }
        do {
            // Declared again, it is rebuilt from the records: the dangling link shows in the integrity check.
            let store = try folder.store(Seed.models)
            #expect(
                try store.verifyIntegrity().problems == [
                    "Person 1 links through dogs to Dog \"taro\", which does not exist"
                ])
        }
    }

    @Test func verifyIntegrityNamesEveryDisagreementInWords() throws {
        do {
            let store = try folder.store(Seed.models)
            try store.write { tx in
                try tx.insert(Dog(id: "taro", name: "Taro", age: 3))
                try tx.insert(Dog(id: "wanko", name: "Wanko", age: 1))
                try tx.insert(Person(name: "Alice", dogs: [Link(id: "taro")]))
            }
            #expect(try store.verifyIntegrity().problems == [])
        }
        // Damage the derived databases behind Cellar's back: a lost backlink, a stray one, a wrong index entry.
        let environment = try Environment(path: folder.url.path)
        try environment.write { txn in
            let backlinks = try #require(try txn.openDatabase(named: "b/Person.dogs"))
            let ages = try #require(try txn.openDatabase(named: "i/Dog.age"))
            let taro = try KeyEncoding.key("taro")
            let wanko = try KeyEncoding.key("wanko")
            let alice = try KeyEncoding.key(Int64(1))
            _ = try taro.withUnsafeBytes { key in
                try alice.withUnsafeBytes { try txn.delete(backlinks, key: key, value: $0) }
            }
            try txn.put(backlinks, key: wanko, value: alice)
            try txn.put(ages, key: try KeyEncoding.key(9), value: wanko)
        }
        environment.close()
        let store = try folder.store(Seed.models)
        let report = try store.verifyIntegrity()
        #expect(!report.isConsistent)
        #expect(
            report.problems == [
                "i/Dog.age holds the entry 9 → Dog \"wanko\", which no record gives",
                "b/Person.dogs lacks the entry \"taro\" → Person 1",
                "b/Person.dogs holds the entry \"wanko\" → Person 1, which no record gives",
            ])
    }

    /// The models of `cellar-test-helper adopt`, declared alike in both processes.
    struct Breeder: Model {
        var id: Int
        var puppies: [Link<Puppy>] = []
        static let schema = Schema<Breeder>(links: [.link(\.puppies, exclusive: true)])
    }

    struct Puppy: Model {
        var id: Int
    }

    @Test func twoProcessesAddingAndDeletingLinkedRecordsLeaveEveryLinkSound() throws {
        let store = try folder.store([Breeder.self, Puppy.self])
        try store.write { tx in try tx.insert(Breeder(id: 1)) }
        let helper = Process()
        helper.executableURL = try builtExecutable()
        let count = 300
        helper.arguments = ["adopt", folder.url.path, String(count)]
        let output = Pipe()
        helper.standardOutput = output
        try helper.run()
        // While the helper inserts puppies into breeder 1's list, this process deletes every third one it sees:
        // each delete rewrites the list the other process is appending to.
        var deleted: Set<Int> = []
        var helperDone = false
        repeat {
            // Whether the helper had ended before this pass read the puppies: if so, this pass sees them all.
            helperDone = !helper.isRunning
            for puppy in try store.objects(Puppy.self).results() where puppy.id % 3 == 0 && !deleted.contains(puppy.id)
            {
                try store.write { tx in _ = try tx.delete(Puppy.self, id: puppy.id) }
                deleted.insert(puppy.id)
            }
        } while !helperDone
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        helper.waitUntilExit()
        #expect(helper.terminationStatus == 0)
        #expect(String(decoding: printed, as: UTF8.self) == "ok\n")
        let kept = (1...count).filter { $0 % 3 != 0 }
        #expect(try store.objects(Puppy.self).results().map(\.id) == kept)
        #expect(try store.object(Breeder.self, id: 1)?.puppies.map(\.id) == kept)
        let puppy = try #require(try store.object(Puppy.self, id: kept[kept.count - 1]))
        #expect(try store.backlink(to: puppy, via: \Breeder.puppies)?.id == 1)
        #expect(try store.verifyIntegrity().problems == [])
    }
}
