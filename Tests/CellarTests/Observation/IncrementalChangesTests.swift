import Foundation
import PropertyBased
import Testing

@_spi(Benchmarks) @testable import Cellar

@Suite("Observation: changes placed record by record", .hangGuard)
struct IncrementalChangesTests {
    struct Card: Model, Equatable {
        var id: Int
        var rank: Int
        var tag: String
        static let schema = Schema<Card>(indexes: [.index(\.rank)])
    }

    struct Other: Model {
        var id: Int
    }

    /// The query shapes the property test observes: each plan and order the reducer places changes in, and shapes
    /// for which the query runs again.
    enum Shape: String, CaseIterable, CustomTestStringConvertible {
        case rankIndexAscending, rankIndexDescending, tagThenRankDescendingInMemory, tagInMemoryFromTheRankIndex
        case unsortedFromTheRankIndex
        case unsortedScan, filteredClosureSortedByTag, limited, distinctTags

        var testDescription: String { rawValue }

        func query(_ store: Store) -> Query<Card> {
            let cards = store.objects(Card.self)
            return switch self {
            case .rankIndexAscending: cards.where(\.rank < 15).sorted(by: \.rank)
            case .rankIndexDescending: cards.sorted(by: \.rank, ascending: false)
            case .tagThenRankDescendingInMemory:
                cards.where(\.rank >= 2).sorted(by: \.tag).sorted(by: \.rank, ascending: false)
            case .tagInMemoryFromTheRankIndex: cards.where(\.rank >= 1).sorted(by: \.tag, ascending: false)
            case .unsortedFromTheRankIndex: cards.where(\.rank >= 3)
            case .unsortedScan: cards
            case .filteredClosureSortedByTag: cards.filter { $0.id % 3 != 0 }.sorted(by: \.tag)
            case .limited: cards.sorted(by: \.rank).limit(5)
            case .distinctTags: cards.sorted(by: \.rank).distinct(by: \.tag)
            }
        }

        /// Whether the reducer places changes without running the query.
        var placesChanges: Bool { self != .limited && self != .distinctTags }
    }

    /// One random write to cards 1...12 with ranks 0...19 and one of four tags.
    struct Write: CustomStringConvertible {
        let kind: Int
        let id: Int
        let rank: Int
        var description: String { "(\(kind), \(id), \(rank))" }
    }

