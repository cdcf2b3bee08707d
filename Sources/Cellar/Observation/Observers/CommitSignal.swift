import Dispatch
import LMDB

/// Wakes the tasks waiting for a commit newer than the version they have seen.
///
/// A commit of this process wakes only the waiters that read a model it changed. Commits of other processes are
/// looked for while anyone waits: on Linux as soon as they write the file (`FileWriteWatch`), with a poll every
/// `safetyInterval` in case a write goes unseen; elsewhere every `pollInterval`. A look reads the newest version
/// (LMDB's meta page, about a microsecond) and, when one this process did not know appeared, the change log of the
/// versions in between, and wakes the waiters of the models they changed.
final class CommitSignal: Sendable {
    /// What was committed after a version: the newest version, and the models changed since (`nil`: unknown).
    typealias CommitReader = @Sendable (_ after: UInt64) -> (version: UInt64, models: Set<String>?)

    private struct Waiter {
        /// The stored names of the models the waiter reads.
        let models: Set<String>
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        /// The newest version notified to every waiter.
        var latest: UInt64 = 0
        /// The newest version that changed each model, so that a waiter arriving just after a commit still sees it.
        var latestByModel: [String: UInt64] = [:]
        /// The newest version this process knows of, its own commits included: the poll looks for newer ones.
        var known: UInt64 = 0
        var isPolling = false
        /// The watch of the store's file, while the poll runs and the system offers one.
        var watch: FileWriteWatch?
        var nextWaiter = 0
        var waiters: [Int: Waiter] = [:]
        /// The waiters of each model, so that a commit finds its waiters without looking at the others.
        var waitersByModel: [String: Set<Int>] = [:]

        mutating func remove(_ id: Int) -> Waiter? {
            guard let waiter = waiters.removeValue(forKey: id) else { return nil }
            for model in waiter.models { waitersByModel[model]?.remove(id) }
            return waiter
        }
    }

    private let state = Lock(State())
    /// Reads what any process committed; set by the store once it is open.
    private let reader = Lock<CommitReader>({ _ in (0, []) })
    /// The file whose writes announce commits (`data.mdb`).
    private let watchedFile = Lock<String?>(nil)
    private static let watchQueue = DispatchQueue(label: "Cellar commit watch")
    let pollInterval: Duration
    let safetyInterval: Duration

    init(pollInterval: Duration = .milliseconds(50), safetyInterval: Duration = .seconds(1)) {
        self.pollInterval = pollInterval
        self.safetyInterval = safetyInterval
    }

    /// Tells the signal how to read other processes' commits, and which file they write. The store passes a closure
    /// that holds it weakly: a look that outlives the store reads nothing.
    func readCommits(watching file: String?, with read: @escaping CommitReader) {
        reader.withLock { $0 = read }
        watchedFile.withLock { $0 = file }
    }

    /// Whether commits are seen as they are written rather than by the poll.
    var isWatching: Bool { state.withLock { $0.watch != nil } }

    /// Reads what was committed since the newest version this process knows of, and wakes the waiters of what
    /// changed: how commits of other processes are found. Own commits seen here are harmless: their waiters wake a
    /// little early, once.
    func lookForCommits() {
        let known = state.withLock { $0.known }
        let found = reader.withLock { $0 }(known)
        if found.version > known { notify(version: found.version, models: found.models) }
    }

    /// Records that `version` was committed, changing `models` (`nil`: unknown, any), and wakes the waiters that
    /// read them.
    func notify(version: UInt64, models: Set<String>? = nil) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.known = Swift.max(state.known, version)
            if let models {
                for model in models { state.latestByModel[model] = Swift.max(state.latestByModel[model] ?? 0, version) }
            } else {
                state.latest = Swift.max(state.latest, version)
            }
            let ids: [Int]
            if let models {
                ids = Array(Set(models.flatMap { state.waitersByModel[$0] ?? [] }))
            } else {
                ids = Array(state.waiters.keys)
            }
            return ids.compactMap { state.remove($0)?.continuation }
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once a commit changing one of `models` is notified after `version` (or another process committed), or
    /// the task is cancelled.
    func wait(beyond version: UInt64, reading models: Set<String>) async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (resumeNow, startPoll) = state.withLock { state -> (Bool, Bool) in
                    let missed = models.contains { (state.latestByModel[$0] ?? 0) > version }
                    guard state.latest <= version, !missed, !Task.isCancelled else { return (true, false) }
                    state.waiters[id] = Waiter(models: models, continuation: continuation)
                    for model in models { state.waitersByModel[model, default: []].insert(id) }
                    state.known = Swift.max(state.known, version)
                    defer { state.isPolling = true }
                    return (false, !state.isPolling)
                }
                if resumeNow { continuation.resume() }
                if startPoll { Task.detached { await self.poll() } }
            }
        } onCancel: {
            let waiter = state.withLock { $0.remove(id) }
            waiter?.continuation.resume()
        }
    }

    /// Looks for other processes' commits while anyone waits, watching the file where it can; ends when no one
    /// waits, and the watch with it.
    private func poll() async {
        if let file = watchedFile.withLock({ $0 }) {
            let started = FileWriteWatch.start(path: file, on: Self.watchQueue) { [weak self] in self?.lookForCommits()
            }
            state.withLock { $0.watch = started }
            // A commit made after the waiter looked and before the watch began wrote unseen: look once now.
            lookForCommits()
        }
        while true {
            try? await Task.sleep(for: isWatching ? safetyInterval : pollInterval)
            lookForCommits()
            // The watch ends in the same step as the poll, so a poll started next never sees this one's watch.
            let (keepGoing, ended) = state.withLock { state -> (Bool, FileWriteWatch?) in
                guard state.waiters.isEmpty else { return (true, nil) }
                state.isPolling = false
                defer { state.watch = nil }
                return (false, state.watch)
            }
            guard keepGoing else {
                withExtendedLifetime(ended) {}  // released here, outside the lock
                return
            }
        }
    }
}
