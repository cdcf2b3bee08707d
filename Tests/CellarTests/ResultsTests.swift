import Foundation
import LMDB
import Testing

@testable import Cellar

@Suite("Frozen results")
struct ResultsTests {
    @Test func heldResultsSurviveTheDeleteOfTheirRows() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in
            for i in 1...8 { try tx.insert(Dog(name: "Dog \(i)", age: i)) }
        }
        let held = try store.objects(Dog.self).results()
        let versionAtQuery = store.version
        #expect(held.count == 8)

        try store.write { tx in
            try tx.delete(Dog.self, id: 7)
            try tx.delete(Dog.self, id: 8)
        }
        // The held results are unchanged: count and every element, the deleted ones included.
        #expect(held.count == 8)
        for (index, dog) in held.enumerated() {
            #expect(dog.id == Int64(index + 1))
            #expect(dog.name == "Dog \(index + 1)")
        }
        #expect(held[7].name == "Dog 8")

        let latest = try held.latest()
        #expect(latest.count == 6)
        #expect(latest.map(\.id) == [1, 2, 3, 4, 5, 6])
        #expect(latest.version > held.version)
        #expect(held.version == versionAtQuery)
        #expect(latest.version == store.version)
    }

    @Test func changedRowsDoNotChangeHeldResults() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in try tx.insert(Dog(name: "Taro", age: 3)) }
        let held = try store.objects(Dog.self).results()
        try store.write { tx in try tx.update(Dog(id: 1, name: "Renamed", age: 4)) }
        #expect(held[0] == Dog(id: 1, name: "Taro", age: 3))
        #expect(try held.latest()[0].name == "Renamed")
    }

    @Test func manyReadersOnManyTasksWhileAWriterCommits() async throws {
        let store = try await Store.inMemory(.init(models: [Dog.self]))
        try await store.write { tx in for i in 0..<100 { try tx.insert(Dog(name: "seed \(i)", age: i)) } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 0..<100 {
                    try await store.write { tx in
                        // Each commit adds 10 and deletes 5, so every snapshot's count is 100 + 5k.
                        for i in 0..<10 { try tx.insert(Dog(name: "w\(round).\(i)", age: i)) }
                        let victims = try tx.objects(Dog.self).results().prefix(5).map(\.id)
                        for id in victims { try tx.delete(Dog.self, id: id) }
                    }
                }
            }
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<100 {
                        let results = try store.objects(Dog.self).results()
                        #expect((results.count - 100) % 5 == 0)
                        // Every element of a snapshot is readable, and ids ascend.
                        #expect(zip(results, results.dropFirst()).allSatisfy { $0.id < $1.id })
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.count(Dog.self) == 100 + 100 * 5)
    }

    @Test func aStoreThatDoesNotDecodeInParallelKeepsEachQueryOnItsThread() throws {
        func threads(decodingInParallel: Bool) throws -> Int {
            var configuration = Configuration(models: [Dog.self])
            configuration.decodesInParallel = decodingInParallel
            let store = try Store.inMemory(configuration)
            try store.write { tx in
                for i in 0..<ParallelDecoding.minimumRecords * 2 { try tx.insert(Dog(name: "Dog \(i)", age: i % 20)) }
            }
            let seen = Lock(Set<UInt>())
            // The filter runs where each record is decoded.
            let found = try store.objects(Dog.self).filter { _ in
                seen.withLock { _ = $0.insert(UInt(bitPattern: Int(bitPattern: pthread_self()))) }
                return true
            }.results()
            #expect(found.count == ParallelDecoding.minimumRecords * 2)
            return seen.withLock { $0.count }
        }
        // Off, one thread decodes. (On, how many do depends on what else the machine runs: `concurrentPerform` may
        // run every chunk on the calling thread, so the other way is not asserted.)
        #expect(try threads(decodingInParallel: false) == 1)
    }

    @Test func largeResultsDecodeInParallelInOrder() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        let count = ParallelDecoding.minimumRecords * 3 + 7
        try store.write { tx in
            for i in 0..<count { try tx.insert(Dog(name: "Dog \(i)", age: i % 20, owner: i % 2 == 0 ? nil : Int64(i))) }
        }
        let dogs = try store.objects(Dog.self).results()
        #expect(dogs.count == count)
        #expect(dogs.enumerated().allSatisfy { index, dog in dog.id == Int64(index + 1) && dog.name == "Dog \(index)" })

        // A damaged record deep inside a large result is still reported with its id.
        let info = try store.info(for: Dog.self)
        try store.core.environment.write { txn in
            try txn.put(
                info.records, key: try KeyEncoding.key(Int64(count - 3)), value: [RecordFormat.version, 0x0D, 0x7F])
        }
        #expect(throws: StoreError.self) { try store.objects(Dog.self).results() }
        do {
            _ = try store.objects(Dog.self).results()
        } catch {
            guard case .decodingFailed(_, let id, _, _) = error else {
                Issue.record("expected decodingFailed, got \(error)")
                return
            }
            #expect(id == "\(count - 3)")
        }
    }

    @Test func tenThousandQueriesNeverExhaustReaderSlots() throws {
        let folder = TemporaryFolder()
        let store = try Store(at: folder.url, configuration: .init(models: [Dog.self], maxReaders: 8))
        try store.write { tx in try tx.insert(Dog(name: "Taro", age: 3)) }
        _ = try store.objects(Dog.self).results()
        let slotsAfterOneQuery = store.core.environment.info.readersInUse
        for _ in 0..<10_000 {
            _ = try store.objects(Dog.self).results()
            _ = try store.object(Dog.self, id: 1)
        }
        // Sequential reads reuse one reset transaction and its slot: no slot is taken per query.
        #expect(slotsAfterOneQuery == 1)
        #expect(store.core.environment.info.readersInUse == slotsAfterOneQuery)
    }

    @Test func aWriteThatMustGrowInsideAReadIsAnErrorNotADeadlock() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Note.self], mapSize: 1 << 20)
        let text = String(repeating: "x", count: 1_024)
        #expect(throws: StoreError.cannotGrowDuringRead) {
            try store.read { _ in
                try store.write { tx in for i in 0..<4_000 { try tx.insert(Note(id: "\(i)", text: text)) } }
            }
        }
        // Outside the read, the same write grows the map and succeeds.
        try store.write { tx in for i in 0..<4_000 { try tx.insert(Note(id: "\(i)", text: text)) } }
        #expect(try store.count(Note.self) == 4_000)
    }

    @Test func aTinyMapGrowsByItselfWhile50MBAreInserted() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Note.self], mapSize: 1 << 20)
        let text = String(repeating: "0123456789abcdef", count: 64)  // 1 KiB
        // 50 MB in 50 transactions of 1,000 KiB records each, with one more of 5 MB in a single transaction.
        for batch in 0..<50 {
            try store.write { tx in
                for i in 0..<1_000 { try tx.insert(Note(id: "\(batch)-\(i)", text: text)) }
            }
        }
        try store.write { tx in
            for i in 0..<5_000 { try tx.insert(Note(id: "big-\(i)", text: text)) }
        }
        #expect(try store.count(Note.self) == 55_000)
        #expect(store.core.environment.info.mapSize > 50 << 20)
        #expect(try store.object(Note.self, id: "49-999")?.text == text)
    }
}
