import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Cellar

@Suite("Reads in async code, and the spellings a Realm user types")
struct AsyncReadTests {
    static func kennel() throws -> Store {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in
            for number in 0..<50 { try tx.insert(Dog(name: "Dog \(number)", age: number % 5)) }
        }
        return store
    }

    @Test func countAndFirstAreMethods() throws {
        let store = try Self.kennel()
        let threes = store.objects(Dog.self).where(\.age == 3)
        #expect(try threes.count() == 10)
        #expect(try threes.first()?.name == "Dog 3")
        #expect(try store.objects(Dog.self).where(\.age == 9).first() == nil)
        #expect(try store.objects(Dog.self).count() == 50)
    }

    @Test func asyncFormsGiveWhatTheBlockingOnesGive() async throws {
        let store = try Self.kennel()
        let threes = store.objects(Dog.self).where(\.age == 3).sorted(by: \.name)
        #expect(try await threes.results().map(\.name) == (try threes.results() as Results<Dog>).map(\.name))
        #expect(try await threes.count() == 10)
        #expect(try await threes.first()?.name == "Dog 13")
        let (people, dogs) = try await store.read { snapshot in
            (try snapshot.objects(Dog.self).where(\.age == 1).count(), try snapshot.count(Dog.self))
        }
        #expect(people == 10 && dogs == 50)
        // Errors keep their type.
        await #expect(throws: StoreError.modelNotRegistered(model: "Note")) {
            try await store.objects(Note.self).count()
        }
    }

    /// More reads than the cooperative pool has threads, each waiting inside its read until a task on that pool lets
    /// it go: reads that held the pool's threads would leave that task no thread to run on, and every wait would
    /// time out.
    @Test func asyncReadsDoNotHoldTheCooperativePool() async throws {
        let store = try Self.kennel()
        let readers = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let release = DispatchSemaphore(value: 0)
        final class Count: Sendable { let value = Atomic<Int>(0) }
        let timedOut = Count()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<readers {
                group.addTask {
                    _ = try await store.read { snapshot in
                        if release.wait(timeout: .now() + 20) == .timedOut { timedOut.value.add(1, ordering: .relaxed) }
                        return try snapshot.count(Dog.self)
                    }
                }
            }
            group.addTask {
                for _ in 0..<readers { release.signal() }
            }
            try await group.waitForAll()
        }
        #expect(timedOut.value.load(ordering: .relaxed) == 0)
    }
}
