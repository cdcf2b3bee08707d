import Foundation
import Testing

@testable import Cellar

@Suite("Relationships: sorted and limited queries through a link")
struct LinkQueryOrderTests {
    struct Member: Model, Equatable {
        var id: String
        var name: String
        var age: Int
        var clubs: [Link<Club>] = []
        static let schema = Schema<Member>(indexes: [.index(\.age)], links: [.link(\.clubs)])
    }

    struct Club: Model, Equatable {
        var id: Int
        var rank: Int
    }

    /// 300 members with few distinct ages (many ties) and names, each in a random set of four clubs.
    func seeded(_ folder: TemporaryFolder) throws -> (Store, [Member]) {
        let store = try folder.store([Member.self, Club.self])
        var generator = SeededGenerator(seed: 7)
        var members: [Member] = []
        try store.write { tx in
            for id in 1...4 { try tx.insert(Club(id: id, rank: id % 2)) }
            for number in 0..<300 {
                let clubs = (1...4).filter { _ in Bool.random(using: &generator) }.map { Link<Club>(id: $0) }
                let member = Member(
                    id: "member-\(String(number, radix: 7))", name: "n\(Int.random(in: 0..<9, using: &generator))",
                    age: Int.random(in: 0..<6, using: &generator), clubs: clubs)
                try tx.insert(member)
                members.append(member)
            }
        }
        return (store, members)
    }

    /// The members of `clubs` in the order of `age` then `name` (as asked), ties broken by id in the direction of
    /// the last sort, as the query documents: computed in memory from the inserted values.
    func expected(_ members: [Member], in clubs: Set<Int>, ageAscending: Bool, nameAscending: Bool?) -> [Member] {
        func utf8Precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
        let lastAscending = nameAscending ?? ageAscending
        return members.filter { member in member.clubs.contains { clubs.contains($0.id) } }.sorted { a, b in
            if a.age != b.age { return (a.age < b.age) == ageAscending }
            if let nameAscending, a.name != b.name { return utf8Precedes(a.name, b.name) == nameAscending }
            return utf8Precedes(a.id, b.id) == lastAscending
        }
    }

    @Test func backlinkingManyTargetsGivesEachRecordOnceInKeyOrderWhateverItsIDsLength() throws {
        // Ids short enough to be sorted as packed words and ids too long for them, sharing prefixes: the records come
        // back in the order of their keys, each once however many of the targets it links to.
        let folder = TemporaryFolder()
        let store = try folder.store([Member.self, Club.self])
        var generator = SeededGenerator(seed: 11)
        var members: [Member] = []
        try store.write { tx in
            for id in 1...4 { try tx.insert(Club(id: id, rank: id % 2)) }
            for number in 0..<200 {
                let stem = ["m", "member-", "a-member-whose-id-is-longer-than-twenty-four-bytes-"][number % 3]
                let clubs = (1...4).filter { _ in Bool.random(using: &generator) }.map { Link<Club>(id: $0) }
                let member = Member(id: stem + String(number, radix: 5), name: "n", age: 0, clubs: clubs)
                try tx.insert(member)
                members.append(member)
            }
        }
        let found = try store.objects(Member.self).backlinking(store.objects(Club.self), via: \.clubs).results()
        let expected = members.filter { !$0.clubs.isEmpty }.map(\.id)
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(expected.count > 150)
        #expect(found.map(\.id) == expected)
    }

    @Test func aLinkConditionWithASortAndALimitKeepsTheOrderComputedInMemory() throws {
        let folder = TemporaryFolder()
        let (store, members) = try seeded(folder)
        let all = store.objects(Member.self)
        let bigClubs = store.objects(Club.self).where(\.rank == 1)
        let filters: [(clubs: Set<Int>, query: Query<Member>)] = [
            ([2], all.linking(to: Club(id: 2, rank: 0), via: \.clubs)),
            ([1, 4], all.backlinking([Club(id: 1, rank: 1), Club(id: 4, rank: 0)], via: \.clubs)),
            ([1, 3], all.backlinking(bigClubs, via: \.clubs)),
        ]
        for (clubs, linked) in filters {
            for ageAscending in [true, false] {
                for nameAscending in [nil, true, false] {
                    var query = linked.sorted(by: \.age, ascending: ageAscending)
                    if let nameAscending { query = query.sorted(by: \.name, ascending: nameAscending) }
                    let answer = expected(members, in: clubs, ageAscending: ageAscending, nameAscending: nameAscending)
                    let what = "clubs \(clubs.sorted()), age \(ageAscending), name \(String(describing: nameAscending))"
                    #expect(answer.count > 100, "\(what)")
                    #expect(try query.first() == answer.first, "\(what)")
                    #expect(try query.limit(9).results().map(\.id) == answer.prefix(9).map(\.id), "\(what)")
                    #expect(
                        try query.offset(20).limit(15).results().map(\.id) == answer.dropFirst(20).prefix(15).map(\.id),
                        "\(what)")
                    #expect(try query.results().map(\.id) == answer.map(\.id), "\(what)")
                    // A condition checked on each record keeps the same order.
                    let older = answer.filter { $0.age >= 2 }
                    #expect(try query.where(\.age >= 2).first() == older.first, "\(what)")
                    #expect(try query.where(\.age >= 2).limit(5).results().map(\.id) == older.prefix(5).map(\.id))
                }
            }
        }
    }
}
