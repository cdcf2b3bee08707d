/// The messages a device and the server exchange, as JSON over HTTP (read and written by ``JSONMessage``, so that
/// numbers keep their text). Every request carries `Authorization: Bearer <token>`; the token names the user, and a
/// user reads and writes only their own records.
///
/// - `POST /v1/session`: a ``SessionRequest``, answered by a ``SessionResponse``: which server this is, and which
///   user the token signs in as. A device asks before its first push or pull, and binds its store to both.
/// - `POST /v1/push`: a ``PushRequest``, answered by a ``PushResponse``.
/// - `POST /v1/pull`: a ``PullRequest``, answered by a ``PullResponse``; with `wait` above zero and nothing new, the
///   answer waits (long poll) until another device pushes for the same user or the wait ends.
/// - Any refusal: an HTTP error status and a ``SyncFailure`` that says what was wrong, with nothing changed.
public enum SyncProtocol {
    public static let sessionPath = "/v1/session"
    public static let pushPath = "/v1/push"
    public static let pullPath = "/v1/pull"
    /// The most changes one push may carry, and one pull returns (but for one transaction that has more).
    public static let maxChanges = 1_000
    /// The largest request body the server reads, in bytes.
    public static let maxBodyBytes = 16 << 20
    /// The most bytes of records a pull returns, but for one transaction that has more: a page holds whole
    /// transactions, and at least one.
    public static let maxPullBytes = 4 << 20
    /// The largest record the server keeps, in bytes of JSON (its properties and their stamps).
    public static let maxRecordBytes = 8 << 20
    /// How far ahead of the server's clock a stamp may be, in milliseconds: a device whose clock is further ahead
    /// is refused (its writes would otherwise win every conflict until real time caught up).
    public static let maxClockLeadMilliseconds: UInt64 = 5 * 60 * 1000
    /// The longest a pull may wait for a change, in seconds.
    public static let maxWaitSeconds = 60
    /// The longest record id a server stores, in UTF-8 bytes: ids are part of PostgreSQL's primary key, whose index
    /// entries must stay well under a page.
    public static let maxIDBytes = 1_000
    /// The longest model or property name, in UTF-8 bytes.
    public static let maxNameBytes = 255
}

/// A model as a device declares it with each request: its schema version, the properties it has, and those a record
/// must hold (every property that is not optional), by coding key.
///
/// The server keeps the newest version each user's devices declared, and judges older ones by it: an older app
/// keeps syncing a model whose newer version only added optional properties (it never erases them: a push carries
/// the properties it has, each with its stamp, merged property by property); it is refused (`schemaOutdated`, naming the property) when it makes a record
/// without a property the newer version requires, or when the newer version no longer has a property it requires.
public struct ModelSchema: Sendable, Hashable {
    public var version: Int
    public var properties: [String]
    public var required: [String]

    public init(version: Int, properties: [String], required: [String] = []) {
        self.version = version
        self.properties = properties
        self.required = required
    }
}

/// Where a device stands in its user's history on one server: the sequence of the last transaction it pulled, and
/// that transaction's id. The server answers a pull only when it holds that very transaction; otherwise (a database
/// restored from a backup, a failover that lost transactions, another server) it asks for a client reset.
public struct SyncCursor: Sendable, Hashable {
    public var sequence: Int64
    /// The id the server gave the transaction that ends at `sequence`.
    public var commit: String

    public init(sequence: Int64, commit: String) {
        self.sequence = sequence
        self.commit = commit
    }
}

/// One record's change, pushed or pulled.
public struct RecordChange: Sendable, Hashable {
    public var model: String
    /// The record's id: the text of a string or UUID id, the digits of an integer id. The server compares ids as a
    /// device does: two spellings of one text in different Unicode normal forms are one id (kept in NFC).
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

/// Which server this is and who the token signs in as; a device asks before it pushes or pulls anything.
public struct SessionRequest: Sendable {
    public var device: String

    public init(device: String) { self.device = device }
}

public struct SessionResponse: Sendable, Hashable {
    /// The server's identity: made once with its database, the same from every server process on it.
    public var server: String
    /// The user the token signs in as.
    public var user: String
    /// The server's clock, in milliseconds since 1970: a device stamps by it, whatever its own clock says.
    public var time: Int64

    public init(server: String, user: String, time: Int64) {
        self.server = server
        self.user = user
        self.time = time
    }
}

public struct PushRequest: Sendable {
    /// The pushing device's id (32 lowercase hex digits).
    public var device: String
    /// The user the device's store belongs to: a token of another user is refused (`wrongUser`).
    public var user: String?
    /// Every model the changes belong to.
    public var models: [String: ModelSchema]
    public var changes: [RecordChange]

