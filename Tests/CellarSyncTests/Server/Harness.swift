import CellarSyncProtocol
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Real `cellar-server` processes (built in `Server/`) on the private cluster that `.ci/postgres start` made.
enum Harness {
    static let environment = ProcessInfo.processInfo.environment

    /// Whether a cluster is named: the tests that need one are skipped without it.
    static let hasDatabase = environment["CELLAR_DATABASE_SOCKET"].map { !$0.isEmpty } ?? false
    static let skipMessage: Comment =
        "needs a PostgreSQL cluster and the built server: `eval \"$(.ci/postgres start)\"` and `swift build --package-path Server` (`.ci/run` does both)"

    /// The built `cellar-server`: `CELLAR_SERVER_EXECUTABLE` if set (`.ci/run` sets it), else the server package's
    /// own `.build/debug` (`swift build --package-path Server`).
    static let executable: URL = {
        if let path = environment["CELLAR_SERVER_EXECUTABLE"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "Server/.build/debug/cellar-server")
    }()

    /// Whether the tests against real servers can run: a cluster is named and the server is built.
    static let canRun = hasDatabase && FileManager.default.isExecutableFile(atPath: executable.path)

    /// Runs a program to its end on a thread of its own, and returns its status and standard output.
    static func run(_ executable: URL, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let process = Process()
                process.executableURL = executable
                process.arguments = arguments
                let output = Pipe()
                process.standardOutput = output
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
            }
        }
    }

    /// A new token for `user`, made by `cellar-server token`.
    static func token(for user: String) async throws -> String {
        let (status, output) = try await run(executable, ["token", "--user", user])
        try #require(status == 0, "cellar-server token failed")
        let token = output.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(token.count == 64)
        return token
    }

    /// The rows of a query through psql, as text: one line a row, columns separated by `|`. As the cluster's
    /// superuser `postgres`, in `database`, when given.
    static func sql(_ query: String, asSuperuser: Bool = false, database: String? = nil) async throws -> String {
        let path = (environment["PATH"] ?? "").split(separator: ":").map { "\($0)/psql" }
        let debian = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted()
            .reversed().map { "/usr/lib/postgresql/\($0)/bin/psql" }
        let psql = (path + debian).first { FileManager.default.isExecutableFile(atPath: $0) }
        let (status, output) = try await run(
            URL(fileURLWithPath: psql ?? "/usr/bin/psql"),
            [
                "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", environment["CELLAR_DATABASE_SOCKET"] ?? "",
                "-U", asSuperuser ? "postgres" : environment["CELLAR_DATABASE_USER"] ?? "cellar", "-d",
                database ?? environment["CELLAR_DATABASE_NAME"] ?? "cellar", "-c", query,
            ])
        try #require(status == 0, "psql failed on: \(query)")
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A user name no other test uses, safe to quote in SQL.
    static func newUser(_ name: String) -> String {
        "\(name)-\(UUID().uuidString.lowercased())"
    }

    /// The stamp of a write `offset` milliseconds from now.
    static func stamp(_ device: String, offset: Int64 = 0, counter: UInt64 = 0) -> SyncStamp {
        let milliseconds = UInt64(Int64(Date().timeIntervalSince1970 * 1000) + offset)
        return SyncStamp(time: milliseconds << 16 | counter, device: device)
    }

    /// A device id: 32 times one hex digit.
    static func device(_ digit: Character) -> String { String(repeating: digit, count: 32) }
}

