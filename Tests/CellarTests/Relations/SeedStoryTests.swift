import Foundation
import Testing

@testable import Cellar

@Suite("Relationships: the seed's stories")
struct SeedStoryTests {
    typealias Person = Seed.Person
    typealias Dog = Seed.Dog

    /// Alice owns Taro and Hanako, Bob owns Wanko.
    func seeded(_ folder: TemporaryFolder) throws -> Store {
        let store = try folder.store(Seed.models)
        try store.write { tx in
            let taro = try tx.insert(Dog(id: "taro", name: "Taro", age: 3))
            let hanako = try tx.insert(Dog(id: "hanako", name: "Hanako", age: 5))
            let wanko = try tx.insert(Dog(id: "wanko", name: "Wanko", age: 1))
            try tx.insert(Person(name: "Alice", dogs: [Link(taro), Link(hanako)]))
            try tx.insert(Person(name: "Bob", dogs: [Link(wanko)]))
        }
        return store
    }

    func expectConsistent(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let report = try store.verifyIntegrity()
        #expect(report.problems == [], sourceLocation: sourceLocation)
    }

    @Test func aDogsOwnerIsOnePersonWithNoFirstPuzzle() throws {
        let folder = TemporaryFolder()
        let store = try seeded(folder)
        let taro = try #require(try store.object(Dog.self, id: "taro"))
        #expect(try store.backlink(to: taro, via: \Person.dogs)?.name == "Alice")
        #expect(try store.backlinks(to: taro, via: \Person.dogs).map(\.name) == ["Alice"])
        let alice = try #require(try store.objects(Person.self).where(\.name == "Alice").first())
        #expect(try store.resolve(alice.dogs).map(\.name) == ["Taro", "Hanako"])
        #expect(try store.object(alice.dogs[1])?.name == "Hanako")
        try expectConsistent(store)
    }

    @Test func bobAdoptsWataruThroughHisListAndBecomesItsOwner() throws {
        let folder = TemporaryFolder()
        let store = try seeded(folder)
        try store.write { tx in
            var bob = try #require(try tx.objects(Person.self).where(\.name == "Bob").first())
            // The list is saved before the dog exists: links are checked when the transaction commits.
            bob.dogs.append(Link(id: "wataru"))
            try tx.update(bob)
            try tx.insert(Dog(id: "wataru", name: "Wataru", age: 2))
        }
        let wataru = try #require(try store.object(Dog.self, id: "wataru"))
        #expect(try store.backlink(to: wataru, via: \Person.dogs)?.name == "Bob")
        let bob = try #require(try store.objects(Person.self).where(\.name == "Bob").first())
        #expect(try store.resolve(bob.dogs).map(\.name) == ["Wanko", "Wataru"])
        try expectConsistent(store)
    }

