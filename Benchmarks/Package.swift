// swift-tools-version: 6.1
import PackageDescription

// SwiftPM names a path dependency after its folder, and CI clones Cellar into a folder of another name:
// derive the identity from where this package sits instead of hard-coding "cellar".
let cellarFolder = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "main")

let package = Package(
    name: "CellarBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // LMDB's C API for the raw peer, the ceiling: called directly, not through Cellar's wrapper.
        .systemLibrary(name: "CRawLMDB", path: "Benchmarks/CRawLMDB", pkgConfig: "lmdb"),
        .executableTarget(
            name: "CellarBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "CRawLMDB",
                .product(name: "Cellar", package: cellarFolder),
                .product(name: "CellarMacros", package: cellarFolder),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Benchmarks/CellarBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
