import Foundation
import LMDB
import Synchronization
import Testing

@testable import Cellar

/// The wake-ups behind observation, without a store: who is woken by which commit, and the poll for other processes.
@Suite("Observation: the commit signal", .hangGuard)
struct CommitSignalTests {
    /// Starts a waiter for `models` and returns a task that ends when it is woken.
    func waiter(_ signal: CommitSignal, beyond version: UInt64, reading models: Set<String>) -> Task<Void, Never> {
        Task { await signal.wait(beyond: version, reading: models) }
    }

    /// Whether `task` ended within `limit` (see `holds`); returns as soon as it has. Expecting an end, give it seconds
    /// (the machine may be busy); expecting none, a tenth of a second says it did not end at once.
    func ended(_ task: Task<Void, Never>, within limit: Duration = .seconds(10)) async -> Bool {
        let done = Lock(false)
        let watcher = Task {
            await task.value
            done.withLock { $0 = true }
        }
        defer { watcher.cancel() }
        return await holds(within: limit) { done.withLock { $0 } }
    }

    func stillWaiting(_ task: Task<Void, Never>) async -> Bool { await !ended(task, within: .milliseconds(100)) }

    /// Whether `count` waiters wait on `signal` within ten seconds (see `holds`); returns as soon as they do.
    func waiting(_ count: Int, on signal: CommitSignal) async -> Bool {
        await holds(within: .seconds(10)) { signal.waiting == count }
    }

    @Test func aCommitWakesOnlyTheWaitersOfTheModelsItChanged() async {
        // An hour between polls: only notifications wake anyone here.
        let signal = CommitSignal(pollInterval: .seconds(3_600))
        let dogs = waiter(signal, beyond: 1, reading: ["Dog"])
        let cats = waiter(signal, beyond: 1, reading: ["Cat", "Person"])
        try? await Task.sleep(for: .milliseconds(50))
        signal.notify(version: 2, models: ["Dog"])
        #expect(await ended(dogs))
        #expect(await stillWaiting(cats))
        // Unknown models (a commit of another process, checkForChanges): everyone.
        signal.notify(version: 3)
        #expect(await ended(cats))
    }

    @Test func aWaiterThatArrivesAfterACommitOfItsModelReturnsAtOnce() async {
        let signal = CommitSignal(pollInterval: .seconds(3_600))
        signal.notify(version: 5, models: ["Dog"])
        #expect(await ended(waiter(signal, beyond: 4, reading: ["Dog"])))
        #expect(await stillWaiting(waiter(signal, beyond: 4, reading: ["Cat"])))
    }

    /// A change log for the signal to read as a store's `committed(after:)` does: the models each version changed.
    final class Log: Sendable {
        /// The models of versions 1, 2, …
        private let versions: Lock<[Set<String>]>
        /// The version after which each read began.
        let readsAfter = Lock<[UInt64]>([])

        init(versions: Int) { self.versions = Lock(Array(repeating: [], count: versions)) }

        /// Commits a version changing `models` and returns it.
        @discardableResult
        func commit(_ models: Set<String>) -> UInt64 {
            versions.withLock { versions in
                versions.append(models)
                return UInt64(versions.count)
            }
        }

        func read(after: UInt64) -> (version: UInt64, models: Set<String>?) {
            readsAfter.withLock { $0.append(after) }
            return versions.withLock { versions in
                (UInt64(versions.count), versions.dropFirst(Int(after)).reduce(into: []) { $0.formUnion($1) })
            }
        }
    }

