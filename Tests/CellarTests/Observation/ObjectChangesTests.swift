import Foundation
import Testing

@testable import Cellar

@Suite("Observation: changes of one object", .hangGuard)
struct ObjectChangesTests {
    struct Dog: Model, Equatable {
        var id: String
        var name: String
        var age: Int
        var nickname: String?
    }

    let folder = TemporaryFolder()

    @Test func theValueThenChangedPropertiesThenDeleted() async throws {
        let store = try folder.store([Dog.self])
        try await store.write { tx in
            try tx.insert(Dog(id: "taro", name: "Taro", age: 3))
            try tx.insert(Dog(id: "hachi", name: "Hachi", age: 5))
        }
        var changes = store.changes(of: Dog.self, id: "taro").makeAsyncIterator()
        guard case .initial(let first) = try await changes.next() else {
            Issue.record("no initial value")
            return
        }
        #expect(first == Dog(id: "taro", name: "Taro", age: 3))
        // Another dog changes, Taro is written with his own bytes: nothing to deliver. Then he changes.
        try await store.write { tx in
            try tx.update(Dog(id: "hachi", name: "Hachi", age: 6))
            try tx.upsert(Dog(id: "taro", name: "Taro", age: 3))
        }
        try await store.write { tx in try tx.update(Dog(id: "taro", name: "Taro", age: 4, nickname: "T")) }
        guard case .changed(let changed, let properties) = try await changes.next() else {
            Issue.record("no change")
            return
        }
        #expect(changed.age == 4 && changed.nickname == "T")
        #expect(properties == ["age", "nickname"])
        try await store.write { tx in try tx.update(Dog(id: "taro", name: "Taro", age: 4)) }
        guard case .changed(_, let removed) = try await changes.next() else {
            Issue.record("no change")
            return
        }
        #expect(removed == ["nickname"])
        try await store.write { tx in _ = try tx.delete(Dog.self, id: "taro") }
        guard case .deleted = try await changes.next() else {
            Issue.record("not deleted")
            return
        }
        #expect(try await changes.next() == nil)
    }

    @Test func keyPathsDeliverOnlyChangesOfTheListedProperties() async throws {
        let store = try folder.store([Dog.self])
        try await store.write { tx in try tx.insert(Dog(id: "taro", name: "Taro", age: 3)) }
        var changes = store.changes(of: Dog.self, id: "taro", keyPaths: [\.name]).makeAsyncIterator()
        _ = try await changes.next()
        try await store.write { tx in try tx.update(Dog(id: "taro", name: "Taro", age: 4)) }
        try await store.write { tx in try tx.update(Dog(id: "taro", name: "Taro", age: 5, nickname: "T")) }
        try await store.write { tx in try tx.update(Dog(id: "taro", name: "Taro Yamada", age: 5, nickname: "T")) }
        guard case .changed(let dog, let properties) = try await changes.next() else {
            Issue.record("no change")
            return
        }
        // The names say what changed since the previous delivery, the skipped commits included.
        #expect(dog.name == "Taro Yamada" && properties == ["name", "age", "nickname"])
        try await store.write { tx in _ = try tx.delete(Dog.self, id: "taro") }
        guard case .deleted = try await changes.next() else {
            Issue.record("a deletion is delivered whatever the key paths")
            return
        }
    }

    @Test func anObjectThatDoesNotExistIsDeletedAtOnce() async throws {
        let store = try folder.store([Dog.self])
        var changes = store.changes(of: Dog.self, id: "nobody").makeAsyncIterator()
        guard case .deleted = try await changes.next() else {
            Issue.record("expected .deleted")
            return
        }
        #expect(try await changes.next() == nil)
    }
}
