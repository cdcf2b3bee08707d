/// Keeps an observation running: it stops on `cancel()` or when the token is released (Realm's `NotificationToken`,
/// whose `invalidate()` is `cancel()` here).
public final class ObservationToken: Sendable {
    private let task: Task<Void, Never>

    init(task: Task<Void, Never>) { self.task = task }

    /// Stops the observation; the handler is not called again once the delivery under way returns.
    public func cancel() { task.cancel() }

    deinit { task.cancel() }
}
