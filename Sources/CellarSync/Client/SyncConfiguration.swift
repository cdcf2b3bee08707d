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

    /// What a client reset does with this device's changes: a reset comes when the server cannot vouch for where the
    /// device stands (its database was restored from a backup or failed over, losing transactions; it was made
    /// again; or it is another server).
    public var clientReset: ClientResetMode = .recoverUnsyncedChanges
    /// Called before a client reset begins and after it ended (downloaded and pushed), on the client's actor.
    public var onClientReset: (@Sendable (ClientResetEvent) -> Void)?

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

/// What a client reset does with this device's records (Realm's modes, by the same names).
public enum ClientResetMode: Sendable, Hashable {
    /// Downloads what the server has, then pushes every record this device holds, pushed before or not, with its
    /// stamps: the server gets back what it lost, and each property keeps its latest write. Nothing is lost.
    case recoverUnsyncedChanges
    /// Deletes this device's records of the client's models, and downloads what the server has: changes the server
    /// does not hold are gone.
    case discardUnsyncedChanges
    /// Nothing happens until the app calls ``SyncClient/resetClient(_:)``: sync fails with
    /// ``SyncError/clientResetRequired(reason:)`` meanwhile.
    case manual
}

/// A client reset, before and after.
public enum ClientResetEvent: Sendable, Hashable {
    /// The reset begins: `reason` says why the server asked for it.
    case willReset(reason: String, mode: ClientResetMode)
    /// The reset ended: the server's records were downloaded, and (recovering) `repushed` records sent back.
    case didReset(mode: ClientResetMode, repushed: Int)
}

extension ClientResetMode: CustomStringConvertible {
    public var description: String {
        switch self {
        case .recoverUnsyncedChanges: "recover unsynced changes"
        case .discardUnsyncedChanges: "discard unsynced changes"
        case .manual: "manual"
        }
    }
}

extension ClientResetEvent: CustomStringConvertible {
    public var description: String {
        switch self {
        case .willReset(let reason, let mode): "reset begins (\(mode)): \(reason)"
        case .didReset(let mode, let repushed): "reset done (\(mode)): \(repushed) record(s) pushed back"
        }
    }
}
