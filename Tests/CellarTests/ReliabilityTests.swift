import Foundation
import LMDB
import Testing

@testable import Cellar

/// A dog with a long name, so that a few thousand of them make the map grow.
struct BigDog: Model, Equatable {
    var id: Int64 = 0
    var name: String
    var age: Int
    static let schema = Schema<BigDog>(autoIncrement: true, indexes: [.index(\.age)])
}

/// Runs `body` on a thread of its own (not a pool thread, which blocking loops could use up), in `group`.
private func onThread(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
    group.enter()
    Thread.detachNewThread {
        body()
        group.leave()
    }
}

/// Waits for `group` at most `seconds`; `false` when it timed out.
private func finishes(_ group: DispatchGroup, within seconds: Double) -> Bool {
    group.wait(timeout: .now() + seconds) == .success
}

@Suite("Reliability: no stalls, no crashes from safe code")
struct ReliabilityTests {
    /// Growth may never be postponed forever by readers (glibc's read-write lock prefers readers): 8 threads read
    /// in a loop, nested reads and reads inside writes included, while one writer makes a 1 MiB map grow many
    /// times. The bound is generous; before the fix the writer stopped for good within the first thousand commits.
    @Test func aWriterThatMustGrowIsNeverStarvedByReaders() throws {
        let folder = TemporaryFolder()
        let store = try Store(
            at: folder.url, configuration: .init(models: [BigDog.self], durability: .none, initialMapSize: 1 << 20))
        let name = String(repeating: "n", count: 2_000)
        let done = ManagedAtomicFlag()
        let readers = DispatchGroup()
        let readErrors = Counter()
        for reader in 0..<8 {
            onThread(readers) {
                while !done.isSet {
                    do {
                        if reader % 2 == 0 {
                            _ = try store.objects(BigDog.self).where(\.age == 3).limit(5).results()
                        } else {
                            // A read inside a read must not wait behind the grower that waits for the outer one.
                            try store.read { snapshot in
                                _ = try snapshot.count(BigDog.self)
                                _ = try store.objects(BigDog.self).limit(2).results()
                                _ = store.version
                            }
                        }
                    } catch {
                        readErrors.add()
                    }
                }
            }
        }
        let writer = DispatchGroup()
        let commits = Counter()
        onThread(writer) {
            for round in 0..<400 {
                do {
                    try store.write { tx in
                        for _ in 0..<20 { try tx.insert(BigDog(name: name, age: round % 7)) }
                        // A read inside a write, on the writer's thread.
                        _ = try store.objects(BigDog.self).limit(1).results()
                    }
                    commits.add()
                } catch {
                    Issue.record("write \(round) failed: \(error)")
                }
            }
        }
        let finished = finishes(writer, within: 120)
        done.set()
        #expect(finished, "the writer stalled after \(commits.value) of 400 commits")
        guard finished else { return }
        #expect(finishes(readers, within: 60))
        #expect(commits.value == 400)
        #expect(readErrors.value == 0)
        #expect(try store.count(BigDog.self) == 8_000)
        #expect(store.core.environment.info.mapSize > 16 << 20)
    }

