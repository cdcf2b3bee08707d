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

    /// The tables, and the changes that bring an older database to them. Each statement is safe to run again.
    ///
    /// - `cellar_server`: one row, the server's identity, made with the database: a device binds its store to it,
    ///   and a database made again (or another server) has another.
    /// - `cellar_commits`: one row per transaction a push committed, by the sequence it ends at, with a random id. A
    ///   device's cursor names one; a restored or failed-over database that lost it cannot vouch for the cursor.
    /// - `cellar_records`: the newest state of each record. `record` is `json`, not `jsonb`: `json` keeps a number's
    ///   text (`jsonb` makes `-0.0` into `0.0` and rewrites exponents). `commit_sequence` is the sequence the row's
    ///   transaction ends at (a pull returns whole transactions); `bytes` the size of its JSON (pull pages are bounded
    ///   in bytes without reading the rows).
    static let schema = [
        """
        CREATE TABLE IF NOT EXISTS cellar_server (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            id text NOT NULL,
            created timestamptz NOT NULL DEFAULT now()
        )
        """,
        "INSERT INTO cellar_server (id) VALUES (gen_random_uuid()::text) ON CONFLICT DO NOTHING",
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
        CREATE TABLE IF NOT EXISTS cellar_commits (
            owner text NOT NULL,
            sequence bigint NOT NULL,
            id text NOT NULL,
            device text NOT NULL,
            committed timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (owner, sequence)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS cellar_records (
            owner text NOT NULL,
            model text NOT NULL,
            id text NOT NULL,
            record json NOT NULL,
            stamps jsonb NOT NULL,
            version text NOT NULL,
            tombstone boolean NOT NULL,
            deleted text NULL,
            sequence bigint NOT NULL,
            commit_sequence bigint NOT NULL,
            bytes integer NOT NULL,
            device text NOT NULL,
            updated timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (owner, model, id)
        )
        """,
        // A database made by an earlier server: its rows become transactions of their own.
        """
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                AND table_name = 'cellar_records' AND column_name = 'commit_sequence')
            THEN
                ALTER TABLE cellar_records ADD COLUMN commit_sequence bigint;
                UPDATE cellar_records SET commit_sequence = sequence;
                ALTER TABLE cellar_records ALTER COLUMN commit_sequence SET NOT NULL;
                ALTER TABLE cellar_records ADD COLUMN bytes integer NOT NULL DEFAULT 0;
                ALTER TABLE cellar_records ALTER COLUMN record TYPE json USING record::text::json;
                -- Each old row is a transaction of its own, which a cursor can name.
                INSERT INTO cellar_commits (owner, sequence, id, device)
                SELECT owner, sequence, gen_random_uuid()::text, device FROM cellar_records
                ON CONFLICT DO NOTHING;
            END IF;
        END $$
        """,
        "CREATE INDEX IF NOT EXISTS cellar_records_owner_sequence ON cellar_records (owner, sequence)",
        // Guarded, as the block above: an ALTER that changes nothing still takes the table's strongest lock, and would
        // stall (or deadlock with) the pushes of servers already running.
        """
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema()
                AND table_name = 'cellar_models' AND column_name = 'required')
            THEN
                ALTER TABLE cellar_models ADD COLUMN required jsonb NOT NULL DEFAULT '[]';
            END IF;
        END $$
        """,
    ]

    /// The server's identity (`cellar_server`).
    public func identity() async throws -> String {
        let rows = try await client.query("SELECT id FROM cellar_server", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        throw SyncServer.StartupError(description: "the table cellar_server is empty: run the server once to fill it")
    }

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

                // The newest version of each model the user's devices declared: an older device is judged by it.
                let held = try await Self.modelSchemas(owner: owner, connection: connection, logger: logger)
                var newest: [String: ModelSchema] = [:]
                for (model, schema) in push.models.sorted(by: { $0.key < $1.key }) {
                    if let stored = held[model], stored.version > schema.version {
                        newest[model] = stored
                        continue
                    }
                    newest[model] = schema
                    guard held[model] != schema else { continue }
                    func text(_ names: [String]) -> String {
                        String(decoding: JSONValue.array(names.map(JSONValue.string)).serialized(), as: UTF8.self)
                    }
                    try await connection.query(
                        """
                        INSERT INTO cellar_models (owner, model, version, properties, required)
                        VALUES (\(owner), \(model), \(schema.version), \(text(schema.properties))::jsonb,
                            \(text(schema.required))::jsonb)
                        ON CONFLICT (owner, model) DO UPDATE SET version = excluded.version,
                            properties = excluded.properties, required = excluded.required
                        """,
                        logger: logger)
                }

                // The push's records, read in one query and locked; merged in memory (a record named twice in one
                // push merges twice); the changed ones written in one statement.
                let keys = push.changes.map { RecordKey(model: $0.model, id: $0.id) }
                var states = try await Self.records(owner: owner, keys: keys, connection: connection, logger: logger)
                // In the push's order, each record once.
                var changed: [RecordKey] = []
                var seen = Set<RecordKey>()
                var refused: [RefusedChange] = []
                for change in push.changes {
                    let key = RecordKey(model: change.model, id: change.id)
                    let existing = states[key] ?? RecordState()
                    let merged = existing.merged(with: change.state)
                    guard merged != existing else { continue }
                    if states[key] == nil, merged.deleted == nil {
                        // Refused alone: the push's other changes go.
                        do throws(SyncFailure) {
                            try Self.checkRequired(
                                change, merged, declared: push.models[change.model], newest: newest[change.model])
                        } catch {
                            refused.append(RefusedChange(model: change.model, id: change.id, failure: error))
                            continue
                        }
                    }
                    if seen.insert(key).inserted { changed.append(key) }
                    states[key] = merged
                }
                let applied = changed.count
                guard applied > 0 else { return PushResponse(applied: 0, sequence: sequence, refused: refused) }
                let end = sequence + Int64(applied)
                var columns = RecordColumns()
                for key in changed {
                    guard let merged = states[key] else { continue }
                    sequence += 1
                    try columns.append(key, merged, sequence: sequence)
                }
                try await connection.query(
                    """
                    INSERT INTO cellar_records (owner, model, id, record, stamps, version, tombstone, deleted,
                        sequence, commit_sequence, bytes, device, updated)
                    SELECT \(owner), model, id, record::json, stamps::jsonb, version, tombstone, NULLIF(deleted, ''),
                        sequence, \(end), bytes, \(push.device), now()
                    FROM unnest(\(columns.models)::text[], \(columns.ids)::text[], \(columns.records)::text[],
                        \(columns.stamps)::text[], \(columns.versions)::text[], \(columns.tombstones)::boolean[],
                        \(columns.deleted)::text[], \(columns.sequences)::bigint[], \(columns.bytes)::integer[])
                        AS change(model, id, record, stamps, version, tombstone, deleted, sequence, bytes)
                    ON CONFLICT (owner, model, id) DO UPDATE SET record = excluded.record, stamps = excluded.stamps,
                        version = excluded.version, tombstone = excluded.tombstone, deleted = excluded.deleted,
                        sequence = excluded.sequence, commit_sequence = excluded.commit_sequence,
                        bytes = excluded.bytes, device = excluded.device, updated = excluded.updated
                    """,
                    logger: logger)
                // The transaction's id: a cursor that stands on it names it, and a database that lost it (restored
                // from a backup taken before) has no such row.
                let commit = UUID().uuidString.lowercased()
                try await connection.query(
                    """
                    INSERT INTO cellar_commits (owner, sequence, id, device)
                    VALUES (\(owner), \(end), \(commit), \(push.device))
                    """,
                    logger: logger)
                try await connection.query(
                    "UPDATE cellar_owners SET sequence = \(end) WHERE owner = \(owner)", logger: logger)
                // Delivered at COMMIT, to every listening server process: theirs wake their waiting pulls.
                try await connection.query("SELECT pg_notify(\(Self.channel), \(owner))", logger: logger)
                if let delay = Self.commitDelay { try await Task.sleep(for: delay) }
                return PushResponse(
                    applied: applied, sequence: end, commit: SyncCursor(sequence: end, commit: commit), refused: refused
                )
            }
        } catch let error as PostgresTransactionError {
            if let failure = error.closureError as? SyncFailure, error.rollbackError == nil { throw failure }
            throw error
        }
    }

    // MARK: Pull

    /// Checks that the newer versions of the device's models still have every property the device requires: it reads
    /// the records they write. A newer version that only added properties is no reason to refuse.
    public func checkSchema(_ models: [String: ModelSchema], owner: String) async throws {
        guard !models.isEmpty else { return }
        let held = try await client.withConnection { connection in
            try await Self.modelSchemas(owner: owner, connection: connection, logger: logger)
        }
        for (model, schema) in models.sorted(by: { $0.key < $1.key }) {
            guard let stored = held[model], stored.version > schema.version else { continue }
            let gone = Set(schema.required).subtracting(stored.properties).sorted()
            if let property = gone.first {
                throw SyncFailure(
                    .schemaOutdated,
                    "\(model).\(property) is required by this device's version \(schema.version) of the model, and "
                        + "version \(stored.version), which other devices of this user run, no longer has it: "
                        + "their records would not read here; update the app")
            }
        }
    }

    /// `owner`'s changes of `models` after `cursor`, in sequence order and whole transactions: at most `limit`
    /// changes and `maxBytes` bytes of records, but for a first transaction that has more. One snapshot answers it
    /// all (`REPEATABLE READ`), so the cursor it returns stands exactly where the changes end.
    ///
    /// - Throws: `SyncFailure.resetRequired` when the cursor names a transaction this database does not hold.
    public func changes(
        owner: String, models: [String], after cursor: SyncCursor?, pushed: SyncCursor? = nil, limit: Int,
        maxBytes: Int = SyncProtocol.maxPullBytes
    ) async throws -> PullResponse {
        let logger = self.logger
        do {
            return try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                let after = cursor?.sequence ?? 0
                for (name, named) in [("stands on", cursor), ("pushed", pushed)] {
                    guard let named, named.sequence > 0 else { continue }
                    var held: String?
                    for try await id in try await connection.query(
                        "SELECT id FROM cellar_commits WHERE owner = \(owner) AND sequence = \(named.sequence)",
                        logger: logger
                    ).decode(String.self) {
                        held = id
                    }
                    guard held == named.commit else {
                        throw SyncFailure(
                            .resetRequired,
                            "this server does not hold the transaction \(named.commit.prefix(40)) at sequence "
                                + "\(named.sequence) that the device \(name): its database was restored, failed over "
                                + "or made again since; the device must reset (download again, then push what the "
                                + "server lacks)")
                    }
                }
                // Which transactions fit, from the sizes alone.
                var groups: [(end: Int64, count: Int, bytes: Int)] = []
                var rows = 0
                for try await (commitSequence, bytes) in try await connection.query(
                    """
                    SELECT commit_sequence, bytes FROM cellar_records
                    WHERE owner = \(owner) AND model = ANY(\(models)::text[]) AND sequence > \(after)
                    ORDER BY sequence LIMIT \(limit + 1)
                    """,
                    logger: logger
                ).decode((Int64, Int32).self) {
                    rows += 1
                    if groups.last?.end == commitSequence {
                        groups[groups.count - 1].count += 1
                        groups[groups.count - 1].bytes += Int(bytes)
                    } else {
                        groups.append((commitSequence, 1, Int(bytes)))
                    }
                }
                // The last transaction may be cut by the limit: it goes in a later page, unless it is the first.
                let complete = rows <= limit ? groups.count : groups.count - 1
                var boundary: Int64?
                var taken = 0
                var count = 0
                var bytes = 0
                for (position, group) in groups.enumerated() {
                    let fits = position < complete && count + group.count <= limit && bytes + group.bytes <= maxBytes
                    guard position == 0 || fits else { break }
                    boundary = group.end
                    count += group.count
                    bytes += group.bytes
                    taken += 1
                }
                let more = taken < groups.count || rows > limit
                var changes: [RecordChange] = []
                if let boundary {
                    let rows = try await connection.query(
                        """
                        SELECT model, id, record::text, stamps::text, deleted, sequence FROM cellar_records
                        WHERE owner = \(owner) AND model = ANY(\(models)::text[]) AND sequence > \(after)
                            AND sequence <= \(boundary)
                        ORDER BY sequence
                        """,
                        logger: logger)
                    for try await (model, id, record, stamps, deleted, sequence) in rows.decode(
                        (String, String, String, String, String?, Int64).self)
                    {
                        let state = try Self.state(record: record, stamps: stamps, deleted: deleted)
                        changes.append(RecordChange(model: model, id: id, state: state, sequence: sequence))
                    }
                }
                // Where the device stands: past the page's last transaction, or, with nothing more of its models,
                // past every transaction of the user's (those of other models too).
                let standsOn =
                    more
                    ? try await Self.commit(owner: owner, at: boundary, connection: connection, logger: logger)
                    : try await Self.commit(owner: owner, at: nil, connection: connection, logger: logger)
                // A page with more after it always ends on a transaction; without its row the device could never move
                // past the page.
                if more, standsOn == nil {
                    throw SyncServer.StartupError(
                        description: "cellar_commits has no transaction at sequence \(boundary ?? 0) of a user's rows")
                }
                return PullResponse(changes: changes, cursor: standsOn ?? cursor, more: more)
            }
        } catch let error as PostgresTransactionError {
            if let failure = error.closureError as? SyncFailure, error.rollbackError == nil { throw failure }
            throw error
        }
    }

    /// The transaction of `owner` that ends at `sequence`, or the newest when `sequence` is `nil`.
    static func commit(
        owner: String, at sequence: Int64?, connection: PostgresConnection, logger: Logger
    ) async throws -> SyncCursor? {
        let rows =
            if let sequence {
                try await connection.query(
                    "SELECT sequence, id FROM cellar_commits WHERE owner = \(owner) AND sequence = \(sequence)",
                    logger: logger)
            } else {
                try await connection.query(
                    "SELECT sequence, id FROM cellar_commits WHERE owner = \(owner) ORDER BY sequence DESC LIMIT 1",
                    logger: logger)
            }
        for try await (sequence, id) in rows.decode((Int64, String).self) {
            return SyncCursor(sequence: sequence, commit: id)
        }
        return nil
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

    /// The newest schema of each of `owner`'s models.
    static func modelSchemas(
        owner: String, connection: PostgresConnection, logger: Logger
    ) async throws -> [String: ModelSchema] {
        var schemas: [String: ModelSchema] = [:]
        let rows = try await connection.query(
            "SELECT model, version, properties::text, required::text FROM cellar_models WHERE owner = \(owner)",
            logger: logger)
        for try await (model, version, properties, required) in rows.decode((String, Int, String, String).self) {
            func names(_ text: String) -> [String] {
                guard case .array(let values)? = try? JSONValue(parsing: text.utf8) else { return [] }
                return values.compactMap { if case .string(let name) = $0 { name } else { nil } }
            }
            schemas[model] = ModelSchema(version: version, properties: names(properties), required: names(required))
        }
        return schemas
    }

    /// Refuses a new record without a property its model requires: in the pushing device's version (its mistake,
    /// or another client's), or in a newer version the device does not know (the app needs an update).
    static func checkRequired(
        _ change: RecordChange, _ merged: RecordState, declared: ModelSchema?, newest: ModelSchema?
    ) throws(SyncFailure) {
        let held = Set(merged.fields.keys)
        let missing = Set(declared?.required ?? []).subtracting(held).sorted()
        if !missing.isEmpty {
            throw SyncFailure(
                .invalidRecord,
                "the new \(change.model) with id \(change.id.prefix(80)) lacks the required "
                    + "propert\(missing.count == 1 ? "y" : "ies") \(missing.joined(separator: ", ")); every device "
                    + "would wait for them")
        }
        guard let newest, let declared, newest.version > declared.version else { return }
        let newer = Set(newest.required).subtracting(held).sorted()
        if let property = newer.first {
            throw SyncFailure(
                .schemaOutdated,
                "\(change.model).\(property) is required by version \(newest.version) of the model, which other "
                    + "devices of this user run; this device has version \(declared.version) and makes \(change.model) "
                    + "records without it: update the app (its other changes, and its edits of existing records, still sync)"
            )
        }
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
        guard case .object(let fields) = try JSONValue(parsing: record.utf8) else {
            throw SyncServer.StartupError(description: "a record in cellar_records is not a JSON object")
        }
        var parsed: [String: SyncStamp] = [:]
        guard case .object(let texts) = try JSONValue(parsing: stamps.utf8) else {
            throw SyncServer.StartupError(description: "a record's stamps in cellar_records are not a JSON object")
        }
        for (name, text) in texts {
            guard case .string(let text) = text, let stamp = SyncStamp(text) else {
                throw SyncServer.StartupError(description: "a record's stamp in cellar_records is not one")
            }
            parsed[name] = stamp
        }
        return RecordState(fields: fields, stamps: parsed, deleted: deleted.flatMap(SyncStamp.init))
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
    var bytes: [Int32] = []

    /// Adds a merged record.
    ///
    /// - Throws: `SyncFailure.tooLarge` when its JSON is past ``SyncProtocol/maxRecordBytes``.
    mutating func append(_ key: RecordKey, _ state: RecordState, sequence: Int64) throws(SyncFailure) {
        let record = String(decoding: JSONValue.object(state.fields).serialized(), as: UTF8.self)
        let stamps = String(
            decoding: JSONValue.object(state.stamps.mapValues { .string($0.description) }).serialized(), as: UTF8.self)
        let size = record.utf8.count + stamps.utf8.count
        guard size <= SyncProtocol.maxRecordBytes else {
            throw SyncFailure(
                .tooLarge,
                "the \(key.model) with id \(key.id.prefix(80)) would hold \(size) bytes of JSON once merged; the server "
                    + "keeps records of at most \(SyncProtocol.maxRecordBytes)")
        }
        models.append(key.model)
        ids.append(key.id)
        records.append(record)
        self.stamps.append(stamps)
        versions.append(state.version?.description ?? "")
        tombstones.append(state.deleted != nil)
        deleted.append(state.deleted?.description ?? "")
        sequences.append(sequence)
        bytes.append(Int32(size))
    }
}
