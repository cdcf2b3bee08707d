import Synchronization

/// Wakes the tasks waiting for a commit newer than the version they have seen: the in-process half of observation
/// (a commit of this process notifies at once).
final class CommitSignal: Sendable {
    private struct State {
        var latest: UInt64 = 0
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    /// Records that `version` was committed and wakes every waiter.
    func notify(version: UInt64) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.latest = Swift.max(state.latest, version)
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once a version newer than `version` has been notified, `limit` has passed, or the task is cancelled.
    func wait(beyond version: UInt64, orAtMost limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait(beyond: version) }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once a version newer than `version` has been notified, or the task is cancelled.
    func wait(beyond version: UInt64) async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard state.latest <= version, !Task.isCancelled else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
