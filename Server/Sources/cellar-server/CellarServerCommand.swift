import ArgumentParser
import CellarServer
import Foundation
import PostgresNIO

@main
struct CellarServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cellar-server",
        abstract: "Cellar's sync server: devices push and pull their records through it; PostgreSQL keeps them.",
        subcommands: [Serve.self, Token.self]
    )
}

/// Where PostgreSQL is: each option also reads an environment variable, and the command line wins.
struct DatabaseArguments: ParsableArguments {
    @Option(help: "PostgreSQL's Unix socket directory (env CELLAR_DATABASE_SOCKET).")
    var databaseSocket: String?

    @Option(help: "PostgreSQL's host, when not through a socket (env CELLAR_DATABASE_HOST).")
    var databaseHost: String?

    @Option(help: "PostgreSQL's port, also the number in its socket's name (env CELLAR_DATABASE_PORT; 5432).")
    var databasePort: Int?

    @Option(help: "The PostgreSQL role (env CELLAR_DATABASE_USER).")
    var databaseUser: String?

    @Option(help: "The database (env CELLAR_DATABASE_NAME; cellar).")
    var databaseName: String?

    func validate() throws { _ = try options() }

    func options() throws -> DatabaseOptions {
        let environment = ProcessInfo.processInfo.environment
        func value(_ option: String?, _ variable: String) -> String? {
            option ?? environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        let socket = value(databaseSocket, "CELLAR_DATABASE_SOCKET")
        let host = value(databaseHost, "CELLAR_DATABASE_HOST")
        guard socket != nil || host != nil else {
            throw ValidationError(
                "say where PostgreSQL is: --database-socket DIR (or CELLAR_DATABASE_SOCKET), or --database-host")
        }
        let portText = databasePort.map(String.init) ?? value(nil, "CELLAR_DATABASE_PORT")
        guard let port = Int(portText ?? "5432") else {
            throw ValidationError("the database port \"\(portText ?? "")\" is not a number")
        }
        guard let user = value(databaseUser, "CELLAR_DATABASE_USER") else {
            throw ValidationError("say which PostgreSQL role to use: --database-user (or CELLAR_DATABASE_USER)")
        }
        return DatabaseOptions(
            socketDirectory: host == nil || databaseSocket != nil ? socket : nil,
            host: host, port: port, user: user, password: environment["CELLAR_DATABASE_PASSWORD"],
            name: value(databaseName, "CELLAR_DATABASE_NAME") ?? "cellar")
    }
}

func makeLogger() -> Logger {
    var logger = Logger(label: "cellar-server")
    logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info
    return logger
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve /v1/push and /v1/pull; creates the tables that are missing first.")

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port: Int

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Seconds a connection may wait without a whole request before it is closed.")
    var idleTimeout = Int(ServerLimits.idleTimeout.components.seconds)

    @Option(help: "Serve HTTPS with this certificate chain (PEM; the server's certificate first). Needs --tls-key.")
    var tlsCertificate: String?

    @Option(help: "The private key (PEM) of --tls-certificate.")
    var tlsKey: String?

    func validate() throws {
        guard (tlsCertificate == nil) == (tlsKey == nil) else {
            throw ValidationError("give --tls-certificate and --tls-key together, or neither")
        }
    }

    @OptionGroup var database: DatabaseArguments

    func run() async throws {
        let tls = tlsCertificate.flatMap { chain in tlsKey.map { TLSFiles(certificateChain: chain, privateKey: $0) } }
        let scheme = tls == nil ? "http" : "https"
        try await SyncServer.serve(
            host: host, port: port, database: try database.options(), logger: makeLogger(),
            idleTimeout: .seconds(max(1, idleTimeout)), tls: tls
        ) { host, port in
            // Unbuffered: a test that started the server reads this line through a pipe.
            FileHandle.standardOutput.write(Data("cellar-server listening on \(scheme)://\(host):\(port)\n".utf8))
        }
    }
}

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a token for a user and print it; the server keeps only its SHA-256.")

    @Option(help: "The user the token signs in as.")
    var user: String

    @OptionGroup var database: DatabaseArguments

    func validate() throws {
        guard !user.isEmpty else { throw ValidationError("the user name is empty") }
    }

    func run() async throws {
        let user = self.user
        let options = try database.options()
        let token = try await SyncServer.withStore(options, logger: makeLogger()) { store in
            try await SyncServer.prepare(store, database: options)
            return try await store.createToken(owner: user)
        }
        print(token)
    }
}
