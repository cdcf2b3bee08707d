import Foundation
import Testing

@testable import Cellar

/// The stored description of the schema is what every feature reads: a delete through a Store that does not name
/// the linking model still follows, or refuses, the links the file describes.
@Suite("Relationships: the stored description of links")
struct StoredDescriptionTests {
    typealias Person = Seed.Person
    typealias Dog = Seed.Dog

    func fill(_ folder: TemporaryFolder) throws {
        let store = try folder.store(Seed.models)
        try store.write { tx in
            try tx.insert(Dog(id: "taro", name: "Taro", age: 3))
            try tx.insert(Dog(id: "hana", name: "Hana", age: 5))
            var alice = Person(name: "Alice", dogs: [Link(id: "taro")])
            try tx.insert(&alice)
        }
    }

    @Test func anAppExtensionThatDoesNotNameTheLinkingModelCannotLeaveALinkToNothing() throws {
        let folder = TemporaryFolder()
        try fill(folder)
        let full = try folder.store(Seed.models)
        // The extension's Store names Dog alone; the file says Person.dogs links to dogs.
        let dogsOnly = try Store(at: folder.url, configuration: .init(models: [Dog.self]))
        #expect {
            try dogsOnly.write { tx in try tx.delete(Dog.self, id: "taro") }
        } throws: { error in
            guard case .deleteDenied("Dog", _, let reason) = error as? StoreError else { return false }
            return reason.contains("Person.dogs") && reason.contains("does not name Person")
        }
        #expect(try dogsOnly.count(Dog.self) == 2)
        // A dog nobody links to goes.
        try dogsOnly.write { tx in try tx.delete(Dog.self, id: "hana") }
        #expect(try dogsOnly.object(Dog.self, id: "hana") == nil)
        // Through a Store that names Person, the link's rule is followed.
        try full.write { tx in try tx.delete(Dog.self, id: "taro") }
        #expect(try full.objects(Person.self).first()?.dogs == [])
        #expect(try full.verifyIntegrity().problems == [])
    }

    @Test func theExtensionsStoreOpenedAloneRefusesToo() throws {
        let folder = TemporaryFolder()
        try fill(folder)
        let dogsOnly = try Store(at: folder.url, configuration: .init(models: [Dog.self]))
        #expect(throws: StoreError.self) { try dogsOnly.write { tx in try tx.delete(Dog.self, id: "taro") } }
        let report = try dogsOnly.verifyIntegrity()
        #expect(report.problems == [])
    }

    @Test func twoSwiftTypesForOneStoredModelThatHoldsLinksAreNotOpenAtOnce() throws {
        struct OtherPerson: Model {
            var id: Int64 = 0
            var name: String
            var dogs: [Link<Dog>] = []
            static let schema = Schema<OtherPerson>(
                name: "Person", autoIncrement: true, indexes: [.index(\.name)], links: [.link(\.dogs, exclusive: true)])
        }
        let folder = TemporaryFolder()
        try fill(folder)
        let first = try folder.store(Seed.models)
        #expect {
            _ = try Store(at: folder.url, configuration: .init(models: [OtherPerson.self, Dog.self]))
        } throws: { error in
            guard case .configurationConflict(_, let reason) = error as? StoreError else { return false }
            return reason.contains("another Swift type")
        }
        #expect(try first.count(Dog.self) == 2)
    }
}