    public init(device: String, user: String? = nil, models: [String: ModelSchema], changes: [RecordChange]) {
        self.device = device
        self.user = user
        self.models = models
        self.changes = changes
    }
}

public struct PushResponse: Sendable {
    /// How many records the push changed on the server; a push retried after its answer was lost changes none.
    public var applied: Int
    /// The user's newest server sequence after the push.
    public var sequence: Int64
    /// The transaction the push committed; `nil` when it changed nothing. The device names it in its pulls until it
    /// has pulled past it: a server that lost it (restored from a backup taken before) asks for a client reset.
    public var commit: SyncCursor?
    /// The changes the server refused one by one (a new record without a required property), the others applied:
    /// they stay in the device's outbox, and its status says why.
    public var refused: [RefusedChange]

    public init(applied: Int, sequence: Int64, commit: SyncCursor? = nil, refused: [RefusedChange] = []) {
        self.applied = applied
        self.sequence = sequence
        self.commit = commit
        self.refused = refused
    }
}

/// A change of a push the server did not apply, and why.
public struct RefusedChange: Sendable, Hashable {
    public var model: String
    public var id: String
    public var failure: SyncFailure

    public init(model: String, id: String, failure: SyncFailure) {
        self.model = model
        self.id = id
        self.failure = failure
    }
}

public struct PullRequest: Sendable {
    public var device: String
    /// The user the device's store belongs to: a token of another user is refused (`wrongUser`).
    public var user: String?
    /// The server the cursor was given by: another one asks for a client reset (`resetRequired`).
    public var server: String?
    /// The models the device holds: only their changes are returned. A device whose model is older than the
    /// server's is refused.
    public var models: [String: ModelSchema]
    /// Where the device stands; `nil` for the beginning.
    public var cursor: SyncCursor?
    /// The newest transaction this device pushed past its cursor (``PushResponse/commit``): the server must hold it
    /// too, or the device resets and pushes again what it lost.
    public var pushed: SyncCursor?
    public var limit: Int
    /// Seconds to wait for a change when there is none (long poll); 0 answers at once.
    public var wait: Int

    public init(
        device: String, user: String? = nil, server: String? = nil, models: [String: ModelSchema],
        cursor: SyncCursor?, pushed: SyncCursor? = nil, limit: Int, wait: Int
    ) {
        self.device = device
        self.user = user
        self.server = server
        self.models = models
        self.cursor = cursor
        self.pushed = pushed
        self.limit = limit
        self.wait = wait
    }
}

public struct PullResponse: Sendable {
    /// The changes of the request's models after its cursor, in sequence order: the newest state of each record, in
    /// whole transactions.
    public var changes: [RecordChange]
    /// Where the device stands once it applied `changes`; `nil` while the user has no transaction on the server.
    public var cursor: SyncCursor?
    /// Whether more changes wait beyond this page.
    public var more: Bool
    /// The server's clock, in milliseconds since 1970, as it answered.
    public var time: Int64?

    public init(changes: [RecordChange], cursor: SyncCursor?, more: Bool, time: Int64? = nil) {
        self.changes = changes
        self.cursor = cursor
        self.more = more
        self.time = time
    }
}

/// A refusal: `code` for programs, `reason` for people.
public struct SyncFailure: Sendable, Hashable, Error, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// No token, or one the server does not know.
        case unauthorized
        /// The token is another user's than the one the device's store belongs to.
        case wrongUser
        /// The body is not the JSON the endpoint reads.
        case badRequest
        /// A change names a model the request does not declare, or a property its model does not have.
        case unknownModel
        /// The device's model is older than one the user's other devices run, and the change needs what the newer
        /// one has (a property it requires): the app needs an update.
        case schemaOutdated
        /// A record the server cannot keep as it is: a new record without a property its model requires.
        case invalidRecord
        /// More changes or bytes than the server takes in one request.
        case tooLarge
        /// A stamp that is not one, or from further ahead than the server's clock allows.
        case invalidStamp
        /// The server cannot vouch for the device's cursor (restored, failed over, wiped, or another server): the
        /// device must download again what the server has, and push what the server lacks (a client reset).
        case resetRequired
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

extension RecordChange {
    /// Why no server can store this change, in words; `nil` when one can. A client checks before it pushes, so that
    /// one such record does not hold back the changes after it.
    public var unstorableReason: String? {
        if id.isEmpty { return "its id is empty" }
        if id.utf8.count > SyncProtocol.maxIDBytes || id.utf8.contains(0) {
            return "its id is longer than \(SyncProtocol.maxIDBytes) UTF-8 bytes, or holds U+0000"
        }
        for (name, value) in state.fields.sorted(by: { $0.key < $1.key }) where value.holdsNUL {
            return "its \"\(name)\" holds U+0000 in a string or key, which the server does not store"
        }
        return nil
    }
}
