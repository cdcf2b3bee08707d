// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Cellar",
    platforms: [.macOS(.v15)],
    // What users import, and the tool. The `LMDB` wrapper is Cellar's own layer, not a product: its API may change
    // with Cellar's needs. `cellar-demo` runs from this repository (`swift run cellar-demo`) without being one.
    products: [
        .library(name: "Cellar", targets: ["Cellar"]),
        // `@Record`, generated record code. A separate product, so that only its users build swift-syntax.
        .library(name: "CellarMacros", targets: ["CellarMacros"]),
        // The `cellar` command-line tool. Its module is not named `cellar`: on a case-insensitive file system that
        // name would collide with `Cellar`'s.
        .executable(name: "cellar", targets: ["CellarTool"]),
        // Sync through a server (Server/, a package of its own): the client, and the messages both sides speak. Only
        // their users build them; neither needs a server package.
        .library(name: "CellarSync", targets: ["CellarSync"]),
        .library(name: "CellarSyncProtocol", targets: ["CellarSyncProtocol"]),
    ],
    dependencies: [
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.1"..<"604.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `swift package generate-documentation`: builds the DocC catalog in Sources/Cellar/Cellar.docc.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"]),
        // CRC-32C of records, with the CPU's instruction where it has one.
        .target(name: "CCRC32C"),
        .target(name: "Cellar", dependencies: ["LMDB", "CCRC32C", "CellarSyncProtocol"]),
        .target(name: "CellarSyncProtocol"),
        .target(name: "CellarSync", dependencies: ["Cellar", "CellarSyncProtocol"]),
        .macro(
            name: "CellarMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "CellarMacros", dependencies: ["Cellar", "CellarMacrosPlugin"]),
        // The first command a newcomer runs: it builds no swift-syntax and no server package (`cellar-demo sync`
        // talks to a running server). The @Record story has its own executable.
        .executableTarget(name: "cellar-demo", dependencies: ["Cellar", "CellarSync"]),
        .executableTarget(name: "cellar-demo-record", dependencies: ["Cellar", "CellarMacros"]),
        .executableTarget(
            name: "CellarTool",
            dependencies: ["Cellar", "LMDB", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // A second process for the tests that write one store from two processes at once.
        .executableTarget(name: "cellar-test-helper", dependencies: ["Cellar", "LMDB", "CellarCrashTestSupport"]),
        .target(name: "CellarCrashTestSupport", dependencies: ["Cellar"]),
        // What the sync tests and their second process share (models, random edits), and that process.
        .target(name: "CellarSyncTestSupport", dependencies: ["Cellar", "CellarSyncProtocol"]),
        .executableTarget(name: "cellar-sync-helper", dependencies: ["CellarSync", "CellarSyncTestSupport"]),
        .testTarget(
            name: "LMDBTests",
            dependencies: ["LMDB", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "CellarTests",
            dependencies: [
                "Cellar", "CellarMacros", "LMDB", "cellar-test-helper", "CellarTool", "CellarCrashTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "CellarSyncTests",
            dependencies: [
                "CellarSync", "CellarSyncProtocol", "Cellar", "CellarMacros", "CellarSyncTestSupport",
                "cellar-sync-helper",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "CellarMacrosTests",
            dependencies: [
                "CellarMacrosPlugin",
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
