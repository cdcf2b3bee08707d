import Synchronization

/// Wakes the tasks waiting for a commit newer than the version they have seen: the in-process half of observation.
/// A commit of this process wakes only the waiters that read a model it changed, so observers of other models cost
/// it nothing but a look at their model names.
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
        var nextWaiter = 0
        var waiters: [Int: Waiter] = [:]
    }

    private let state = Mutex(State())

    /// Records that `version` was committed, changing `models` (`nil`: any), and wakes the waiters that read them.
    func notify(version: UInt64, models: Set<String>? = nil) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let models {
                for model in models { state.latestByModel[model] = Swift.max(state.latestByModel[model] ?? 0, version) }
            } else {
                state.latest = Swift.max(state.latest, version)
            }
            var woken: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in state.waiters where models.map({ !$0.isDisjoint(with: waiter.models) }) ?? true {
                woken.append(waiter.continuation)
                state.waiters[id] = nil
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once a commit changing one of `models` is notified after `version`, `limit` has passed, or the task
    /// is cancelled.
    func wait(beyond version: UInt64, reading models: Set<String>, orAtMost limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait(beyond: version, reading: models) }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once a commit changing one of `models` is notified after `version`, or the task is cancelled.
    func wait(beyond version: UInt64, reading models: Set<String>) async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    let missed = models.contains { (state.latestByModel[$0] ?? 0) > version }
                    guard state.latest <= version, !missed, !Task.isCancelled else { return true }
                    state.waiters[id] = Waiter(models: models, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume()
        }
    }
}