    @Test func ownersOfDogsAgedThreeOrMoreComeFromTheIndexes() throws {
        let folder = TemporaryFolder()
        let store = try seeded(folder)
        try store.write { tx in
            let rex = try tx.insert(Dog(id: "rex", name: "Rex", age: 4))
            try tx.insert(Person(name: "Carol", dogs: [Link(rex)]))
            try tx.insert(Person(name: "Dave"))
        }
        let oldDogs = store.objects(Dog.self).where(\.age >= 3)
        let owners = store.objects(Person.self).backlinking(oldDogs, via: \.dogs)
        // Alice owns two old dogs and comes once; Bob's dog is young; Dave has none.
        #expect(try owners.results().map(\.name) == ["Alice", "Carol"])
        #expect(try owners.count() == 2)
        #expect(try owners.sorted(by: \.name, ascending: false).first()?.name == "Carol")
        #expect(try owners.where(\.name == "Alice").results().map(\.name) == ["Alice"])
        let plan = try owners.explain()
        #expect(plan.contains("read backlink index b/Person.dogs"), "\(plan)")
        #expect(plan.contains("use index i/Dog.age for age >= 3"), "\(plan)")
        // The same from a frozen result of dogs.
        let frozen = try oldDogs.results()
        #expect(
            try store.objects(Person.self).backlinking(frozen, via: \.dogs).results().map(\.name) == ["Alice", "Carol"])
        try expectConsistent(store)
    }

    @Test func deletingHanakoWhileAFrozenResultHoldsHerCrashesNothing() throws {
        let folder = TemporaryFolder()
        let store = try seeded(folder)
        let dogs = try store.objects(Dog.self).sorted(by: \.name).results()
        #expect(dogs.map(\.name) == ["Hanako", "Taro", "Wanko"])
        try store.write { tx in try tx.delete(Dog.self, id: "hanako") }
        // The held result is unchanged, and reading through it is safe.
        #expect(dogs.count == 3)
        #expect(dogs[0].name == "Hanako")
        #expect(try store.object(Link<Dog>(dogs[0])) == nil)
        let alice = try #require(try store.objects(Person.self).where(\.name == "Alice").first())
        #expect(alice.dogs == [Link(id: "taro")])
        #expect(try dogs.latest().map(\.name) == ["Taro", "Wanko"])
        try expectConsistent(store)
    }

    @Test func backlinksAreAQueryThatFiltersSortsLimitsAndCounts() throws {
        struct Member: Model {
            var id: Int
            var name: String
            var age: Int
            var clubs: [Link<Club>] = []
            static let schema = Schema<Member>(links: [.link(\.clubs)])
        }
        struct Club: Model { var id: Int }
        let folder = TemporaryFolder()
        let store = try folder.store([Member.self, Club.self])
        try store.write { tx in
            try tx.insert(Club(id: 1))
            try tx.insert(Club(id: 2))
            for number in 1...20 {
                try tx.insert(
                    Member(id: number, name: "m\(number)", age: number, clubs: [Link(id: number % 2 == 0 ? 1 : 2)]))
            }
        }
        let chess = Club(id: 1)
        let members = store.objects(Member.self).linking(to: chess, via: \.clubs)
        #expect(try members.count() == 10)
        #expect(try members.where(\.age > 10).count() == 5)
        #expect(try members.sorted(by: \.age, ascending: false).limit(2).results().map(\.id) == [20, 18])
        #expect(try members.first()?.id == 2)
        #expect(try store.backlinks(to: chess, via: \Member.clubs).count == 10)
        #expect(try members.explain() == "read backlink index b/Member.clubs for Club 1")
        // Inside a transaction the same calls see its own writes.
        try store.write { tx in
            try tx.insert(Member(id: 21, name: "m21", age: 21, clubs: [Link(id: 1)]))
            #expect(try tx.objects(Member.self).linking(to: chess, via: \.clubs).count() == 11)
            #expect(try tx.backlinks(to: chess, via: \Member.clubs).last?.id == 21)
        }
        try expectConsistent(store)
    }

    @Test func aListMayHoldTheSameTargetTwice() throws {
        let folder = TemporaryFolder()
        let store = try seeded(folder)
        try store.write { tx in
            var alice = try #require(try tx.objects(Person.self).where(\.name == "Alice").first())
            alice.dogs.append(Link(id: "taro"))
            try tx.update(alice)
        }
        let alice = try #require(try store.objects(Person.self).where(\.name == "Alice").first())
        #expect(try store.resolve(alice.dogs).map(\.name) == ["Taro", "Hanako", "Taro"])
        let taro = try #require(try store.object(Dog.self, id: "taro"))
        #expect(try store.backlinks(to: taro, via: \Person.dogs).map(\.name) == ["Alice"])
        // Deleting Taro drops both entries.
        try store.write { tx in try tx.delete(Dog.self, id: "taro") }
        #expect(try store.object(Person.self, id: alice.id)?.dogs == [Link(id: "hanako")])
        try expectConsistent(store)
    }

    @Test func resolvingManyRecordsLinksReadsOneVersion() throws {
        let folder = TemporaryFolder()
        let store = try seeded(folder)
        let screen = try store.read { snapshot in
            let people = try snapshot.objects(Person.self).results()
            // Another thread deletes Taro while the list screen is being filled: the screen still shows the
            // version its people came from.
            let deleted = Thread.runAndWait { try store.write { tx in try tx.delete(Dog.self, id: "taro") } }
            #expect(deleted == true)
            return try people.map { person in (person.name, try snapshot.resolve(person.dogs).map(\.name)) }
        }
        #expect(screen.map(\.0) == ["Alice", "Bob"])
        #expect(screen.map(\.1) == [["Taro", "Hanako"], ["Wanko"]])
        #expect(try store.resolve(try #require(try store.object(Person.self, id: 1)).dogs).map(\.name) == ["Hanako"])
        try expectConsistent(store)
    }

    @Test func anExclusiveLinkRefusesASecondHolderAndWritesNothing() throws {
        let folder = TemporaryFolder()
        let store = try seeded(folder)
        #expect {
            try store.write { tx in try tx.insert(Person(name: "Eve", dogs: [Link(id: "taro")])) }
        } throws: { error in
            guard case .exclusiveLinkViolated(let link, let target, _) = error as? StoreError else { return false }
            return link == "Person.dogs" && target == "Dog \"taro\""
        }
        #expect(try store.count(Person.self) == 2)
        // Moving a dog inside one transaction is fine: out of one list, then into another.
        try store.write { tx in
            var alice = try #require(try tx.objects(Person.self).where(\.name == "Alice").first())
            alice.dogs.removeAll { $0.id == "taro" }
            try tx.update(alice)
            try tx.insert(Person(name: "Eve", dogs: [Link(id: "taro")]))
        }
        let taro = try #require(try store.object(Dog.self, id: "taro"))
        #expect(try store.backlink(to: taro, via: \Person.dogs)?.name == "Eve")
        try expectConsistent(store)
    }

    @Test func theToOneInverseNeedsAnExclusiveLink() throws {
        struct Reader: Model {
            var id: Int
            var books: [Link<Book>] = []
            static let schema = Schema<Reader>(links: [.link(\.books)])
        }
        struct Book: Model { var id: Int }
        let folder = TemporaryFolder()
        let store = try folder.store([Reader.self, Book.self])
        #expect(throws: StoreError.linkNotExclusive(link: "Reader.books")) {
            try store.backlink(to: Book(id: 1), via: \Reader.books)
        }
    }

    @Test func backlinksSurviveReopening() throws {
        let folder = TemporaryFolder()
        do { _ = try seeded(folder) }
        let store = try folder.store(Seed.models)
        let hanako = try #require(try store.object(Dog.self, id: "hanako"))
        #expect(try store.backlink(to: hanako, via: \Person.dogs)?.name == "Alice")
        try expectConsistent(store)
    }
}
