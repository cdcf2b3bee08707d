import Synchronization

/// Wakes the tasks waiting for a commit newer than the version they have seen.
///
/// A commit of this process wakes only the waiters that read a model it changed. Commits of other processes are
/// found by one poll per store, while anyone waits: every `pollInterval` it reads the newest version (LMDB's meta
/// page) and, when a version this process did not make appeared, wakes every waiter to read the change log.
final class CommitSignal: Sendable {
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

    private let state = Mutex(State())
    /// Reads the store's newest committed version, as any process made it; set by the store once it is open.
    private let newestVersion = Mutex<@Sendable () -> UInt64>({ 0 })
    let pollInterval: Duration

    init(pollInterval: Duration = .milliseconds(50)) {
        self.pollInterval = pollInterval
    }

    /// Tells the poll how to read the newest version. The store passes a closure that holds it weakly: a poll that
    /// outlives the store reads nothing.
    func readNewestVersion(with read: @escaping @Sendable () -> UInt64) {
        newestVersion.withLock { $0 = read }
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

    /// Looks for other processes' commits while anyone waits; ends when no one does.
    private func poll() async {
        while true {
            try? await Task.sleep(for: pollInterval)
            let newest = newestVersion.withLock { $0 }()
            let (keepGoing, appeared) = state.withLock { state -> (Bool, Bool) in
                let appeared = newest > state.known
                if state.waiters.isEmpty, !appeared {
                    state.isPolling = false
                    return (false, false)
                }
                return (true, appeared)
            }
            if appeared { notify(version: newest) }
            guard keepGoing else { return }
        }
    }
}
