import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// `backlinking(_:via:)` visits its targets in key order with one cursor, stepping over the backlink database's keys
/// while a target is near and seeking to it otherwise. Whatever the targets (none, a few far apart, nearly all, some
/// linked by nobody, some by many), it finds exactly the records that link to one of them, each once, and counts them
/// the same way.
@Suite("Relationships: backlinks of any set of targets")
struct BacklinkWalkTests {
    struct Keeper: Model, Equatable {
        var id: Int
        var crates: [Link<Crate>]
        static let schema = Schema<Keeper>(links: [.link(\.crates)])
    }

    struct Crate: Model, Equatable {
        var id: Int
        var shelf: Int
        static let schema = Schema<Crate>(indexes: [.index(\.shelf)])
    }

    @Test func theLinkingRecordsOfAnyTargetsAreFoundEachOnce() async {
        // Crates with ids spread over gaps; keepers linking to a few crates each, a popular crate to many.
        let crates = zip(Gen.int(in: 1...6), Gen.int(in: 0...9)).array(of: 0...150)
        let keepers = Gen.int(in: 0...400).array(of: 0...6).array(of: 0...80)
        await checkProperty(count: 60, input: crates, keepers) { crates, keepers in
            let folder = TemporaryFolder()
            let store = try folder.store([Keeper.self, Crate.self])
            var ids: [Int] = []
            var stored: [Crate] = []
            try store.write { tx in
                var id = 0
                for (gap, shelf) in crates {
                    id += gap
                    let crate = Crate(id: id, shelf: shelf)
                    try tx.insert(crate)
                    stored.append(crate)
                    ids.append(id)
                }
                for (number, picks) in keepers.enumerated() {
                    // Picks past the crates name crate 1 when there is one: a crate linked by many.
                    let links = ids.isEmpty ? [] : picks.map { ids[$0 < ids.count ? $0 : 0] }
                    try tx.insert(Keeper(id: number, crates: links.map { Link<Crate>(id: $0) }))
                }
            }
            let keepersByID = try store.objects(Keeper.self).results().map { $0 }
            for shelves in [0...9, 0...0, 3...5, 9...9, 0...8] {
                let targets = Set(stored.filter { shelves.contains($0.shelf) }.map(\.id))
                let expected = keepersByID.filter { $0.crates.contains { targets.contains($0.id) } }.map(\.id)
                let query = store.objects(Crate.self)
                    .where(\.shelf >= shelves.lowerBound && \.shelf <= shelves.upperBound)
                let found = store.objects(Keeper.self).backlinking(query, via: \.crates)
                #expect(try found.results().map(\.id) == expected, "shelves \(shelves)")
                #expect(try found.count() == expected.count, "shelves \(shelves)")
                let given = stored.filter { targets.contains($0.id) }.reversed()
                #expect(
                    try store.objects(Keeper.self).backlinking(Array(given), via: \.crates).results().map(\.id)
                        == expected)
            }
        }
    }
}