    @Test func aCommitOfAnotherProcessIsNotLostBehindAnOwnCommitToAnotherModel() async {
        let log = Log(versions: 7)
        let signal = CommitSignal(after: 7, pollInterval: .seconds(3_600))
        signal.readCommits(watching: nil, with: log.read)
        let dogs = waiter(signal, beyond: 7, reading: ["Dog"])
        #expect(await waiting(1, on: signal))
        signal.notify(version: log.commit(["Cat"]), models: ["Cat"])  // this process, version 8
        log.commit(["Dog"])  // another process, version 9: no one has read its log yet
        signal.notify(version: log.commit(["Cat"]), models: ["Cat"])  // this process, version 10
        signal.lookForCommits()  // checkForChanges(), the watch or the poll
        #expect(await ended(dogs), "the look read the log past the own commits")
        #expect(log.readsAfter.withLock { $0 } == [8], "from the last version seen: the own commit that followed 7")
    }

    @Test func aCommitOfAnotherProcessIsNotLostBehindAWaiterArrivingLater() async {
        let log = Log(versions: 7)
        let signal = CommitSignal(after: 7, pollInterval: .seconds(3_600))
        signal.readCommits(watching: nil, with: log.read)
        let dogs = waiter(signal, beyond: 7, reading: ["Dog"])
        #expect(await waiting(1, on: signal))
        log.commit(["Dog"])  // another process, version 8
        // An observer of cats reads version 8 (no cat changed) and waits beyond it before anyone looked.
        let cats = waiter(signal, beyond: 8, reading: ["Cat"])
        #expect(await waiting(2, on: signal))
        signal.lookForCommits()
        #expect(await ended(dogs), "a waiter has read the store, not the log: it does not make version 8 known")
        #expect(await stillWaiting(cats))
        cats.cancel()
    }

    @Test func thePollWakesEveryoneWhenAnotherProcessCommittedWhatTheLogCannotSay() async {
        let signal = CommitSignal(after: 7, pollInterval: .milliseconds(10))
        let newest = Atomic<UInt64>(7)
        signal.readCommits(watching: nil) { _ in (newest.load(ordering: .relaxed), nil) }
        let cats = waiter(signal, beyond: 7, reading: ["Cat"])
        #expect(await stillWaiting(cats), "no new version: the poll wakes no one")
        newest.store(8, ordering: .relaxed)
        #expect(await ended(cats))
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/sys/fs/inotify"), "inotify is Linux's"))
    func aWriteToTheWatchedFileWakesTheWaitersOfTheModelsItsLogNames() async throws {
        let folder = TemporaryFolder()
        let file = folder.url.appendingPathComponent("data.mdb")
        try Data().write(to: file)
        // An hour between polls: only the watch can wake anyone.
        let signal = CommitSignal(after: 7, pollInterval: .seconds(3_600), safetyInterval: .seconds(3_600))
        let newest = Atomic<UInt64>(7)
        signal.readCommits(watching: file.path) { _ in (newest.load(ordering: .relaxed), ["Cat"]) }
        let cats = waiter(signal, beyond: 7, reading: ["Cat"])
        let dogs = waiter(signal, beyond: 7, reading: ["Dog"])
        #expect(await stillWaiting(cats))
        // The watch starts with the first waiter, on a task of its own: give a busy machine time.
        try #require(await holds(within: .seconds(10)) { signal.isWatching })
        newest.store(8, ordering: .relaxed)
        let handle = try FileHandle(forWritingTo: file)
        try handle.write(contentsOf: Data("commit".utf8))
        try handle.close()
        #expect(await ended(cats), "the write woke the waiter of the model the log names")
        #expect(await stillWaiting(dogs), "and no one else")
        dogs.cancel()
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/sys/fs/inotify"), "inotify is Linux's"))
    func aCommitMadeBeforeTheWatchBeganIsSeenWhenItBegins() async throws {
        let folder = TemporaryFolder()
        let file = folder.url.appendingPathComponent("data.mdb")
        try Data().write(to: file)
        let signal = CommitSignal(after: 7, pollInterval: .seconds(3_600), safetyInterval: .seconds(3_600))
        // Another process committed version 8 after this waiter read 7, before any watch existed: no write will come.
        signal.readCommits(watching: file.path) { _ in (8, ["Cat"]) }
        #expect(await ended(waiter(signal, beyond: 7, reading: ["Cat"])))
    }
}
