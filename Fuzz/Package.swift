// swift-tools-version: 6.1
import PackageDescription

// Coverage-guided fuzzing of what Cellar reads and did not write itself (`Fuzz/run`, README "Fuzzing"). A package of
// its own: its targets link libFuzzer (`-sanitize=fuzzer`), which a plain `swift build` of Cellar must not need.

// SwiftPM names a path dependency after its folder, and CI clones Cellar into a folder of another name.
let cellarFolder = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "main")

/// The readers fuzzed, one executable each (`fuzz-<name>`).
let readers = ["record", "key", "pages", "open", "meta", "changelog", "search"]

let package = Package(
    name: "CellarFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [.product(name: "Cellar", package: cellarFolder)]
        )
    ]
        + readers.map { reader in
            .executableTarget(name: "fuzz-\(reader)", dependencies: ["FuzzSupport"], path: "Sources/\(reader)")
        },
    swiftLanguageModes: [.v6]
)
