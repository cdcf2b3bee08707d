import CellarSyncProtocol
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import PostgresNIO
import ServiceLifecycle

/// Where the server finds PostgreSQL: a Unix socket directory, or a host and port.
public struct DatabaseOptions: Sendable {
    public var socketDirectory: String?
    public var host: String?
    public var port: Int
    public var user: String
    public var password: String?
    public var name: String

    public init(
        socketDirectory: String? = nil, host: String? = nil, port: Int = 5432, user: String, password: String? = nil,
        name: String
    ) {
        self.socketDirectory = socketDirectory
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.name = name
    }

    /// Where the database is, in words.
    public var endpoint: String {
        if let socketDirectory { return "the socket \(socketDirectory)/.s.PGSQL.\(port)" }
        return "\(host ?? "127.0.0.1"):\(port)"
    }

    /// The connection pool's configuration: a socket directory holds PostgreSQL's `.s.PGSQL.<port>`.
    public var clientConfiguration: PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socketDirectory {
            let path = URL(fileURLWithPath: socketDirectory).appendingPathComponent(".s.PGSQL.\(port)").path
            configuration = .init(unixSocketPath: path, username: user, password: password, database: name)
        } else {
            configuration = .init(
                host: host ?? "127.0.0.1", port: port, username: user, password: password, database: name,
                tls: .disable)
        }
        configuration.options.connectTimeout = .seconds(10)
        // Names this process's connections in pg_stat_activity, and bounds every statement, lock wait and idle
        // transaction: one user's stuck transaction cannot hold the others' connections.
        var parameters = [
            ("application_name", "cellar-server \(ProcessInfo.processInfo.processIdentifier)"),
            ("statement_timeout", ServerLimits.statementTimeout), ("lock_timeout", ServerLimits.lockTimeout),
        ]
        // The tests of a server killed mid-push hold a transaction open on purpose.
        if SyncStore.commitDelay == nil {
            parameters.append(("idle_in_transaction_session_timeout", ServerLimits.idleInTransactionTimeout))
        }
        configuration.options.additionalStartupParameters = parameters
        return configuration
    }
}

/// The files of a TLS certificate: the chain (the server's certificate first) and its private key, both PEM.
public struct TLSFiles: Sendable {
    public var certificateChain: String
    public var privateKey: String

