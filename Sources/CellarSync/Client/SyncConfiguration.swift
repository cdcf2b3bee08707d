import Cellar
import Foundation

/// Where and what a ``SyncClient`` syncs.
public struct SyncConfiguration: Sendable {
    /// The server's base address, such as `http://127.0.0.1:8080`.
    public var server: URL
    /// The user's token (`cellar-server token --user NAME` makes one): it names the user whose records these are.
    public var token: String
    /// The models that sync. Each needs ids unique across devices (`UUID`, or text the app makes unique): an
    /// auto-increment model is refused. Every model a synced model links to must sync too.
    public var models: [any Model.Type]
    /// How many changes one push carries, at most `SyncProtocol.maxChanges`.
    public var pushBatchSize = 500
    /// How many changes one pull brings, at most `SyncProtocol.maxChanges`.
    public var pullBatchSize = 1_000
    /// How long a live pull waits for another device's change before asking again, in seconds.
    public var liveWait = 25
    /// How long the live loop waits before trying again after a failure; it doubles up to a minute.
    public var retryDelay: Duration = .milliseconds(500)

    /// Called as each push is about to be sent and once its answer came, before the outbox is cleared: the tests
    /// kill the process at those moments.
    @_spi(Testing) public var onPush: (@Sendable (PushMoment) -> Void)?

    @_spi(Testing)
    public enum PushMoment: Sendable, Equatable {
        case willSend
        case didSend
    }

    public init(server: URL, token: String, models: [any Model.Type]) {
        self.server = server
        self.token = token
        self.models = models
    }
}
