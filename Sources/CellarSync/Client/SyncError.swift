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
        case .store(let error):
            error.description
        }
    }
}
