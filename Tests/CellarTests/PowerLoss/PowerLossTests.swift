import Cellar
import CellarCrashTestSupport
import Foundation
import Testing

#if os(Linux)
    private let canPreload = true
#else
    private let canPreload = false
#endif

/// Power cuts, simulated: each workload runs in another process under a preloaded library that records every write
/// and sync it makes to `data.mdb` (`Tests/CrashLog/crashlog.c`); then every file a power cut could have left at any
/// point — what was synced, plus none, all or random subsets of the writes since, some torn at a sector boundary — is
/// opened as an app would open it at launch.
///
/// - `.full`: every acknowledged transaction is there, and nothing of one that was not (the store equals the workload
///   after some count of transactions: the acknowledged ones, or one more whose commit was on the disk before its
///   acknowledgement), and `verifyIntegrity()` finds nothing.
/// - `.relaxed`: the same, but the last acknowledged transaction may be missing.
/// - `.none`: anything may be lost, as documented; nothing crashes, and what was seen is printed: states that opened
///   (and how far behind), refused in words, opened with problems `verifyIntegrity()` reports, or opened sound holding
///   no state the workload went through.
///
/// `CELLAR_TORTURE=long swift test --filter PowerLoss` runs longer workloads with more states each.
///
/// Linux only: the write log is preloaded with `LD_PRELOAD` (macOS would need `DYLD_INSERT_LIBRARIES` and
/// interposing, which its protected processes refuse).
@Suite(
    "Reliability: power loss", .serialized, .enabled(if: canPreload, "needs LD_PRELOAD (Linux)"),
    longTorture ? .timeLimit(.minutes(120)) : .hangGuard)
struct PowerLossTests {
    static let long = longTorture

    /// What the opening of every crash state of one run gave.
    struct Tally: CustomStringConvertible {
        var states = 0
        /// By how many transactions the store opened behind the count acknowledged (-1: one ahead, a commit on the
        /// disk before its acknowledgement).
        var openedAt: [Int: Int] = [:]
        var refused: [String: Int] = [:]
        /// Opened, and then a record or an index could not be read (`.none` only), and the first such failure.
        var readFailed = 0
        var firstReadFailure: String?
        /// Opened and read, and then `verifyIntegrity()` reported problems (`.none` only), and the first state's.
        var unsound = 0
        var firstProblems: String?
        /// Opened without integrity problems, holding no state the workload went through (`.none` only).
        var mixed = 0
        var torn = 0
        var description: String {
            let opened = openedAt.sorted { $0.key < $1.key }.map { lost, count in
                "\(count) " + (lost < 0 ? "one transaction ahead" : lost == 0 ? "with every one" : "\(lost) behind")
            }
            return "\(states) states (\(torn) with torn writes): opened "
                + (opened.isEmpty ? "none" : opened.joined(separator: ", "))
                + (refused.isEmpty
                    ? "" : "; refused \(refused.map { "\($0.value) (\($0.key))" }.joined(separator: ", "))")
                + (readFailed == 0
                    ? "" : "; \(readFailed) opened and then failed a read (first: \(firstReadFailure ?? ""))")
                + (unsound == 0
                    ? ""
                    : "; \(unsound) opened with problems verifyIntegrity() reports (first: \(firstProblems ?? ""))")
                + (mixed == 0 ? "" : "; \(mixed) opened sound holding no state the workload went through")
        }
    }