/// One `cellar-server serve` process (on a free port, or on `port`), killed when the value goes away.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    let url: URL

    init(port: Int = 0, environment extra: [String: String] = [:], arguments: [String] = []) async throws {
        process.executableURL = Harness.executable
        process.arguments = ["serve", "--port", String(port)] + arguments
        var environment = Harness.environment
        environment["LOG_LEVEL"] = environment["LOG_LEVEL"] ?? "warning"
        environment.merge(extra) { $1 }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let process = self.process
        // Reads the server's output on a thread of its own until the line that says where it listens; a server
        // that says nothing for a minute is killed, which ends the output.
        let timer = DispatchWorkItem { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: timer)
        let line: String? = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var text = ""
                var answered = false
                while true {
                    let chunk = output.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    text += String(decoding: chunk, as: UTF8.self)
                    if !answered, let line = text.split(separator: "\n").first(where: { $0.contains("listening on") }) {
                        answered = true
                        continuation.resume(returning: String(line))
                    }
                }
                if !answered { continuation.resume(returning: nil) }
            }
        }
        timer.cancel()
        guard let line, let address = line.split(separator: " ").last, let url = URL(string: String(address)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw ServerError.didNotStart
        }
        self.url = url
    }

    enum ServerError: Error { case didNotStart }

    /// Sends `signal`, and waits for the process to end.
    func stop(_ signal: Int32 = SIGKILL) {
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// A device of one user, talking HTTP to one server.
struct Device: Sendable {
    var server: URL
    var token: String?
    var id: String
    /// The HTTP client: a session of its own for a device whose requests must not queue behind another's (a
    /// session keeps few connections to one host).
    var session: URLSession = .shared

    /// A session of its own, with room for many requests at once.
    static func ownSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        return URLSession(configuration: configuration)
    }

    static let models = ["Dog": ModelSchema(version: 1, properties: ["name", "age", "owner"])]

    /// POSTs `body` to `path`, and returns the status and the body of the answer.
    func post(_ path: String, body: Data, token: String? = nil) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: server.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.httpBody = body
        request.timeoutInterval = 120
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let token = token ?? self.token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await session.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    func push(_ changes: [RecordChange], models: [String: ModelSchema] = models) async throws -> PushResponse {
        let body = Data(PushRequest(device: id, models: models, changes: changes).jsonBytes)
        let (status, data) = try await post(SyncProtocol.pushPath, body: body)
        try #require(status == 200, "push answered \(status): \(String(decoding: data, as: UTF8.self))")
        return try PushResponse(jsonBytes: data)
    }

    func pull(
        after: Int64, limit: Int = 1000, wait: Int = 0, models: [String: ModelSchema] = models
    ) async throws -> PullResponse {
        try await pull(cursor: try await cursor(at: after), limit: limit, wait: wait, models: models)
    }

    func pull(
        cursor: SyncCursor?, limit: Int = 1000, wait: Int = 0, models: [String: ModelSchema] = models
    ) async throws -> PullResponse {
        let body = Data(
            PullRequest(device: id, models: models, cursor: cursor, limit: limit, wait: wait).jsonBytes)
        let (status, data) = try await post(SyncProtocol.pullPath, body: body)
        try #require(status == 200, "pull answered \(status): \(String(decoding: data, as: UTF8.self))")
        return try PullResponse(jsonBytes: data)
    }

    /// The cursor that stands on this user's transaction ending at `sequence` (read from the server's database);
    /// `nil` for 0.
    func cursor(at sequence: Int64) async throws -> SyncCursor? {
        guard sequence > 0, let token else { return nil }
        let id = try await Harness.sql(
            """
            SELECT c.id FROM cellar_commits c JOIN cellar_tokens t ON t.owner = c.owner
            WHERE t.token_hash = sha256(convert_to('\(token)', 'UTF8')) AND c.sequence = \(sequence)
            """)
        return SyncCursor(sequence: sequence, commit: id)
    }

    /// Sends a body that must be refused, and returns the status and the failure.
    func refused(_ path: String, body: Data, token: String? = nil) async throws -> (status: Int, failure: SyncFailure) {
        let (status, data) = try await post(path, body: body, token: token)
        let failure =
            (try? SyncFailure(jsonBytes: data))
            ?? SyncFailure(.badRequest, "(no failure, but: \(String(decoding: data.prefix(200), as: UTF8.self)))")
        return (status, failure)
    }
}

extension PullResponse {
    /// The sequence the page's cursor stands on; 0 without one.
    var sequence: Int64 { cursor?.sequence ?? 0 }
}

/// A change that writes `fields`, each stamped with `stamp`.
func change(_ id: String, _ fields: [String: JSONValue], stamp: SyncStamp, model: String = "Dog") -> RecordChange {
    RecordChange(
        model: model, id: id, state: RecordState(fields: fields, stamps: fields.mapValues { _ in stamp }))
}

/// In CI the tests against real servers must run: a cluster or a server that failed to appear would otherwise pass
/// the run with them skipped.
@Suite("Sync: the tests against real servers run in CI")
struct SyncTestsRunInCI {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["CI"] != nil))
    func theClusterAndTheServerAreThere() {
        #expect(Harness.hasDatabase, "CELLAR_DATABASE_SOCKET is unset")
        #expect(
            FileManager.default.isExecutableFile(atPath: Harness.executable.path),
            "no cellar-server at \(Harness.executable.path)")
    }
}
