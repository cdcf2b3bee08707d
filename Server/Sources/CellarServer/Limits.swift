import CellarSyncProtocol
import Synchronization

/// What the server bounds, so that one user's slow or huge requests do not hold up the others. Each is a fact of this
/// file, read everywhere else.
public enum ServerLimits {
    /// The longest a statement runs in PostgreSQL before it is cancelled (`statement_timeout`).
    public static let statementTimeout = "30s"
    /// The longest a statement waits for a row lock (`lock_timeout`): a push behind another user's stuck transaction
    /// on the same rows gives up and is retried by its client, instead of holding a connection.
    public static let lockTimeout = "5s"
    /// The longest a transaction may sit idle (`idle_in_transaction_session_timeout`).
    public static let idleInTransactionTimeout = "60s"
    /// How many of one user's requests use the database at once in one server process; the others wait their turn.
    public static let requestsPerUser = 2
    /// How long a request waits for its user's turn before it is answered 503, to be retried.
    public static let turnWait: Duration = .seconds(10)
    /// How long a connection may stay without a whole request's head arriving (or between requests) before it is
    /// closed: half-sent requests hold nothing for long. A request being answered is not cut (a long poll waits).
    public static let idleTimeout: Duration = .seconds(30)
    /// How long a stopping server (SIGTERM, SIGINT) lets requests in flight finish before it cancels them; waiting
    /// pulls are answered at once.
    public static let shutdownGrace: Duration = .seconds(10)
}

/// Takes turns among one user's requests: at most ``ServerLimits/requestsPerUser`` of them use the database at once,
/// so that one user's stuck or huge requests can hold at most that many of the pool's connections.
public final class UserTurns: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var running: [String: Int] = [:]
        var waiting: [String: [Waiter]] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    private let limit: Int

    public init(limit: Int = ServerLimits.requestsPerUser) { self.limit = limit }

    /// Runs `body` in one of `owner`'s turns.
    ///
    /// - Throws: `SyncFailure.unavailable` when no turn came within `wait`.
    public func run<Result>(
        _ owner: String, wait: Duration = ServerLimits.turnWait, _ body: () async throws -> Result
    ) async throws -> Result {
        try await acquire(owner, wait: wait)
        defer { release(owner) }
        return try await body()
    }

    private func acquire(_ owner: String, wait: Duration) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let granted = await withTaskGroup(of: Void.self) { group in
            // The wait's end: a waiter still in line leaves it, refused.
            group.addTask {
                try? await Task.sleep(for: wait)
                self.expire(owner, id)
            }
            // Whether a turn is free and joining the line are one step: a release in between cannot be missed.
            let granted = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.running[owner, default: 0] < limit {
                        state.running[owner, default: 0] += 1
                        return true
                    }
                    state.waiting[owner, default: []].append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if now { continuation.resume(returning: true) }
            }
            group.cancelAll()
            return granted
        }
        guard granted else {
            throw SyncFailure(
                .unavailable,
                "this user's earlier requests still hold the server: waited \(wait) for a turn; try again later")
        }
    }

    /// Takes the waiter `id` out of `owner`'s line, refused, if it is still there.
    private func expire(_ owner: String, _ id: UInt64) {
        let removed = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let position = state.waiting[owner]?.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = state.waiting[owner]?.remove(at: position)
            if state.waiting[owner]?.isEmpty == true { state.waiting[owner] = nil }
            return waiter?.continuation
        }
        removed?.resume(returning: false)
    }

    private func release(_ owner: String) {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if var line = state.waiting[owner], !line.isEmpty {
                let waiter = line.removeFirst()
                state.waiting[owner] = line.isEmpty ? nil : line
                // The turn passes on: `running` stays as it is.
                return waiter.continuation
            }
            state.running[owner, default: 1] -= 1
            if state.running[owner] == 0 { state.running[owner] = nil }
            return nil
        }
        next?.resume(returning: true)
    }
}
