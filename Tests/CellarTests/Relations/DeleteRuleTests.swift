import Foundation
import Testing

@testable import Cellar

private func expectConsistent(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(try store.verifyIntegrity().problems == [], sourceLocation: sourceLocation)
}

@Suite("Relationships: delete rules")
struct DeleteRuleTests {
    typealias Owner = Rules.Owner
    typealias Pet = Rules.Pet
    typealias Toy = Rules.Toy
    typealias Kennel = Rules.Kennel
    typealias Vet = Rules.Vet
    typealias Collar = Rules.Collar
    typealias Node = Rules.Node

    let folder = TemporaryFolder()

    @Test func cascadeFollowsLinksRecursively() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            try tx.insert(Toy(id: 1))
            try tx.insert(Toy(id: 2))
            try tx.insert(Toy(id: 3))
            try tx.insert(Pet(id: 1, toys: [Link(id: 1), Link(id: 2)]))
            try tx.insert(Pet(id: 2, toys: [Link(id: 3)]))
            try tx.insert(Owner(id: 1, pets: [Link(id: 1)]))
        }
        try store.write { tx in try tx.delete(Owner.self, id: 1) }
        #expect(try store.objects(Pet.self).results().map(\.id) == [2])
        #expect(try store.objects(Toy.self).results().map(\.id) == [3])
        #expect(try store.objects(Pet.self).where(\.age == 1).count() == 1)
        try expectConsistent(store)
    }

    @Test func cascadeAroundACycleEnds() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            try tx.insert(Node(id: 1, next: Link(id: 2)))
            try tx.insert(Node(id: 2, next: Link(id: 3)))
            try tx.insert(Node(id: 3, next: Link(id: 1)))
            try tx.insert(Node(id: 4, next: Link(id: 4)))
        }
        #expect(try store.write { tx in try tx.delete(Node.self, id: 2) })
        #expect(try store.objects(Node.self).results().map(\.id) == [4])
        try expectConsistent(store)
    }

    @Test func nullifyLeavesTheTargetsAndDeletingATargetDropsItFromEveryList() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            try tx.insert(Kennel(id: 1))
            try tx.insert(Pet(id: 1, home: Link(id: 1)))
            try tx.insert(Pet(id: 2, home: Link(id: 1)))
            try tx.insert(Owner(id: 1, pets: [Link(id: 1), Link(id: 2), Link(id: 1)]))
            try tx.insert(Owner(id: 2, pets: [Link(id: 2)]))
        }
        // The kennel has no residents (its own list is empty), so `.deny` lets it go; the pets' `home` is nullified.
        try store.write { tx in try tx.delete(Kennel.self, id: 1) }
        #expect(try store.objects(Pet.self).results().map(\.home) == [nil, nil])
        // Deleting pet 1 drops both its entries from owner 1's list and leaves owner 2 alone.
        try store.write { tx in try tx.delete(Pet.self, id: 1) }
        #expect(try store.object(Owner.self, id: 1)?.pets == [Link(id: 2)])
        #expect(try store.object(Owner.self, id: 2)?.pets == [Link(id: 2)])
        try expectConsistent(store)
    }

    @Test func denyAsSourceRefusesAndWritesNothing() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            try tx.insert(Pet(id: 1))
            try tx.insert(Pet(id: 2))
            try tx.insert(Kennel(id: 1, residents: [Link(id: 1), Link(id: 2)]))
        }
        let before = store.version
        #expect {
            try store.write { tx in try tx.delete(Kennel.self, id: 1) }
        } throws: { error in
            guard case .deleteDenied(let model, let id, let reason) = error as? StoreError else { return false }
            return model == "Kennel" && id == "1" && reason.contains("its residents links to 2 Pet records")
                && reason.contains(".deny")
        }
        #expect(store.version == before)
        // Caught inside a transaction, the refusal leaves it as it was and the rest commits.
        try store.write { tx in
            #expect(throws: StoreError.self) { try tx.delete(Kennel.self, id: 1) }
            try tx.insert(Toy(id: 9))
        }
        #expect(try store.object(Kennel.self, id: 1)?.residents.count == 2)
        // Emptied first, it can go.
        try store.write { tx in
            try tx.update(Kennel(id: 1))
            try tx.delete(Kennel.self, id: 1)
        }
        #expect(try store.count(Kennel.self) == 0)
        try expectConsistent(store)
    }

    @Test func aTargetThatMayNotBeDeletedWhileLinkedSaysHowManyLinkToIt() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            try tx.insert(Pet(id: 1))
            try tx.insert(Vet(id: 1, patients: [Link(id: 1)]))
            try tx.insert(Vet(id: 2, patients: [Link(id: 1)]))
            try tx.insert(Owner(id: 1, pets: [Link(id: 1)]))
        }
        #expect {
            try store.write { tx in try tx.delete(Owner.self, id: 1) }
        } throws: { error in
            // The owner's cascade reaches the pet, which two vets still list.
            guard case .deleteDenied(let model, _, let reason) = error as? StoreError else { return false }
            return model == "Pet" && reason.contains("2 Vet records still link to it through Vet.patients")
        }
        #expect(try store.count(Owner.self) == 1)
        #expect(try store.count(Pet.self) == 1)
        // Deleting the vets with the pet in one call is allowed: no vet is left linking to it.
        try store.write { tx in
            try tx.delete(Vet.self, ids: [1, 2])
            try tx.delete(Owner.self, id: 1)
        }
        #expect(try store.count(Pet.self) == 0)
        try expectConsistent(store)
    }

    @Test func aTargetSideCascadeDeletesTheLinkingRecords() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            try tx.insert(Pet(id: 1))
            try tx.insert(Pet(id: 2))
            try tx.insert(Collar(id: 1, pet: Link(id: 1)))
            try tx.insert(Collar(id: 2, pet: Link(id: 1)))
            try tx.insert(Collar(id: 3, pet: Link(id: 2)))
        }
        try store.write { tx in try tx.delete(Pet.self, id: 1) }
        #expect(try store.objects(Collar.self).results().map(\.id) == [3])
        try expectConsistent(store)
    }

    @Test func deleteAllFollowsTheRules() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            try tx.insert(Toy(id: 1))
            try tx.insert(Pet(id: 1, toys: [Link(id: 1)]))
            try tx.insert(Pet(id: 2))
            try tx.insert(Owner(id: 1, pets: [Link(id: 1), Link(id: 2)]))
            try tx.insert(Collar(id: 1, pet: Link(id: 2)))
        }
        #expect(try store.write { tx in try tx.deleteAll(Pet.self) } == 2)
        #expect(try store.count(Toy.self) == 0)
        #expect(try store.count(Collar.self) == 0)
        #expect(try store.object(Owner.self, id: 1)?.pets == [])
        try expectConsistent(store)
    }

    @Test func anOwnedTargetGoesWithItsLastLink() throws {
        typealias Album = Albums.Album
        typealias Photo = Albums.Photo
        let store = try folder.store(Albums.models)
        try store.write { tx in
            for id in 1...3 { try tx.insert(Photo(id: id)) }
            try tx.insert(Album(id: 1, photos: [Link(id: 1), Link(id: 2)]))
            try tx.insert(Album(id: 2, photos: [Link(id: 2), Link(id: 3)]))
        }
        // Replacing album 1's list drops photo 1 from its last album: it is deleted. Photo 2 is still in album 2.
        try store.write { tx in try tx.update(Album(id: 1, photos: [Link(id: 3)])) }
        #expect(try store.objects(Photo.self).results().map(\.id) == [2, 3])
        // Deleting album 2 (rule .nullify) leaves photo 2 with no album; photo 3 is still in album 1.
        try store.write { tx in try tx.delete(Album.self, id: 2) }
        #expect(try store.objects(Photo.self).results().map(\.id) == [3])
        try expectConsistent(store)
    }

    @Test func anOwnedTargetMovedToAnotherOwnerInOneTransactionIsKeptInEitherOrder() throws {
        typealias Album = Albums.Album
        typealias Photo = Albums.Photo
        let store = try folder.store(Albums.models)
        try store.write { tx in
            for id in 1...3 { try tx.insert(Photo(id: id)) }
            try tx.insert(Album(id: 1, photos: [Link(id: 1), Link(id: 2)]))
            try tx.insert(Album(id: 2, photos: [Link(id: 3)]))
        }
        // Removed from album 1 first, then added to album 2: the photo is not deleted half-way.
        try store.write { tx in
            try tx.update(Album(id: 1, photos: [Link(id: 2)]))
            try tx.update(Album(id: 2, photos: [Link(id: 3), Link(id: 1)]))
        }
        #expect(try store.objects(Photo.self).results().map(\.id) == [1, 2, 3])
        // Added to album 1 first, then removed from album 2.
        try store.write { tx in
            try tx.update(Album(id: 1, photos: [Link(id: 2), Link(id: 3)]))
            try tx.update(Album(id: 2, photos: [Link(id: 1)]))
        }
        #expect(try store.objects(Photo.self).results().map(\.id) == [1, 2, 3])
        // Removed from its last album and not added anywhere: deleted at the commit, by its delete rules.
        try store.write { tx in
            try tx.update(Album(id: 2, photos: []))
            #expect(try tx.objects(Photo.self).count() == 3)
        }
        #expect(try store.objects(Photo.self).results().map(\.id) == [2, 3])
        try expectConsistent(store)
    }

    @Test func orphansAreFoundFromTheBacklinkIndex() throws {
        let store = try folder.store(Rules.models)
        try store.write { tx in
            for id in 1...4 { try tx.insert(Pet(id: id, age: id)) }
            try tx.insert(Owner(id: 1, pets: [Link(id: 1), Link(id: 3)]))
        }
        let strays = store.objects(Pet.self).notLinked(from: \Owner.pets)
        #expect(try strays.results().map(\.id) == [2, 4])
        #expect(try strays.where(\.age > 2).results().map(\.id) == [4])
        #expect(try strays.count() == 2)
        #expect(try strays.explain() == "scan r/Pet, then skip the records in backlink index b/Owner.pets")
        // A list replaced by an update leaves its old targets as orphans (realm-core #746): they are found.
        try store.write { tx in try tx.update(Owner(id: 1, pets: [Link(id: 3)])) }
        #expect(try strays.results().map(\.id) == [1, 2, 4])
        try expectConsistent(store)
    }
}
