import Cellar
import CellarSyncProtocol

/// Why sync failed. Each case says what happened; its `description` also says what to do.
public enum SyncError: Error, Sendable, CustomStringConvertible {
    /// A model numbers its ids from a sequence: two devices would give two records the same id.
    case autoIncrementModel(model: String)
    /// A model's ids are of a type sync cannot name in text.
    case unsupportedID(model: String, type: String)
    /// A synced model links to a model that does not sync: its links would lead nowhere on other devices.
    case linkToUnsyncedModel(model: String, target: String)
    /// The server refused a request, saying why.
    case server(SyncFailure)
    /// The server could not be reached, or answered with something that is not the protocol.
    case unreachable(reason: String)
    /// The server sent a change this device cannot apply.
    case invalidChange(model: String, id: String, reason: String)
    /// The store's sync state belongs to another user than the token's: sign out first (``SyncClient/signOut(discardingUnsyncedChanges:)``),
    /// or give this user a store of their own.
    case signedInAsAnotherUser(storeUser: String, tokenUser: String)
    /// The server cannot vouch for where this device stands (its database was restored, failed over or made again,
    /// or it is another server), and the configuration's ``ClientResetMode`` is `.manual`: call
    /// ``SyncClient/resetClient(_:)``.
    case clientResetRequired(reason: String)
    /// A sign-out that would lose changes not pushed yet, and was not asked to discard them.
    case unsyncedChanges(count: Int)
    /// A sign-out by a client that does not sync every model the store syncs: it cannot delete their records.
    case signOutMissesModels([String])
    /// The client signed out: make a new one for the next user.
    case signedOut
    /// A reset or a new token came while a request was on its way: its answer was not applied, and the next round
    /// starts afresh. The live loop retries at once.
    case interrupted
    /// The store failed.
    case store(StoreError)

    public var description: String {
        switch self {
        case .autoIncrementModel(let model):
            "\(model) numbers its ids from a sequence (autoIncrement), so two devices would give two different "
                + "records the same id. Give it UUID ids (`var id = UUID()`) or text ids the app makes unique to sync it."
        case .unsupportedID(let model, let type):
            "\(model)'s ids are \(type); sync names records by String, UUID or integer ids. Use one of those."
        case .linkToUnsyncedModel(let model, let target):
            "\(model) links to \(target), which is not in the sync configuration's models: its links would lead "
                + "nowhere on other devices. Sync \(target) too."
        case .server(let failure):
            "The sync server refused the request: \(failure.reason)"
        case .unreachable(let reason):
            "The sync server could not be reached (\(reason)). Changes wait in the outbox and are pushed when it is."
        case .invalidChange(let model, let id, let reason):
            "The server sent a change of the \(model) with id \(id) that this device cannot apply: \(reason)."
        case .signedInAsAnotherUser(let storeUser, let tokenUser):
            "This store syncs the records of the user \"\(storeUser)\", and the token signs in as \"\(tokenUser)\": "
                + "no record crosses accounts. Sign out first (SyncClient.signOut, which deletes the store's synced "
                + "records), or open a store of this user's own."
        case .clientResetRequired(let reason):
            "The sync server cannot vouch for where this device stands (\(reason)). Call resetClient(_:) to download "
                + "again what it has, recovering or discarding this device's changes."
        case .unsyncedChanges(let count):
            "\(count) changed record(s) of this store were not pushed yet: signing out now would lose them. Sync "
                + "first, or sign out with discardingUnsyncedChanges: true."
        case .signOutMissesModels(let models):
            "The store also syncs \(models.joined(separator: ", ")), which this client's configuration does not name: "
                + "sign out with a client configured with every synced model."
        case .signedOut:
            "This client signed out of its store: make a new SyncClient for the next user."
        case .interrupted:
            "A client reset or a new token came while a request was on its way; its answer was not applied. Sync again."
        case .store(let error):
            error.description
        }
    }
}
