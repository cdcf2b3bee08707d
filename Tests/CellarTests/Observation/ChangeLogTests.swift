import Foundation
import Testing

@_spi(Benchmarks) @testable import Cellar

/// The change log a transaction writes: listed keys up to `ChangeLog.keyLimit` per model, "everything" beyond.
@Suite("Observation: the change log", .hangGuard)
struct ChangeLogTests {
    @Test func aModelWithMoreChangesThanTheLimitIsLoggedWholesaleWithoutKeepingItsKeys() throws {
        var log = ChangeLog()
        for id in 0..<ChangeLog.keyLimit {
            log.record(.inserted, key: [UInt8(id % 256), UInt8(id / 256)], model: "Dog")
        }
        log.record(.deleted, key: [1], model: "Cat")
        #expect(log.byModel["Dog"]??.count == ChangeLog.keyLimit, "at the limit, the keys are listed")
        log.record(.updated, key: [9, 9], model: "Dog")
        #expect(log.byModel["Dog"].map { $0 == nil } == true, "beyond it, none is kept")
        log.record(.updated, key: [9, 8], model: "Dog")
        #expect(log.byModel["Dog"].map { $0 == nil } == true)

        var changed = ChangedRecords()
        let read = log.serialized.withUnsafeBytes { changed.add($0) }
        #expect(read)
        #expect(changed.touches(["Dog"]) && changed.keys(of: "Dog") == nil, "Dog changed wholesale")
        #expect(changed.keys(of: "Cat") == [KeyBytes([1])])
        #expect(
            changed.mayHaveChanged(KeyBytes([7, 7]), of: "Dog") && !changed.mayHaveChanged(KeyBytes([2]), of: "Cat"))
    }

    struct Item: Model, Equatable {
        var id: Int
    }

    @Test func anObserverOfABulkWriteRunsItsQueryAgainAndGetsEveryRecord() async throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Item.self])
        var changes = store.changes(of: store.objects(Item.self)).makeAsyncIterator()
        _ = try await changes.next()
        let count = ChangeLog.keyLimit + 500
        try await store.write { tx in for id in 1...count { try tx.insert(Item(id: id)) } }
        let change = try #require(try await changes.next())
        #expect(change.insertions == Array(0..<count) && change.insertedIDs.count == count)
        #expect(changes.queryRuns == 2, "a wholesale change is read by running the query")
    }

    struct Counter: Model, Equatable {
        var id: Int
        var count: Int
    }

    @Test func aBulkWriteModifiesOnlyTheObservedRecordsWhoseBytesChanged() async throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Counter.self])
        let count = ChangeLog.keyLimit + 200
        try await store.write { tx in for id in 1...count { try tx.insert(Counter(id: id, count: 0)) } }
        var changes = store.changes(of: store.objects(Counter.self).where(\.id <= 10)).makeAsyncIterator()
        _ = try await changes.next()
        // Counters 6 and up change: more than the log lists, so it says "Counter changed wholesale".
        try await store.write { tx in for id in 6...count { try tx.update(Counter(id: id, count: 1)) } }
        let change = try #require(try await changes.next())
        #expect(changes.queryRuns == 2, "the query ran again")
        #expect(change.results.map(\.count) == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
        #expect(change.modifications == [5, 6, 7, 8, 9] && change.modificationsInNewResults == [5, 6, 7, 8, 9])
        #expect(change.modifiedIDs == [6, 7, 8, 9, 10], "counters 1 to 5 kept their bytes")
        #expect(change.insertions.isEmpty && change.deletions.isEmpty)
    }
}
