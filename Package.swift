// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Cellar",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Cellar", targets: ["Cellar"]),
        .library(name: "LMDB", targets: ["LMDB"]),
        .executable(name: "cellar-demo", targets: ["cellar-demo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1")
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"]),
        .target(name: "Cellar", dependencies: ["LMDB"]),
        .executableTarget(name: "cellar-demo", dependencies: ["Cellar"]),
        // A second process for the tests that write one store from two processes at once.
        .executableTarget(name: "cellar-test-helper", dependencies: ["Cellar", "LMDB"]),
        .testTarget(
            name: "LMDBTests",
            dependencies: ["LMDB", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        .testTarget(
            name: "CellarTests",
            dependencies: [
                "Cellar", "LMDB", "cellar-test-helper",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