    @Test(arguments: CrashWorkload.allCases, [Configuration.Durability.full, .relaxed, .none])
    func everyStateAPowerCutCouldLeaveOpens(_ workload: CrashWorkload, _ durability: Configuration.Durability) throws {
        let folder = TemporaryFolder()
        let store = folder.url.appendingPathComponent("store")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        try workload.prepare(at: store)
        let base = (try? [UInt8](Data(contentsOf: store.appendingPathComponent("data.mdb")))) ?? []

        // The workload, in another process, under the write log.
        let log = folder.url.appendingPathComponent("writes.log")
        let acknowledged = folder.url.appendingPathComponent("commits.acknowledged")
        try Data().write(to: acknowledged)
        let helper = Process()
        helper.executableURL = try builtExecutable()
        helper.arguments = [
            "crash-workload", store.path, workload.rawValue, "\(durability)", Self.long ? "long" : "short",
            acknowledged.path,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["CELLAR_CRASH_LOG"] = log.path
        // After what is preloaded already (a sanitizer's runtime must come first).
        environment["LD_PRELOAD"] = ([environment["LD_PRELOAD"]].compactMap { $0 } + [try Self.writeLogLibrary().path])
            .joined(separator: " ")
        helper.environment = environment
        try helper.run()
        helper.waitUntilExit()
        try #require(helper.terminationStatus == 0, "the workload ran to its end")

        let writes = try WriteLog(contentsOf: log)
        let expected = try workload.expectedStates(in: folder.url.appendingPathComponent("expected"), long: Self.long)
        var random = SeededGenerator(seed: UInt64(workload.rawValue.utf8.count * 31 + "\(durability)".utf8.count))
        var tally = Tally()
        try writes.forEachCrashState(base: base, variants: Self.long ? 12 : 3, using: &random) { state in
            let number = tally.states
            tally.states += 1
            if state.torn > 0 { tally.torn += 1 }
            let opened = folder.url.appendingPathComponent("state-\(number)")
            try FileManager.default.createDirectory(at: opened, withIntermediateDirectories: true)
            try Data(state.image).write(to: opened.appendingPathComponent("data.mdb"))
            defer { try? FileManager.default.removeItem(at: opened) }
            let what =
                "state \(number) (cut after \(state.cut) of \(writes.operations.count) operations, transaction "
                + "\(state.acknowledged) acknowledged, \(state.kept) of \(state.unsynced) unsynced writes kept, "
                + "\(state.torn) torn)"
            let description: [String]
            let problems: [String]
            do {
                let opened = try workload.open(at: opened, durability: durability)
                description = opened.description
                problems = try opened.store.verifyIntegrity().problems
            } catch let refused as CrashWorkload.Refused {
                tally.refused[Self.kind(of: refused.error), default: 0] += 1
                // A new store whose first commit had not reached the disk may be refused in words: nothing of it was
                // acknowledged, and nothing was there before. Past that, a durable store always opens.
                if durability != .none {
                    #expect(base.isEmpty && state.acknowledged == 0, "\(what) was refused: \(refused.error)")
                }
                return
            } catch {
                // Opened, and then its records or indexes could not be read.
                tally.readFailed += 1
                if tally.firstReadFailure == nil { tally.firstReadFailure = "\(what): \(error)" }
                if durability != .none { Issue.record("\(what) opened, and then: \(error)") }
                return
            }
            let count = expected.firstIndex(of: description)
            if let count { tally.openedAt[state.acknowledged - count, default: 0] += 1 }
            if !problems.isEmpty {
                tally.unsound += 1
                if tally.firstProblems == nil { tally.firstProblems = "\(what): \(problems.prefix(3))" }
            }
            switch durability {
            case .full, .relaxed:
                #expect(problems.isEmpty, "\(what): \(problems)")
                let kept = try #require(count, "\(what) holds no state of the workload: \(description)")
                let least = durability == .full ? state.acknowledged : state.acknowledged - 1
                #expect(kept >= least, "\(what) lost acknowledged transactions: it holds \(kept)")
                #expect(kept <= state.acknowledged + 1, "\(what) holds \(kept) transactions")
            case .none:
                // Anything may be lost, as documented: what was seen is counted.
                if problems.isEmpty, count == nil { tally.mixed += 1 }
            }
        }
        #expect(tally.states > 50)
        print("power loss, \(workload.rawValue), durability .\(durability): \(tally)")
    }

    /// The case of a refusal, for the tally: `corruptedFile`, `incompatibleFile`.
    static func kind(of error: StoreError) -> String {
        Mirror(reflecting: error).children.first?.label ?? "\(error)"
    }

    /// The write log library, compiled once a run from `Tests/CrashLog/crashlog.c` with the C compiler beside Swift's.
    static func writeLogLibrary() throws -> URL {
        try compiled.get()
    }

    private static let compiled = Result<URL, any Error> {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("CrashLog/crashlog.c")
        let library = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cellar-crashlog-\(ProcessInfo.processInfo.processIdentifier).so")
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = [
            ProcessInfo.processInfo.environment["CC"] ?? "clang", "-shared", "-fPIC", "-O2", "-o", library.path,
            source.path, "-ldl", "-lpthread",
        ]
        try compiler.run()
        compiler.waitUntilExit()
        guard compiler.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
        return library
    }
}
