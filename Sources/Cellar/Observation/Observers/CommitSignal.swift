import Dispatch
import LMDB

/// Wakes the tasks waiting for a commit newer than the version they have seen.
///
/// A commit of this process wakes only the waiters that read a model it changed. Commits of other processes are
/// looked for while anyone waits: on Linux as soon as they write the file (`FileWriteWatch`), with a poll every
/// `safetyInterval` in case a write goes unseen; elsewhere every `pollInterval`. A look reads the newest version
/// (LMDB's meta page, about a microsecond) and, when it is past the last version whose change log was read, the log of
/// the versions in between, and wakes the waiters of the models they changed.
///
/// No version counts as known unless its log was read or it was notified: this process's commits move the known
/// version only when they follow it (a commit of another process in between has a log no one read yet), and waiters
/// never move it (they read the store, not the log for the others).
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
        /// The version up to which every commit was seen: read in the change log by a look, or this process's own
        /// and notified in turn. A look reads the log after it.
        var known: UInt64
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

    private let state: Lock<State>
    /// Reads what any process committed; set by the store once it is open.
    private let reader = Lock<CommitReader>({ _ in (0, []) })
    /// The file whose writes announce commits (`data.mdb`).
    private let watchedFile = Lock<String?>(nil)
    private static let watchQueue = DispatchQueue(label: "Cellar commit watch")
    let pollInterval: Duration
    let safetyInterval: Duration

    /// A signal that has seen every commit up to `version`: the store's newest when it opens, which every waiter,
    /// having read the store since, has seen too.
    init(after version: UInt64 = 0, pollInterval: Duration = .milliseconds(50), safetyInterval: Duration = .seconds(1))
    {
        self.state = Lock(State(known: version))
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

    /// How many wait.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Reads the change log after the last version seen, up to the newest, and wakes the waiters of the models it
    /// names (everyone when the log no longer reaches back that far): how commits of other processes are found. Own
    /// commits read here again are harmless: their waiters wake once more, find nothing new and wait again.
    func lookForCommits() {
        let known = state.withLock { $0.known }
        let found = reader.withLock { $0 }(known)
        guard found.version > known else { return }
        // Every version up to `known` was seen before this look, and it read the rest up to `found.version`.
        wake(version: found.version, models: found.models) { $0 = Swift.max($0, found.version) }
    }

    /// Records that this process committed `version`, changing `models` (`nil`: unknown, any), and wakes the waiters
    /// that read them.
    func notify(version: UInt64, models: Set<String>? = nil) {
        wake(version: version, models: models) { known in
            // Past a gap, the versions in between are another process's: the next look reads them.
            if version == known + 1 { known = version }
        }
    }

    /// Wakes the waiters of `models` (`nil`: everyone) for `version`, moving the known version as `advance` says in the
    /// same step.
    private func wake(version: UInt64, models: Set<String>?, advance: (inout UInt64) -> Void) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            advance(&state.known)
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
