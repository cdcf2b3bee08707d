/// The messages a device and the server exchange, as JSON over HTTP. Every request carries
/// `Authorization: Bearer <token>`; the token names the user, and a user reads and writes only their own records.
///
/// - `POST /v1/push`: a ``PushRequest``, answered by a ``PushResponse``.
/// - `POST /v1/pull`: a ``PullRequest``, answered by a ``PullResponse``; with `wait` above zero and nothing new, the
///   answer waits (long poll) until another device pushes for the same user or the wait ends.
/// - Any refusal: an HTTP error status and a ``SyncFailure`` that says what was wrong, with nothing changed.
public enum SyncProtocol {
    public static let pushPath = "/v1/push"
    public static let pullPath = "/v1/pull"
    /// The most changes one push may carry, and one pull returns.
    public static let maxChanges = 1_000
    /// The largest request body the server reads, in bytes.
    public static let maxBodyBytes = 16 << 20
    /// How far ahead of the server's clock a stamp may be, in milliseconds: a device whose clock is further ahead
    /// is refused (its writes would otherwise win every conflict until real time caught up).
    public static let maxClockLeadMilliseconds: UInt64 = 5 * 60 * 1000
    /// The longest a pull may wait for a change, in seconds.
    public static let maxWaitSeconds = 60
}

/// A model as a device declares it with each request: its schema version, and the properties it has.
public struct ModelSchema: Sendable, Hashable, Codable {
    public var version: Int
    public var properties: [String]

    public init(version: Int, properties: [String]) {
        self.version = version
        self.properties = properties
    }
}

/// One record's change, pushed or pulled.
public struct RecordChange: Sendable, Hashable, Codable {
    public var model: String
    /// The record's id: the text of a string or UUID id, the digits of an integer id.
    public var id: String
    public var state: RecordState
    /// In a pull, the server's sequence number of this change; `nil` in a push.
    public var sequence: Int64?

    public init(model: String, id: String, state: RecordState, sequence: Int64? = nil) {
        self.model = model
        self.id = id
        self.state = state
        self.sequence = sequence
    }
}

public struct PushRequest: Sendable, Codable {
    /// The pushing device's id (32 lowercase hex digits).
    public var device: String
    /// Every model the changes belong to.
    public var models: [String: ModelSchema]
    public var changes: [RecordChange]

    public init(device: String, models: [String: ModelSchema], changes: [RecordChange]) {
        self.device = device
        self.models = models
        self.changes = changes
    }
}

public struct PushResponse: Sendable, Codable {
    /// How many records the push changed on the server; a push retried after its answer was lost changes none.
    public var applied: Int
    /// The user's newest server sequence after the push.
    public var sequence: Int64

    public init(applied: Int, sequence: Int64) {
        self.applied = applied
        self.sequence = sequence
    }
}

public struct PullRequest: Sendable, Codable {
    public var device: String
    /// The models the device holds: a device whose model is older than the server's is refused.
    public var models: [String: ModelSchema]
    /// The server sequence the device has: changes after it are returned, in sequence order.
    public var after: Int64
    public var limit: Int
    /// Seconds to wait for a change when there is none (long poll); 0 answers at once.
    public var wait: Int

    public init(device: String, models: [String: ModelSchema], after: Int64, limit: Int, wait: Int) {
        self.device = device
        self.models = models
        self.after = after
        self.limit = limit
        self.wait = wait
    }
}

public struct PullResponse: Sendable, Codable {
    /// The changes after the request's `after`, in sequence order: the newest state of each record.
    public var changes: [RecordChange]
    /// The sequence to ask after next time.
    public var sequence: Int64
    /// Whether more changes wait beyond `limit`.
    public var more: Bool

    public init(changes: [RecordChange], sequence: Int64, more: Bool) {
        self.changes = changes
        self.sequence = sequence
        self.more = more
    }
}

/// A refusal: `code` for programs, `reason` for people.
public struct SyncFailure: Sendable, Codable, Error, CustomStringConvertible {
    public enum Code: String, Sendable, Codable {
        /// No token, or one the server does not know.
        case unauthorized
        /// The body is not the JSON the endpoint reads.
        case badRequest
        /// A change names a model the request does not declare, or a property its model does not have.
        case unknownModel
        /// The device's model is older than one the server has records of: the app needs an update.
        case schemaOutdated
        /// More changes or bytes than the server takes in one request.
        case tooLarge
        /// A stamp that is not one, or from further ahead than the server's clock allows.
        case invalidStamp
        /// The server could not reach its database; try again later.
        case unavailable
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}

extension SyncProtocol {
    /// The longest record id a server stores, in UTF-8 bytes: ids are part of PostgreSQL's primary key, whose index
    /// entries must stay well under a page.
    public static let maxIDBytes = 1_000
    /// The longest model or property name, in UTF-8 bytes.
    public static let maxNameBytes = 255
}

extension JSONValue {
    /// Whether the value holds U+0000 in a string or an object's key, which PostgreSQL's `jsonb` cannot store.
    public var holdsNUL: Bool {
        switch self {
        case .null, .bool, .integer, .unsigned, .double: false
        case .string(let text): text.utf8.contains(0)
        case .array(let values): values.contains(where: \.holdsNUL)
        case .object(let members): members.contains { $0.key.utf8.contains(0) || $0.value.holdsNUL }
        }
    }
}

extension RecordChange {
    /// Why no server can store this change, in words; `nil` when one can. A client checks before it pushes, so that
    /// one such record does not hold back the changes after it.
    public var unstorableReason: String? {
        if id.isEmpty { return "its id is empty" }
        if id.utf8.count > SyncProtocol.maxIDBytes || id.utf8.contains(0) {
            return "its id is longer than \(SyncProtocol.maxIDBytes) UTF-8 bytes, or holds U+0000"
        }
        for (name, value) in state.fields.sorted(by: { $0.key < $1.key }) where value.holdsNUL {
            return "its \"\(name)\" holds U+0000 in a string or key, which PostgreSQL's jsonb cannot store"
        }
        return nil
    }
}
