import Foundation
import Testing

@_spi(Benchmarks) @testable import Cellar

@Suite("Observation: changes of a query's results", .hangGuard)
struct ResultsChangesTests {
    struct Item: Model, Equatable {
        var id: Int
        var rank: Int
        var tag: String
    }

    struct Other: Model {
        var id: Int
    }

    let folder = TemporaryFolder()

    func store() throws -> Store { try folder.store([Item.self, Other.self]) }

    @Test func indexesHaveRealmsMeaning() async throws {
        let store = try store()
        try await store.write { tx in
            for id in 1...5 { try tx.insert(Item(id: id, rank: id * 10, tag: "t\(id)")) }
        }
        var changes = store.changes(of: store.objects(Item.self).sorted(by: \.rank)).makeAsyncIterator()
        let initial = try #require(try await changes.next())
        #expect(initial.isInitial && initial.results.map(\.id) == [1, 2, 3, 4, 5])

        // Delete the second, change the fourth in place, move the first to the end, insert one in the middle.
        try await store.write { tx in
            try tx.delete(Item.self, id: 2)
            try tx.update(Item(id: 4, rank: 40, tag: "changed"))
            try tx.update(Item(id: 1, rank: 60, tag: "t1"))
            try tx.insert(Item(id: 6, rank: 35, tag: "t6"))
        }
        let change = try #require(try await changes.next())
        #expect(change.results.map(\.id) == [3, 6, 4, 5, 1])
        #expect(change.deletions == [0, 1])  // item 1 (moved) and item 2 (deleted), in the old results
        #expect(change.insertions == [1, 4])  // item 6 (new) and item 1 (moved), in the new results
        #expect(change.modifications == [3] && change.modificationsInNewResults == [2])  // item 4
        #expect(change.deletedIDs == [2] && change.insertedIDs == [6])
        #expect(Set(change.modifiedIDs) == [1, 4])
    }

    @Test func anUpsertOfTheSameValueIsNoChange() async throws {
        let store = try store()
        try await store.write { tx in try tx.insert(Item(id: 1, rank: 1, tag: "a")) }
        var changes = store.changes(of: store.objects(Item.self)).makeAsyncIterator()
        _ = try await changes.next()
        let before = store.version
        try await store.write { tx in try tx.upsert(Item(id: 1, rank: 1, tag: "a")) }
        try await store.write { tx in try tx.update(Item(id: 1, rank: 1, tag: "a")) }
        #expect(store.version == before, "nothing was written, so no version was committed")
        try await store.write { tx in try tx.upsert(Item(id: 1, rank: 1, tag: "b")) }
        let change = try #require(try await changes.next())
        #expect(change.modifications == [0] && change.modifiedIDs == [1])
    }

    @Test func aCommitToAnotherModelDoesNotRunTheQuery() async throws {
        let store = try store()
        try await store.write { tx in try tx.insert(Item(id: 1, rank: 1, tag: "a")) }
        var changes = store.changes(of: store.objects(Item.self)).makeAsyncIterator()
        _ = try await changes.next()
        for id in 1...20 { try await store.write { tx in try tx.insert(Other(id: id)) } }
        try await store.write { tx in try tx.insert(Item(id: 2, rank: 2, tag: "b")) }
        let change = try #require(try await changes.next())
        #expect(change.insertedIDs == [2])
        #expect(changes.queryRuns == 1, "the commits to Other read no Item, the one to Item read just that record")
        #expect(changes.recordsDecoded == 1)
    }

    struct Pup: Model {
        var id: Int
        var age: Int
        static let schema = Schema<Pup>(indexes: [.index(\.age)])
    }

    struct Owner: Model {
        var id: Int
        var pups: [Link<Pup>]
        static let schema = Schema<Owner>(links: [.link(\.pups)])
    }

    @Test func aQueryThatFollowsBacklinksWakesForTheTargetsModelToo() async throws {
        let store = try folder.store([Pup.self, Owner.self, Other.self])
        try await store.write { tx in
            try tx.insert(Pup(id: 1, age: 1))
            try tx.insert(Pup(id: 2, age: 5))
            try tx.insert(Owner(id: 10, pups: [Link(id: 1)]))
            try tx.insert(Owner(id: 20, pups: [Link(id: 2)]))
        }
        let owners = store.objects(Owner.self).backlinking(store.objects(Pup.self).where(\.age >= 3), via: \.pups)
        var changes = store.changes(of: owners).makeAsyncIterator()
        #expect(try await changes.next()?.results.map(\.id) == [20])
        try await store.write { tx in try tx.insert(Other(id: 1)) }
        // Only a pup changed, and its owner now has a pup aged 3 or more.
        try await store.write { tx in try tx.update(Pup(id: 1, age: 3)) }
        let change = try #require(try await changes.next())
        #expect(change.results.map(\.id) == [10, 20] && change.insertedIDs == [10])
        #expect(change.modifications.isEmpty, "no owner was written")
        #expect(changes.queryRuns == 2, "the commit to Other did not run the query")
    }

