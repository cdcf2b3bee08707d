// swift-tools-version: 6.1
import PackageDescription

// Cellar's sync server: devices push and pull records through it (Sources/CellarSync is the client), and it keeps
// them in PostgreSQL. A package of its own, so that Cellar's users never build Hummingbird or PostgresNIO.
let package = Package(
    name: "CellarServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "cellar-server", targets: ["cellar-server"]),
        .library(name: "CellarServer", targets: ["CellarServer"]),
    ],
    dependencies: [
        // The root package, for the messages both sides speak. Named, so that `package: "Cellar"` below holds
        // whatever the folder of the clone is called.
        .package(name: "Cellar", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "CellarServer",
            dependencies: [
                .product(name: "CellarSyncProtocol", package: "Cellar"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "cellar-server",
            dependencies: [
                "CellarServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Sync's figures (Server/bench runs it against a server it starts): first sync, pushes, delivery latency, and
        // PostgreSQL's COPY of the same rows as the ceiling.
        .executableTarget(
            name: "cellar-sync-bench",
            dependencies: [
                .product(name: "Cellar", package: "Cellar"), .product(name: "CellarSync", package: "Cellar"),
                .product(name: "CellarSyncProtocol", package: "Cellar"),
            ]
        ),
        // The checks a request meets before the database, without one. The tests of the running server (HTTP,
        // PostgreSQL, several processes) are in the root package's CellarSyncTests, beside the clients'.
        .testTarget(
            name: "CellarServerTests",
            dependencies: ["CellarServer", .product(name: "CellarSyncProtocol", package: "Cellar")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