    public init(certificateChain: String, privateKey: String) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }

    /// The server's TLS configuration, or an error that names the file it could not read.
    func configuration() throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do { chain = try NIOSSLCertificate.fromPEMFile(certificateChain) } catch {
            throw SyncServer.StartupError(description: "cannot read the TLS certificate \(certificateChain): \(error)")
        }
        do { key = try NIOSSLPrivateKey(file: privateKey, format: .pem) } catch {
            throw SyncServer.StartupError(description: "cannot read the TLS private key \(privateKey): \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}

/// The HTTP side: the two endpoints of ``SyncProtocol``, each answering JSON, and refusals as a ``SyncFailure``.
public enum SyncServer {
    /// Runs `body` with a connection pool to the database, running while `body` does.
    public static func withStore<Result: Sendable>(
        _ options: DatabaseOptions, logger: Logger, _ body: @Sendable (SyncStore) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: options.clientConfiguration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self, returning: Result.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            // Lets `run()` begin first: a lease asked for before it is logged as a mistake (though it would wait).
            try await Task.sleep(for: .milliseconds(20))
            return try await body(SyncStore(client: client, logger: logger))
        }
    }

    /// Creates the tables, starts listening for pushes, and serves HTTP on `host`:`port` until SIGTERM or SIGINT.
    /// `onListening` gets the address actually bound (port 0 picks a free one).
    ///
    /// A connection without a whole request for `idleTimeout` is closed. On SIGTERM or SIGINT the server stops taking
    /// connections, answers waiting pulls at once, lets pushes in flight finish for ``ServerLimits/shutdownGrace``
    /// (then cancels them: their transactions roll back), and returns.
    ///
    /// With `tls` (a certificate chain and its private key, PEM files), it serves HTTPS, TLS 1.2 at least.
    public static func serve(
        host: String, port: Int, database: DatabaseOptions, logger: Logger,
        idleTimeout: Duration = ServerLimits.idleTimeout, tls: TLSFiles? = nil,
        onListening: @escaping @Sendable (String, Int) -> Void
    ) async throws {
        let http = HTTPServerBuilder.http1(
            configuration: .init(idleTimeout: .seconds(idleTimeout.components.seconds)))
        let builder = try tls.map { try HTTPServerBuilder.tls(http, tlsConfiguration: $0.configuration()) } ?? http
        try await withStore(database, logger: logger) { store in
            try await prepare(store, database: database)
            let server = try await store.identity()
            let notifier = Notifier()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.listen(notifier: notifier) }
                defer { group.cancelAll() }
                await notifier.waitUntilListening()
                let app = Application(
                    router: router(store: store, server: server, notifier: notifier),
                    server: builder,
                    configuration: .init(address: .hostname(host, port: port), serverName: nil),
                    onServerRunning: { channel in
                        onListening(host, channel.localAddress?.port ?? port)
                    },
                    logger: logger)
                var configuration = ServiceGroupConfiguration(
                    services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
                configuration.maximumGracefulShutdownDuration = ServerLimits.shutdownGrace
                try await ServiceGroup(configuration: configuration).run()
            }
        }
    }

    /// Creates the tables, or says that the database could not be reached within `timeout`: the pool itself would
    /// try again forever.
    public static func prepare(_ store: SyncStore, database: DatabaseOptions, timeout: Duration = .seconds(30))
        async throws
    {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await store.createTables()
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            guard try await group.next() == true else {
                throw StartupError(
                    description: "could not reach PostgreSQL at \(database.endpoint) as \(database.user), database "
                        + "\(database.name), within \(timeout): is it running, and does the role exist?")
            }
        }
    }

    public struct StartupError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The routes: `POST /v1/session`, `/v1/push` and `/v1/pull`. `server` is the identity of the database
    /// (``SyncStore/identity()``).
    public static func router(store: SyncStore, server: String, notifier: Notifier) -> Router<BasicRequestContext> {
        let router = Router()
        let turns = UserTurns()
        router.post(RouterPath(SyncProtocol.sessionPath)) { request, _ in
            await answer(logger: store.logger) {
                let owner = try await authenticate(request, store: store)
                let session = try Validation.decode(
                    SessionRequest.self, from: try await body(of: request).readableBytesView)
                try Validation.validateDevice(session.device)
                return SessionResponse(server: server, user: owner, time: Int64(Validation.nowMilliseconds()))
            }
        }
        router.post(RouterPath(SyncProtocol.pushPath)) { request, _ in
            await answer(logger: store.logger) {
                let owner = try await authenticate(request, store: store)
                let push = try Validation.validated(
                    Validation.decode(PushRequest.self, from: try await body(of: request).readableBytesView))
                try checkUser(push.user, owner: owner)
                return try await turns.run(owner) { try await store.push(push, owner: owner) }
            }
        }
        router.post(RouterPath(SyncProtocol.pullPath)) { request, _ in
            await answer(logger: store.logger) {
                let owner = try await authenticate(request, store: store)
                let pull = try Validation.validated(
                    Validation.decode(PullRequest.self, from: try await body(of: request).readableBytesView))
                try checkUser(pull.user, owner: owner)
                if let expected = pull.server, expected != server {
                    throw SyncFailure(
                        .resetRequired,
                        "the device's cursor was given by the server \(expected.prefix(40)); this is the server "
                            + "\(server) (another server, or its database made again): the device must reset")
                }
                let models = pull.models.keys.sorted()
                // Registered before the first query: a push that commits between that query and the wait still
                // wakes it. The wait itself holds no turn and no connection.
                let registration = pull.wait > 0 ? notifier.register(owner: owner) : nil
                defer { registration.map(notifier.unregister) }
                var response = try await turns.run(owner) {
                    try await store.checkSchema(pull.models, owner: owner)
                    return try await store.changes(
                        owner: owner, models: models, after: pull.cursor, pushed: pull.pushed, limit: pull.limit)
                }
                if response.changes.isEmpty, let registration {
                    // A stopping server answers at once instead of waiting: the device asks again elsewhere.
                    await cancelWhenGracefulShutdown {
                        await notifier.wait(registration, timeout: .seconds(pull.wait))
                    }
                    response = try await turns.run(owner) {
                        try await store.changes(
                            owner: owner, models: models, after: pull.cursor, pushed: pull.pushed, limit: pull.limit)
                    }
                }
                response.time = Int64(Validation.nowMilliseconds())
                return response
            }
        }
        return router
    }

    /// Refuses a request whose device's store belongs to another user than the token's.
    static func checkUser(_ expected: String?, owner: String) throws(SyncFailure) {
        guard let expected, expected != owner else { return }
        throw SyncFailure(
            .wrongUser,
            "the device's store belongs to the user \"\(expected.prefix(80))\", and the token signs in as another: "
                + "sign out of the store first (SyncClient.signOut), or use a store of this user")
    }

    /// The owner the request's bearer token belongs to.
    static func authenticate(_ request: Request, store: SyncStore) async throws -> String {
        guard let header = request.headers[.authorization] else {
            throw SyncFailure(.unauthorized, "no `Authorization: Bearer <token>` header")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw SyncFailure(.unauthorized, "the Authorization header is not `Bearer <token>`")
        }
        guard let owner = try await store.owner(ofToken: String(parts[1])) else {
            throw SyncFailure(.unauthorized, "the server knows no such token: make one with `cellar-server token`")
        }
        return owner
    }

    /// The request's body, refused past ``SyncProtocol/maxBodyBytes`` without reading it all.
    static func body(of request: Request) async throws -> ByteBuffer {
        let tooLarge = SyncFailure(
            .tooLarge, "the body is larger than the \(SyncProtocol.maxBodyBytes) bytes the server reads")
        if let length = request.headers[.contentLength].flatMap(Int.init), length > SyncProtocol.maxBodyBytes {
            throw tooLarge
        }
        do {
            return try await request.body.collect(upTo: SyncProtocol.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        }
    }

    /// Runs a handler, and answers its result as JSON or its refusal as a ``SyncFailure``.
    static func answer(
        logger: Logger, _ handler: () async throws -> some JSONMessage
    ) async -> Response {
        do {
            return json(try await handler(), status: .ok)
        } catch let failure as SyncFailure {
            return json(failure, status: HTTPResponse.Status(code: failure.code.httpStatus))
        } catch {
            logger.error("request failed: \(String(reflecting: error))")
            let failure = SyncFailure(
                .unavailable, "the server could not use its database; try again later (\(type(of: error)))")
            return json(failure, status: HTTPResponse.Status(code: failure.code.httpStatus))
        }
    }

    static func json(_ value: some JSONMessage, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: value.jsonBytes)))
    }
}
