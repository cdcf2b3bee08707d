import Foundation

/// What a ``SyncClient`` is doing, and how much waits to be pushed.
public struct SyncStatus: Sendable, Hashable {
    public enum Activity: Sendable, Hashable {
        /// Not started, or stopped.
        case idle
        /// The server cannot be reached; changes wait in the outbox.
        case offline
        case pushing
        case pulling
        /// A client reset: downloading again what the server has, then pushing what it lacks
        /// (``ClientResetMode``).
        case resetting
        /// Everything this device had was pushed, and everything the server had was pulled.
        case upToDate
        /// The last round failed, for the reason given (a refusal by the server, a change that cannot apply).
        case error(String)
    }

    public var activity: Activity
    /// Records changed on this device and not yet pushed.
    public var pendingChanges: Int
    /// Pulled changes waiting for a link's target to arrive.
    public var waitingChanges: Int
    /// When the last round ended up to date.
    public var lastSynced: Date?

    public init(activity: Activity = .idle, pendingChanges: Int = 0, waitingChanges: Int = 0, lastSynced: Date? = nil) {
        self.activity = activity
        self.pendingChanges = pendingChanges
        self.waitingChanges = waitingChanges
        self.lastSynced = lastSynced
    }
}
