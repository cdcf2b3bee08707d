import Foundation
import LMDB
import Synchronization
import Testing

@testable import Cellar

/// The wake-ups behind observation, without a store: who is woken by which commit, and the poll for other processes.
@Suite("Observation: the commit signal", .timeLimit(.minutes(1)))
struct CommitSignalTests {
    /// Starts a waiter for `models` and returns a task that ends when it is woken.
    func waiter(_ signal: CommitSignal, beyond version: UInt64, reading models: Set<String>) -> Task<Void, Never> {
        Task { await signal.wait(beyond: version, reading: models) }
    }

    /// Whether `task` ended within `limit`; returns as soon as it has. Expecting an end, give it seconds (the machine
    /// may be busy); expecting none, a tenth of a second says it did not end at once.
    func ended(_ task: Task<Void, Never>, within limit: Duration = .seconds(10)) async -> Bool {
        let done = Lock(false)
        let watcher = Task {
            await task.value
            done.withLock { $0 = true }
        }
        defer { watcher.cancel() }
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while clock.now < deadline {
            if done.withLock({ $0 }) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return done.withLock { $0 }
    }

    func stillWaiting(_ task: Task<Void, Never>) async -> Bool { await !ended(task, within: .milliseconds(100)) }

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

    @Test func thePollWakesEveryoneWhenAnotherProcessCommittedWhatTheLogCannotSay() async {
        let signal = CommitSignal(pollInterval: .milliseconds(10))
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
        let signal = CommitSignal(pollInterval: .seconds(3_600), safetyInterval: .seconds(3_600))
        let newest = Atomic<UInt64>(7)
        signal.readCommits(watching: file.path) { _ in (newest.load(ordering: .relaxed), ["Cat"]) }
        let cats = waiter(signal, beyond: 7, reading: ["Cat"])
        let dogs = waiter(signal, beyond: 7, reading: ["Dog"])
        #expect(await stillWaiting(cats))
        // The watch starts with the first waiter, on a task of its own: give a busy machine time.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while !signal.isWatching, clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try #require(signal.isWatching)
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
        let signal = CommitSignal(pollInterval: .seconds(3_600), safetyInterval: .seconds(3_600))
        // Another process committed version 8 after this waiter read 7, before any watch existed: no write will come.
        signal.readCommits(watching: file.path) { _ in (8, ["Cat"]) }
        #expect(await ended(waiter(signal, beyond: 7, reading: ["Cat"])))
    }
}