    /// The same with `try await write` from many tasks at once.
    @Test func asyncWritersFromManyTasksFinishWhileThreadsRead() async throws {
        let folder = TemporaryFolder()
        let store = try await Store(
            at: folder.url, configuration: .init(models: [BigDog.self], durability: .none, initialMapSize: 1 << 20))
        let name = String(repeating: "a", count: 2_000)
        let done = ManagedAtomicFlag()
        let readers = DispatchGroup()
        for _ in 0..<8 {
            onThread(readers) {
                while !done.isSet { _ = try? store.objects(BigDog.self).limit(3).results() }
            }
        }
        defer { done.set() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for _ in 0..<20 {
                        try await store.write { tx in
                            for _ in 0..<10 { try tx.insert(BigDog(name: name, age: task)) }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        done.set()
        #expect(try await store.count(BigDog.self) == 16 * 20 * 10)
    }

    /// `store.version` and `compact(to:)` read the map outside a transaction; a growth on another thread must wait
    /// for them (before the fix, both died of SIGSEGV inside LMDB).
    @Test func versionAndCompactRaceMapGrowth() throws {
        let folder = TemporaryFolder()
        let store = try Store(
            at: folder.url, configuration: .init(models: [BigDog.self], durability: .none, initialMapSize: 1 << 20))
        let name = String(repeating: "v", count: 1_500)
        let done = ManagedAtomicFlag()
        let watchers = DispatchGroup()
        let versions = Counter()
        for _ in 0..<2 {
            onThread(watchers) {
                var last = StoreVersion(rawValue: 0)
                while !done.isSet {
                    let now = store.version
                    if now < last { Issue.record("the version went back from \(last) to \(now)") }
                    last = now
                    versions.add()
                }
            }
        }
        let copies = TemporaryFolder()
        onThread(watchers) {
            var number = 0
            while !done.isSet {
                number += 1
                do {
                    try store.compact(to: copies.url.appendingPathComponent("copy-\(number)"))
                } catch {
                    Issue.record("compact failed: \(error)")
                }
            }
        }
        for round in 0..<150 {
            try store.write { tx in for _ in 0..<20 { try tx.insert(BigDog(name: name, age: round)) } }
        }
        done.set()
        #expect(finishes(watchers, within: 60))
        #expect(versions.value > 0)
        #expect(store.core.environment.info.mapSize > 4 << 20)
    }

    /// A write body that catches the map-full error and goes on still gets a grown map and a second run, instead of
    /// failing at commit with `MDB_BAD_TXN`.
    @Test func aWriteThatSwallowedMapFullGrowsAndRunsAgain() throws {
        let folder = TemporaryFolder()
        let store = try Store(
            at: folder.url, configuration: .init(models: [BigDog.self], durability: .none, initialMapSize: 1 << 20))
        let name = String(repeating: "s", count: 3_000)
        var runs = 0
        var swallowed = 0
        try store.write { tx in
            runs += 1
            for _ in 0..<1_000 {
                do { try tx.insert(BigDog(name: name, age: 1)) } catch { swallowed += 1 }
            }
        }
        #expect(runs > 1)
        #expect(swallowed > 0)
        #expect(try store.count(BigDog.self) == 1_000)
        #expect(try store.objects(BigDog.self).where(\.age == 1).count() == 1_000)
    }

    /// Many threads open and release one folder at once; LMDB's one-environment-per-file rule is enforced by the
    /// LMDB layer, so a second environment would be an error here.
    @Test func openingAndReleasingOneFolderFromManyThreadsNeverMakesTwoEnvironments() throws {
        let folder = TemporaryFolder()
        let configuration = Configuration(models: [Dog.self])
        do {
            let store = try Store(at: folder.url, configuration: configuration)
            try store.write { tx in try tx.insert(Dog(name: "Rex", age: 3)) }
        }
        let failures = Counter()
        let counted = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<200 {
                do {
                    let store = try Store(at: folder.url, configuration: configuration)
                    counted.add(try store.count(Dog.self))
                } catch {
                    failures.add()
                    Issue.record("open failed: \(error)")
                }
            }
        }
        #expect(failures.value == 0)
        #expect(counted.value == 1_600)
        #expect(!StoreCore.isOpen(folder.url))
    }

    @Test func aSecondEnvironmentOnOneFolderIsRefusedByTheLMDBLayer() throws {
        let folder = TemporaryFolder()
        let first = try Environment(path: folder.url.path)
        #expect(throws: LMDBError.alreadyOpen) { try Environment(path: folder.url.path) }
        first.close()
        // A closed environment refuses transactions instead of handing LMDB a freed handle.
        #expect(throws: LMDBError.system(errno: EBADF)) { try first.read { _ in } }
        let second = try Environment(path: folder.url.path)
        second.close()
    }

    @Test func offsetWithTheLargestLimitDoesNotOverflow() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in for age in 0..<5 { try tx.insert(Dog(name: "d\(age)", age: age)) } }
        let query = store.objects(Dog.self).offset(1).limit(.max)
        #expect(try query.results().map(\.age) == [1, 2, 3, 4])
        #expect(try query.count() == 4)
        #expect(try store.objects(Dog.self).offset(.max).limit(.max).results().isEmpty)
        #expect(try store.objects(Dog.self).sorted(by: \.name).offset(2).limit(.max).results().count == 3)
    }

