@_spi(Sync) import Cellar
import CellarSync
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// A database an earlier server made is brought to today's tables at start, and its records sync.
@Suite("Sync: a database of an earlier server", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct UpgradeTests {
    /// The tables as the server of 2026-11-28 made them: records in `jsonb`, no transactions.
    static let earlierTables = """
        CREATE TABLE cellar_tokens (token_hash bytea PRIMARY KEY, owner text NOT NULL,
            created timestamptz NOT NULL DEFAULT now());
        CREATE TABLE cellar_owners (owner text PRIMARY KEY, sequence bigint NOT NULL DEFAULT 0);
        CREATE TABLE cellar_models (owner text NOT NULL, model text NOT NULL, version int NOT NULL,
            properties jsonb NOT NULL, PRIMARY KEY (owner, model));
        CREATE TABLE cellar_records (owner text NOT NULL, model text NOT NULL, id text NOT NULL, record jsonb NOT NULL,
            stamps jsonb NOT NULL, version text NOT NULL, tombstone boolean NOT NULL, deleted text NULL,
            sequence bigint NOT NULL, device text NOT NULL, updated timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (owner, model, id));
        """

    /// Before the upgrade wrote a transaction for each earlier row, a device pulling two at a time got the same page
    /// forever (its cursor named no transaction).
    @Test func anEarlierDatabasesRecordsSyncPageByPage() async throws {
        let database = "upgrade_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
        _ = try await Harness.sql("CREATE DATABASE \(database) OWNER cellar", asSuperuser: true)
        _ = try await Harness.sql(Self.earlierTables, database: database)
        let device = Harness.device("9")
        let stamp = Harness.stamp(device)
        var rows: [String] = []
        for number in 1...5 {
            let record = #"{"id": "c\#(number)", "title": "earlier \#(number)", "tags": [], "rank": \#(number)}"#
            // Every property stamped, the nil ones too, as a device pushes them.
            let stamps = ["id", "title", "tags", "rank", "body", "folder"].map { #""\#($0)": "\#(stamp)""# }
                .joined(separator: ", ")
            rows.append(
                "('ann', 'Card', 'c\(number)', '\(record)', '{\(stamps)}', '\(stamp)', false, NULL, \(number), '\(device)')"
            )
        }
        _ = try await Harness.sql(
            "INSERT INTO cellar_owners VALUES ('ann', 5); "
                + "INSERT INTO cellar_records (owner, model, id, record, stamps, version, tombstone, deleted, sequence, "
                + "device) VALUES " + rows.joined(separator: ", "),
            database: database)

        let server = try await ServerProcess(environment: ["CELLAR_DATABASE_NAME": database])
        let (status, output) = try await Harness.run(
            Harness.executable, ["token", "--user", "ann", "--database-name", database])
        try #require(status == 0)
        let token = output.trimmingCharacters(in: .whitespacesAndNewlines)
        var configuration = SyncConfiguration(server: server.url, token: token, models: Synced.models)
        configuration.pullBatchSize = 2
        let reader = try SyncedDevice(configuration: configuration)
        try await reader.client.sync()
        #expect(
            try await reader.store.read { try $0.objects(Synced.Card.self).sorted(by: \.id).results().map(\.id) }
                == ["c1", "c2", "c3", "c4", "c5"])
        let commits = try await Harness.sql(
            "SELECT string_agg(sequence::text, ',' ORDER BY sequence) FROM cellar_commits WHERE owner = 'ann'",
            database: database)
        #expect(commits == "1,2,3,4,5", "\(commits)")
        server.stop()
        _ = try await Harness.sql("DROP DATABASE \(database) WITH (FORCE)", asSuperuser: true)
    }
}
