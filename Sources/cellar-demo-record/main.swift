// cellar-demo-record: the @Record story, in an executable of its own so that `swift run cellar-demo`, the first
// command a newcomer runs, does not build swift-syntax. `swift run cellar-demo-record` (add `--keep` to keep the
// store) writes 50,000 dogs through Codable and reads them back through generated record code, from the same records.
import Cellar
import CellarMacros
import Foundation

/// The dog as a plain `Codable` model.
struct Dog: Model {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<Dog>(name: "KennelDog")
}

/// The same dog with generated record code. Both are stored as "KennelDog", so either reads the other's records.
@Record
struct FastDog: Model {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<FastDog>(name: "KennelDog")
}

func milliseconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return "\(Int((Double(seconds) * 1e3 + Double(attoseconds) / 1e15).rounded())) ms"
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cellar-demo-record-\(UUID().uuidString)")
let keepsStore = CommandLine.arguments.contains("--keep")
defer { if !keepsStore { try? FileManager.default.removeItem(at: folder) } }

do {
    print("== Faster models: @Record reads and writes the same records without Codable's containers")
    let dogs = (1...50_000).map { Dog(id: Int64($0), name: "Dog \($0)", age: $0 % 15, owner: Int64($0 / 3)) }
    let clock = ContinuousClock()
    var plainScan = Duration.zero
    do {
        let plain = try Store(at: folder, configuration: .init(models: [Dog.self]))
        try plain.write { tx in for dog in dogs { try tx.insert(dog) } }
        plainScan = try clock.measure { _ = try plain.objects(Dog.self).results() }
    }
    let fast = try Store(at: folder, configuration: .init(models: [FastDog.self]))
    var all: Results<FastDog>?
    let fastScan = try clock.measure { all = try fast.objects(FastDog.self).results() }
    print(
        "   50,000 dogs written through Codable read back through @Record, no migration: \(all?.count ?? 0) dogs, "
            + "the scan took \(milliseconds(fastScan)) (\(milliseconds(plainScan)) through Codable; "
            + "in a release build the gap is wider)")
    let owned = fast.objects(FastDog.self).where(\.owner == 1000)
    print("   owner == 1000 has no index; the plan: \(try owned.explain())")
    print("   found \(try owned.results().map(\.name).joined(separator: ", ")), decoding only those three")
    if keepsStore { print("   (--keep: the store stays at \(folder.path))") }
    print("\nDone.")
} catch {
    print("cellar-demo-record failed: \(error)")
    exit(1)
}