    /// `latest()` runs the query on the store's newest version, even for a result made inside a closed `read`.
    @Test func latestOfAResultMadeInsideAReadRunsOnTheStore() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in try tx.insert(Dog(name: "Rex", age: 3)) }
        let held = try store.read { snapshot in try snapshot.objects(Dog.self).where(\.age >= 3).results() }
        try store.write { tx in try tx.insert(Dog(name: "Ace", age: 5)) }
        let latest = try held.latest()
        #expect(held.count == 1)
        #expect(latest.count == 2)
        #expect(latest.version > held.version)
    }
}

@Suite("Every StoreError case a user can meet")
struct ErrorCaseTests {
    @Test func anExhaustedSequenceIsSequenceExhausted() throws {
        struct Small: Model {
            var id: Int8 = 0
            static var schema: Schema<Small> { Schema(autoIncrement: true) }
        }
        let store = try Store.inMemory(.init(models: [Small.self]))
        try store.write { tx in try tx.insert(Small(id: 126)) }
        #expect(try store.write { tx in try tx.insert(Small()).id } == 127)
        #expect(throws: StoreError.sequenceExhausted(model: "Small")) {
            try store.write { tx in try tx.insert(Small()) }
        }
        #expect(try store.count(Small.self) == 2)
    }

    @Test func twoModelsWithOneStoredNameAreDuplicateModelName() throws {
        struct First: Model {
            var id: Int
            static var schema: Schema<First> { Schema(name: "Same") }
        }
        struct Second: Model {
            var id: Int
            static var schema: Schema<Second> { Schema(name: "Same") }
        }
        #expect(throws: StoreError.duplicateModelName(model: "Same")) {
            try Store.inMemory(.init(models: [First.self, Second.self]))
        }
    }

    @Test func aNaNInAnIndexIsInvalidKey() throws {
        struct Reading: Model {
            var id: Int
            var value: Double
            static var schema: Schema<Reading> { Schema(indexes: [.index(\.value)]) }
        }
        let store = try Store.inMemory(.init(models: [Reading.self]))
        #expect {
            try store.write { tx in try tx.insert(Reading(id: 1, value: .nan)) }
        } throws: { error in
            guard case .invalidKey(let model, let reason) = error as? StoreError else { return false }
            return model == "Reading" && reason.contains("NaN")
        }
    }

    /// Each LMDB failure becomes the case users switch on, in one place. (A transaction too large for LMDB needs
    /// over 500 MB of changed pages, too much for a test: its mapping is checked here.)
    @Test func lmdbFailuresMapToTheirCases() {
        func mapped(_ error: LMDBError) -> StoreError {
            StoreError.from(error, path: "/s", operation: "read", readerLimit: 7)
        }
        #expect(mapped(.transactionFull) == .transactionTooLarge)
        #expect(mapped(.readersFull) == .readersFull(limit: 7))
        #expect(mapped(.system(errno: EDEADLK)) == .nestedWrite)
        #expect(mapped(.mapFull) == .cannotGrowDuringRead)
        #expect(mapped(.system(errno: ENOSPC)) == .io(errno: ENOSPC, operation: "read", path: "/s"))
        guard case .corruptedFile(let path, let reason) = mapped(.truncated(expectedBytes: 8_192, actualBytes: 4_096))
        else {
            Issue.record("truncated is not corruptedFile")
            return
        }
        #expect(path == "/s" && reason.contains("4096 bytes long") && reason.contains("need 8192 bytes"))
        guard case .corruptedFile = mapped(.pageNotFound), case .incompatibleFile = mapped(.versionMismatch) else {
            Issue.record("damaged and foreign files map to corruptedFile and incompatibleFile")
            return
        }
        #expect(StoreError.transactionTooLarge.description.contains("Split it"))
    }
}

/// A flag threads can set and read.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// A counter threads can add to.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add(_ amount: Int = 1) { lock.withLock { count += amount } }
}