    @Test(arguments: Shape.allCases)
    func applyingEachChangeToTheDeliveredResultsGivesTheQuerysResults(_ shape: Shape) async throws {
        let writes = zip(Gen.int(in: 0...4), Gen.int(in: 1...12), Gen.int(in: 0...19))
            .map { Write(kind: $0, id: $1, rank: $2) }.array(of: 1...4).array(of: 1...25)
        await checkProperty(count: 40, input: writes) { batches in
            let folder = TemporaryFolder()
            let store = try folder.store([Card.self, Other.self])
            let query = shape.query(store)
            var changes = store.changes(of: query).makeAsyncIterator()
            var shown = Array(try #require(try await changes.next()).results)
            for batch in batches {
                try await store.write { tx in
                    for write in batch {
                        switch write.kind {
                        case 0: _ = try tx.delete(Card.self, id: write.id)
                        case 1: try tx.upsert(Card(id: write.id, rank: write.rank, tag: "t\(write.rank % 4)"))
                        case 2: try tx.upsert(Card(id: write.id, rank: write.rank, tag: "same"))
                        case 3: try tx.upsert(Card(id: write.id, rank: write.id % 4, tag: "t\(write.rank % 4)"))
                        default: try tx.upsert(Other(id: write.id * 1_000 + write.rank))
                        }
                    }
                }
                let expected = Array(try await query.results())
                guard shown != expected else { continue }
                let change = try #require(try await changes.next())
                #expect(Array(change.results) == expected)
                try Self.check(change, from: shown)
                shown = expected
            }
            if shape.placesChanges { #expect(changes.queryRuns == 1, "every change was placed record by record") }
        }
    }

    /// Applies `change` as UIKit's batch updates do and checks each index and id against the two results.
    static func check(_ change: CollectionChange<Card>, from old: [Card]) throws {
        let new = Array(change.results)
        // Realm's order: reload `modifications` (old indexes), delete `deletions` (old), insert `insertions` (new).
        #expect(change.modifications.count == change.modificationsInNewResults.count)
        var applied = old
        for (before, after) in zip(change.modifications, change.modificationsInNewResults) {
            #expect(old[before].id == new[after].id, "a modification names one record in both results")
            applied[before] = new[after]
        }
        #expect(Set(change.modifications).isDisjoint(with: change.deletions))
        for index in change.deletions.sorted().reversed() { applied.remove(at: index) }
        for index in change.insertions.sorted() { applied.insert(new[index], at: index) }
        #expect(applied == new)
        let (oldIDs, newIDs) = (Set(old.map(\.id)), Set(new.map(\.id)))
        #expect(Set(change.insertedIDs) == newIDs.subtracting(oldIDs))
        #expect(Set(change.deletedIDs) == oldIDs.subtracting(newIDs))
        let before = Dictionary(uniqueKeysWithValues: old.map { ($0.id, $0) })
        let changedInBoth = Set(new.filter { card in before[card.id].map { $0 != card } ?? false }.map(\.id))
        #expect(changedInBoth.isSubset(of: Set(change.modifiedIDs)))
        #expect(Set(change.modifiedIDs).isSubset(of: oldIDs.intersection(newIDs)))
    }

    @Test func oneChangedRowOfManySortedRecordsDecodesOneRecord() async throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Card.self, Other.self])
        try await store.write { tx in
            for id in 1...5_000 { try tx.insert(Card(id: id, rank: id % 100, tag: "t\(id % 7)")) }
        }
        let query = store.objects(Card.self).sorted(by: \.tag).sorted(by: \.rank)
        var changes = store.changes(of: query).makeAsyncIterator()
        let initial = try #require(try await changes.next())
        #expect(changes.recordsDecoded == 5_000)
        let old = Array(initial.results)
        try await store.write { tx in try tx.update(Card(id: 42, rank: 0, tag: "a")) }
        let change = try #require(try await changes.next())
        #expect(changes.recordsDecoded == 1 && changes.queryRuns == 1)
        #expect(change.results.first == Card(id: 42, rank: 0, tag: "a"), "tag \"a\" sorts before every \"t…\"")
        #expect(Array(change.results) == Array(try await query.results()))
        try Self.check(change, from: old)
        try await store.write { tx in try tx.update(Card(id: 42, rank: 1, tag: "a")) }
        let inPlace = try #require(try await changes.next())
        #expect(inPlace.modifications == [0] && inPlace.insertions.isEmpty && inPlace.deletions.isEmpty)
        #expect(changes.recordsDecoded == 1 && changes.queryRuns == 1)
    }

    @Test func keyPathsLeaveOutChangesToOtherProperties() async throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Card.self, Other.self])
        try await store.write { tx in for id in 1...3 { try tx.insert(Card(id: id, rank: id, tag: "t")) } }
        let query = store.objects(Card.self).sorted(by: \.rank)
        var changes = store.changes(of: query, keyPaths: [\.tag]).makeAsyncIterator()
        _ = try await changes.next()
        // A rank that leaves the card in its place is not a change of `tag`: nothing is delivered for it.
        try await store.write { tx in try tx.update(Card(id: 3, rank: 2_000, tag: "t")) }
        try await store.write { tx in try tx.update(Card(id: 1, rank: 1, tag: "renamed")) }
        let change = try #require(try await changes.next())
        #expect(change.modifiedIDs == [1] && change.modifications == [0])
        #expect(change.insertions.isEmpty && change.deletions.isEmpty)
        #expect(change.results.map(\.rank) == [1, 2, 2_000], "the delivered results have every committed value")
        // A move is delivered whichever properties were listed: the rows are elsewhere.
        try await store.write { tx in try tx.update(Card(id: 3, rank: 0, tag: "t")) }
        let moved = try #require(try await changes.next())
        #expect(moved.deletions == [2] && moved.insertions == [0] && moved.modifiedIDs.isEmpty)
    }

    @Test func anOptionalPropertyLeftNilIsNotAChange() {
        struct Note: Model {
            var id: Int
            var text: String?
            var count: Int
        }
        let filter = PropertyFilter<Note>(paths: [\.text])
        #expect(!filter.differ(Note(id: 1, text: nil, count: 1), Note(id: 1, text: nil, count: 2)))
        #expect(filter.differ(Note(id: 1, text: nil, count: 1), Note(id: 1, text: "a", count: 1)))
        #expect(!filter.differ(Note(id: 1, text: "a", count: 1), Note(id: 1, text: "a", count: 2)))
        #expect(PropertyFilter<Note>.all.differ(Note(id: 1, text: nil, count: 1), Note(id: 1, text: nil, count: 1)))
    }
}
