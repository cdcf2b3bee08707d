import Synchronization

/// Keeps an observation running: it stops on `cancel()` or when the token is released (Realm's `NotificationToken`,
/// whose `invalidate()` is `cancel()` here).
public final class ObservationToken: Sendable {
    private let task: Task<Void, Never>
    private let cancellation: Cancellation

    /// Whether an observation was cancelled: set by its token, read by each delivery on the delivery queue right before
    /// it calls the handler.
    final class Cancellation: Sendable {
        private let flag = Atomic<Bool>(false)
        var isCancelled: Bool { flag.load(ordering: .acquiring) }
        func cancel() { flag.store(true, ordering: .releasing) }
    }

    init(task: Task<Void, Never>, cancellation: Cancellation = Cancellation()) {
        self.task = task
        self.cancellation = cancellation
    }

    /// Stops the observation: once it returns, the handler is not called again, but for a call already under way on
    /// the delivery queue (none when `cancel()` runs on that queue, as in the handler).
    public func cancel() {
        cancellation.cancel()
        task.cancel()
    }

    deinit { cancel() }
}