    @Test func aSlowConsumerGetsTheNewestResultsOnce() async throws {
        let store = try store()
        var changes = store.changes(of: store.objects(Item.self).where(\.rank >= 0)).makeAsyncIterator()
        _ = try await changes.next()
        for id in 1...200 {
            try await store.write { tx in
                try tx.insert(Item(id: id, rank: id, tag: "x"))
                if id % 2 == 0 { try tx.delete(Item.self, id: id - 1) }
            }
        }
        let change = try #require(try await changes.next())
        #expect(change.results.map(\.id) == Array(stride(from: 2, through: 200, by: 2)))
        #expect(change.insertions.count == 100 && change.deletions.isEmpty && change.modifications.isEmpty)
        #expect(changes.queryRuns == 2)
    }

    @Test func theLogKeepsAThousandVersionsAndAnObserverFurtherBehindReadsEverythingAgain() async throws {
        let store = try store()
        try await store.write { tx in for id in 1...3 { try tx.insert(Item(id: id, rank: id, tag: "a")) } }
        var changes = store.changes(of: store.objects(Item.self)).makeAsyncIterator()
        _ = try await changes.next()
        for round in 1...1_100 {
            try await store.write { tx in try tx.update(Item(id: 3, rank: 3, tag: "round \(round)")) }
        }
        let logged = try await store.read { snapshot in
            try snapshot.lmdb.statistics(store.core.changeLog).entries
        }
        #expect(logged >= 1_000 && logged <= 1_000 + Int(ChangeLog.pruneInterval))
        // The log no longer reaches back to the delivered version: every record still there counts as modified.
        let change = try #require(try await changes.next())
        #expect(change.results.map(\.tag) == ["a", "a", "round 1100"])
        #expect(change.modifications == [0, 1, 2] && change.insertions.isEmpty && change.deletions.isEmpty)
    }

    @Test func cancellingTheTaskEndsTheSequence() async throws {
        let store = try store()
        let started = AsyncStream<Void>.makeStream()
        let task = Task {
            var deliveries = 0
            for try await _ in store.changes(of: store.objects(Item.self)) {
                deliveries += 1
                started.continuation.yield()
            }
            return deliveries
        }
        for await _ in started.stream { break }
        task.cancel()
        #expect(try await task.value == 1)
    }

    @Test func commitsOfAnotherProcessAreDeliveredWithTheirChangeSet() async throws {
        let store = try folder.store([Ticket.self])
        try await store.write { tx in try tx.insert(Ticket(writer: "test")) }
        var changes = store.changes(of: store.objects(Ticket.self)).makeAsyncIterator()
        _ = try await changes.next()
        // The helper inserts five tickets, each in its own transaction, from its own process.
        #expect(try helperOutput([folder.url.path, "5"]) == "2\n3\n4\n5\n6\n")
        var inserted: [Int64] = []
        while inserted.count < 5 {
            let change = try #require(try await changes.next())
            #expect(change.deletions.isEmpty && change.modifications.isEmpty)
            inserted += change.insertedIDs
        }
        #expect(inserted == [2, 3, 4, 5, 6])
        #expect(
            try await store.objects(Ticket.self).results().map(\.writer) == ["test"]
                + Array(repeating: "helper", count: 5))
    }

    @Test func aCompactedCopyStartsWithoutTheOriginalsLog() async throws {
        let store = try store()
        for id in 1...30 { try await store.write { tx in try tx.insert(Item(id: id, rank: id, tag: "a")) } }
        let copyFolder = TemporaryFolder()
        let copyURL = copyFolder.url.appendingPathComponent("copy")
        try await store.compact(to: copyURL)
        // The copy starts again at version 1: log entries of versions 2...31 would be read as its own commits.
        let copy = try await Store(at: copyURL, configuration: .init(models: [Item.self, Other.self]))
        let newest = copy.version.rawValue
        let stale = try await copy.read { snapshot in
            var keys: [UInt64] = []
            try snapshot.lmdb.walk(copy.core.changeLog) { entry in
                keys.append(UInt64(bigEndian: entry.key.loadUnaligned(as: UInt64.self)))
                return true
            }
            return keys.filter { $0 > newest }
        }
        #expect(newest < 30 && stale.isEmpty)
    }

    @Test func anObserverWaitingForCommitsOfAnotherProcessGetsThem() async throws {
        let store = try folder.store([Ticket.self])
        var changes = store.changes(of: store.objects(Ticket.self)).makeAsyncIterator()
        _ = try await changes.next()
        #expect(try helperOutput([folder.url.path, "1"]) == "1\n")
        #expect(try await changes.next()?.insertedIDs == [1])
    }

    @Test(
        .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/status"), "reads Linux's RssAnon"),
        .disabled(
            if: Sanitizer.address || Sanitizer.thread,
            "a sanitizer's runtime keeps memory of its own (freed memory in quarantine, shadow state)"))
    func memoryStaysFlatOverTenThousandCommitsWhileConsumersSleep() throws {
        // In a process of its own, so that no other test's allocations count: an observer that sleeps 50 ms after
        // each delivery and a callback whose handler never returns, while 10,000 commits go by.
        let printed = try helperOutput(["slow-observers", folder.url.path]).split(separator: " ")
        #expect(printed.first == "heap")
        let numbers = printed.dropFirst().compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try #require(numbers.count == 3)
        let (afterOneThousand, afterTenThousand, deliveries) = (numbers[0], numbers[1], numbers[2])
        #expect(afterTenThousand - afterOneThousand < 512 * 1_024, "9,000 more commits must not hold memory")
        #expect(deliveries >= 1)
    }
}
