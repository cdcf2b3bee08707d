import Synchronization

/// Wakes the pulls that wait for a user's changes (long polls). Every push that changes something sends
/// `NOTIFY cellar_sync, '<owner>'` in its transaction; one connection per server process listens (``SyncStore/listen``)
/// and calls ``notify(owner:)``, so a push through any server process wakes the pulls waiting in every other.
///
/// A pull registers before its first query and waits after it: a notification that arrives in between marks the
/// registration, and the wait then returns at once instead of missing it.
public final class Notifier: Sendable {
    private struct Waiter {
        var signaled = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private struct State {
        var nextID: UInt64 = 0
        var waiters: [String: [UInt64: Waiter]] = [:]
        var listening = false
        var readyContinuations: [CheckedContinuation<Void, Never>] = []
    }

    /// A pull's place in line for its owner's notifications.
    public struct Registration: Sendable {
        let owner: String
        let id: UInt64
    }

    private let state = Mutex(State())

    public init() {}

    /// Starts watching for `owner`'s changes; end with ``unregister(_:)``.
    public func register(owner: String) -> Registration {
        state.withLock { state in
            state.nextID += 1
            state.waiters[owner, default: [:]][state.nextID] = Waiter()
            return Registration(owner: owner, id: state.nextID)
        }
    }

    public func unregister(_ registration: Registration) {
        let continuation = state.withLock { state in
            let waiter = state.waiters[registration.owner]?.removeValue(forKey: registration.id)
            if state.waiters[registration.owner]?.isEmpty == true { state.waiters[registration.owner] = nil }
            return waiter?.continuation
        }
        continuation?.resume()
    }

    /// Returns once a change of the registration's owner was notified since it registered, or after `timeout`.
    public func wait(_ registration: Registration, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let resumeNow = self.state.withLock { state in
                        guard let waiter = state.waiters[registration.owner]?[registration.id], !waiter.signaled else {
                            return true
                        }
                        state.waiters[registration.owner]?[registration.id]?.continuation = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                self.signal(registration)
            }
            await group.next()
            group.cancelAll()
            // The sleeper may have finished first, or be cancelled now: either way the waiter is let go.
            self.signal(registration)
        }
    }

    /// Wakes the pulls waiting for `owner`.
    public func notify(owner: String) {
        let continuations = state.withLock { state in
            var continuations: [CheckedContinuation<Void, Never>] = []
            for id in state.waiters[owner]?.keys.map({ $0 }) ?? [] {
                state.waiters[owner]?[id]?.signaled = true
                if let continuation = state.waiters[owner]?[id]?.continuation {
                    continuations.append(continuation)
                    state.waiters[owner]?[id]?.continuation = nil
                }
            }
            return continuations
        }
        for continuation in continuations { continuation.resume() }
    }

    /// Wakes every waiting pull: after the listening connection was lost, a notification may have been missed.
    public func notifyAll() {
        let owners = state.withLock { Array($0.waiters.keys) }
        for owner in owners { notify(owner: owner) }
    }

    private func signal(_ registration: Registration) {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.waiters[registration.owner]?[registration.id] != nil else { return nil }
            state.waiters[registration.owner]?[registration.id]?.signaled = true
            let continuation = state.waiters[registration.owner]?[registration.id]?.continuation
            state.waiters[registration.owner]?[registration.id]?.continuation = nil
            return continuation
        }
        continuation?.resume()
    }

    /// Whether the listening connection is set up: notifications reach this process from now on.
    public var isListening: Bool { state.withLock { $0.listening } }

    /// Marks the listening connection as set up or lost.
    public func setListening(_ listening: Bool) {
        let continuations = state.withLock { state in
            state.listening = listening
            guard listening else { return [CheckedContinuation<Void, Never>]() }
            defer { state.readyContinuations = [] }
            return state.readyContinuations
        }
        for continuation in continuations { continuation.resume() }
    }

    /// Returns once the listening connection is set up.
    public func waitUntilListening() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                if state.listening { return true }
                state.readyContinuations.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
