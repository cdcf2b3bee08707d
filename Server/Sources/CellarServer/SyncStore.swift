import CellarSyncProtocol
import Foundation
import PostgresNIO

/// Where the server keeps everything: PostgreSQL, through one connection pool. Two server processes on one database
/// serve the same users: no state lives in a process but the waiting pulls.
public struct SyncStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger

    /// The channel pushes notify on, with the owner as payload.
    public static let channel = "cellar_sync"
    /// The advisory lock that serializes the creation of the tables between processes that start at once.
    static let schemaLock: Int64 = 0x6365_6c6c_6172  // "cellar"

    /// For the tests of a server killed in the middle of a push: how long a push's transaction waits, its rows
    /// written, before it commits (`CELLAR_SERVER_TEST_COMMIT_DELAY_MS`); `nil` everywhere else.
    static let commitDelay: Duration? = ProcessInfo.processInfo.environment["CELLAR_SERVER_TEST_COMMIT_DELAY_MS"]
        .flatMap { Int($0) }.map { .milliseconds($0) }

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    // MARK: Tables

    /// Creates the tables that are missing. Safe to run from several processes at once.
    public func createTables() async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.schemaLock))", logger: logger)
            for statement in Self.schema {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
        }
    }

    static let schema = [
        """
        CREATE TABLE IF NOT EXISTS cellar_tokens (
            token_hash bytea PRIMARY KEY,
            owner text NOT NULL,
            created timestamptz NOT NULL DEFAULT now()
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS cellar_owners (
            owner text PRIMARY KEY,
            sequence bigint NOT NULL DEFAULT 0
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS cellar_models (
            owner text NOT NULL,
            model text NOT NULL,
            version int NOT NULL,
            properties jsonb NOT NULL,
            PRIMARY KEY (owner, model)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS cellar_records (
            owner text NOT NULL,
            model text NOT NULL,
            id text NOT NULL,
            record jsonb NOT NULL,
            stamps jsonb NOT NULL,
            version text NOT NULL,
            tombstone boolean NOT NULL,
            deleted text NULL,
            sequence bigint NOT NULL,
            device text NOT NULL,
            updated timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (owner, model, id)
        )
        """,
        "CREATE INDEX IF NOT EXISTS cellar_records_owner_sequence ON cellar_records (owner, sequence)",
    ]

    // MARK: Tokens

    /// Makes a token for `owner`: 32 random bytes in hex. Only its SHA-256 is stored.
    public func createToken(owner: String) async throws -> String {
        var generator = SystemRandomNumberGenerator()
        let token = (0..<32).map { _ in
            let byte = UInt8.random(in: .min ... .max, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                "INSERT INTO cellar_tokens (token_hash, owner) VALUES (sha256(convert_to(\(token), 'UTF8')), \(owner))",
                logger: logger)
            try await connection.query(
                "INSERT INTO cellar_owners (owner) VALUES (\(owner)) ON CONFLICT (owner) DO NOTHING", logger: logger)
        }
        return token
    }

    /// The owner of `token`, or `nil` for a token the server does not know.
    public func owner(ofToken token: String) async throws -> String? {
        let rows = try await client.query(
            "SELECT owner FROM cellar_tokens WHERE token_hash = sha256(convert_to(\(token), 'UTF8'))", logger: logger)
        for try await owner in rows.decode(String.self) { return owner }
        return nil
    }

    // MARK: Push

    /// Merges a validated push into `owner`'s records, in one transaction: all of it or, on any error, none.
    public func push(_ push: PushRequest, owner: String) async throws -> PushResponse {
        let logger = self.logger
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // A refusal thrown inside rolls everything back: the owner's row, models upserted before the refused one.
        do {
            return try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    "INSERT INTO cellar_owners (owner) VALUES (\(owner)) ON CONFLICT (owner) DO NOTHING", logger: logger
                )
                // Locks the owner's row until COMMIT: one user's pushes take turns, so their sequence numbers are in
                // commit order, and a pull never sees a number before a smaller one is committed.
                var sequence: Int64 = 0
                for try await value in try await connection.query(
                    "SELECT sequence FROM cellar_owners WHERE owner = \(owner) FOR UPDATE", logger: logger
                ).decode(Int64.self) {
                    sequence = value
                }

                let held = try await Self.modelVersions(owner: owner, connection: connection, logger: logger)
                for (model, schema) in push.models.sorted(by: { $0.key < $1.key }) {
                    if let version = held[model], version > schema.version {
                        throw Self.outdated(model: model, server: version, device: schema.version)
                    }
                    if held[model].map({ $0 < schema.version }) ?? true {
                        let properties = String(decoding: try encoder.encode(schema.properties), as: UTF8.self)
                        try await connection.query(
                            """
                            INSERT INTO cellar_models (owner, model, version, properties)
                            VALUES (\(owner), \(model), \(schema.version), \(properties)::jsonb)
                            ON CONFLICT (owner, model) DO UPDATE SET version = excluded.version,
                                properties = excluded.properties
                            """,
                            logger: logger)
                    }
                }

                // The push's records, read in one query and locked; merged in memory (a record named twice in one
                // push merges twice); the changed ones written in one statement.
                let keys = push.changes.map { RecordKey(model: $0.model, id: $0.id) }
                var states = try await Self.records(owner: owner, keys: keys, connection: connection, logger: logger)
                // In the push's order, each record once.
                var changed: [RecordKey] = []
                var seen = Set<RecordKey>()
                for change in push.changes {
                    let key = RecordKey(model: change.model, id: change.id)
                    let existing = states[key] ?? RecordState()
                    let merged = existing.merged(with: change.state)
                    guard merged != existing else { continue }
                    if seen.insert(key).inserted { changed.append(key) }
                    states[key] = merged
                }
                var columns = RecordColumns()
                for key in changed {
                    guard let merged = states[key] else { continue }
                    sequence += 1
                    try columns.append(key, merged, sequence: sequence, encoder: encoder)
                }
                let applied = changed.count
                if applied > 0 {
                    try await connection.query(
                        """
                        INSERT INTO cellar_records
                            (owner, model, id, record, stamps, version, tombstone, deleted, sequence, device, updated)
                        SELECT \(owner), model, id, record::jsonb, stamps::jsonb, version, tombstone,
                            NULLIF(deleted, ''), sequence, \(push.device), now()
                        FROM unnest(\(columns.models)::text[], \(columns.ids)::text[], \(columns.records)::text[],
                            \(columns.stamps)::text[], \(columns.versions)::text[], \(columns.tombstones)::boolean[],
                            \(columns.deleted)::text[], \(columns.sequences)::bigint[])
                            AS change(model, id, record, stamps, version, tombstone, deleted, sequence)
                        ON CONFLICT (owner, model, id) DO UPDATE SET record = excluded.record, stamps = excluded.stamps,
                            version = excluded.version, tombstone = excluded.tombstone, deleted = excluded.deleted,
                            sequence = excluded.sequence, device = excluded.device, updated = excluded.updated
                        """,
                        logger: logger)
                }
                if applied > 0 {
                    try await connection.query(
                        "UPDATE cellar_owners SET sequence = \(sequence) WHERE owner = \(owner)", logger: logger)
                    // Delivered at COMMIT, to every listening server process: theirs wake their waiting pulls.
                    try await connection.query("SELECT pg_notify(\(Self.channel), \(owner))", logger: logger)
                }
                if let delay = Self.commitDelay { try await Task.sleep(for: delay) }
                return PushResponse(applied: applied, sequence: sequence)
            }
        } catch let error as PostgresTransactionError {
            if let failure = error.closureError as? SyncFailure, error.rollbackError == nil { throw failure }
            throw error
        }
    }

    // MARK: Pull

    /// Checks that the device's models are no older than the server's: an old app would drop properties it does
    /// not know from records it pulled, and push them back without.
    public func checkSchema(_ models: [String: ModelSchema], owner: String) async throws {
        guard !models.isEmpty else { return }
        let held = try await client.withConnection { connection in
            try await Self.modelVersions(owner: owner, connection: connection, logger: logger)
        }
        for (model, schema) in models.sorted(by: { $0.key < $1.key }) {
            if let version = held[model], version > schema.version {
                throw Self.outdated(model: model, server: version, device: schema.version)
            }
        }
    }

    /// `owner`'s changes after `after`, at most `limit` of them, in sequence order.
    public func changes(owner: String, after: Int64, limit: Int) async throws -> PullResponse {
        let rows = try await client.query(
            """
            SELECT model, id, record::text, stamps::text, deleted, sequence FROM cellar_records
            WHERE owner = \(owner) AND sequence > \(after) ORDER BY sequence LIMIT \(limit + 1)
            """,
            logger: logger)
        var changes: [RecordChange] = []
        for try await (model, id, record, stamps, deleted, sequence) in rows.decode(
            (String, String, String, String, String?, Int64).self)
        {
            let state = try Self.state(record: record, stamps: stamps, deleted: deleted)
            changes.append(RecordChange(model: model, id: id, state: state, sequence: sequence))
        }
        let more = changes.count > limit
        if more { changes.removeLast() }
        return PullResponse(changes: changes, sequence: changes.last?.sequence ?? after, more: more)
    }

    // MARK: Listening

    /// Listens on ``channel`` with one dedicated connection and hands each notified owner to `notifier`, until the
    /// task is cancelled. A lost connection is opened again; meanwhile every waiting pull is woken, since a
    /// notification may have been lost.
    public func listen(notifier: Notifier) async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        notifier.setListening(true)
                        for try await notification in notifications {
                            notifier.notify(owner: notification.payload)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("the connection that listens for pushes failed: \(error); opening another")
            }
            notifier.setListening(false)
            notifier.notifyAll()
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    // MARK: Rows

    static func modelVersions(
        owner: String, connection: PostgresConnection, logger: Logger
    ) async throws -> [String: Int] {
        var versions: [String: Int] = [:]
        let rows = try await connection.query(
            "SELECT model, version FROM cellar_models WHERE owner = \(owner)", logger: logger)
        for try await (model, version) in rows.decode((String, Int).self) { versions[model] = version }
        return versions
    }

    /// The rows of `keys` the user has, locked until the transaction ends, by key.
    static func records(
        owner: String, keys: [RecordKey], connection: PostgresConnection, logger: Logger
    ) async throws -> [RecordKey: RecordState] {
        guard !keys.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT r.model, r.id, r.record::text, r.stamps::text, r.deleted FROM cellar_records r
            JOIN unnest(\(keys.map(\.model))::text[], \(keys.map(\.id))::text[]) AS k(model, id)
                ON r.model = k.model AND r.id = k.id
            WHERE r.owner = \(owner)
            ORDER BY r.model, r.id
            FOR UPDATE OF r
            """,
            logger: logger)
        var states: [RecordKey: RecordState] = [:]
        for try await (model, id, record, stamps, deleted) in rows.decode(
            (String, String, String, String, String?).self)
        {
            states[RecordKey(model: model, id: id)] = try state(record: record, stamps: stamps, deleted: deleted)
        }
        return states
    }

    /// A row's columns as the state both sides merge.
    static func state(record: String, stamps: String, deleted: String?) throws -> RecordState {
        let decoder = JSONDecoder()
        let fields = try decoder.decode([String: JSONValue].self, from: Data(record.utf8))
        let stamps = try decoder.decode([String: SyncStamp].self, from: Data(stamps.utf8))
        return RecordState(fields: fields, stamps: stamps, deleted: deleted.flatMap(SyncStamp.init))
    }

    static func outdated(model: String, server: Int, device: Int) -> SyncFailure {
        SyncFailure(
            .schemaOutdated,
            "the server holds \(model) records of schema version \(server); this device has version \(device): "
                + "update the app")
    }
}

/// A record's key within one user's rows.
struct RecordKey: Hashable {
    let model: String
    let id: String
}

/// The changed rows of a push, column by column, for one `INSERT … SELECT FROM unnest(…)`.
struct RecordColumns {
    var models: [String] = []
    var ids: [String] = []
    var records: [String] = []
    var stamps: [String] = []
    var versions: [String] = []
    var tombstones: [Bool] = []
    /// The tombstone's stamp, or "" (NULL in the row).
    var deleted: [String] = []
    var sequences: [Int64] = []

    mutating func append(_ key: RecordKey, _ state: RecordState, sequence: Int64, encoder: JSONEncoder) throws {
        let record = String(decoding: try encoder.encode(state.fields), as: UTF8.self)
        let stamps = String(decoding: try encoder.encode(state.stamps.mapValues(\.description)), as: UTF8.self)
        models.append(key.model)
        ids.append(key.id)
        records.append(record)
        self.stamps.append(stamps)
        versions.append(state.version?.description ?? "")
        tombstones.append(state.deleted != nil)
        deleted.append(state.deleted?.description ?? "")
        self.sequences.append(sequence)
    }
}
