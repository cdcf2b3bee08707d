import Foundation
import LMDB
import Testing

@testable import Cellar

/// How a helper process ended, and what it printed.
private struct HelperRun {
    var crashed: Bool
    var signal: Int32
    var output: String
}

private func runHelper(_ arguments: [String]) throws -> HelperRun {
    let helper = Process()
    helper.executableURL = try builtExecutable()
    helper.arguments = arguments
    let output = Pipe()
    helper.standardOutput = output
    helper.standardError = FileHandle.nullDevice
    // No backtrace of a helper that crashes, as reading a damaged file may: Swift's backtracer keeps the helper's
    // output open until it has finished, and a helper built for the thread sanitizer left it waiting forever on
    // the dead helper's memory, and this test with it.
    helper.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
    try helper.run()
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    helper.waitUntilExit()
    return HelperRun(
        crashed: helper.terminationReason == .uncaughtSignal, signal: helper.terminationStatus,
        output: String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

/// The checks of the torture runs, short enough for every `swift test`. `CELLAR_TORTURE=long swift test --filter
/// Torture` runs the same checks longer: 300 damaged files and 200 kills.
@Suite("Torture: kill -9 and damaged pages", .serialized)
struct TortureTests {
    /// A child process commits one durable transaction after another and is killed with SIGKILL at a random
    /// moment; every commit it reported (a `write` that returned) is in the store when it is opened again, the
    /// pages are sound, and ids are never given twice.
    @Test func everyAcknowledgedCommitSurvivesKillNine() throws {
        let rounds = longTorture ? 200 : 6
        let seed = UInt64(UInt32.random(in: 0...UInt32.max))
        print("kill -9 torture: \(rounds) rounds, seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        let folder = TemporaryFolder()
        var acknowledged = Set<Int64>()
        for round in 0..<rounds {
            let helper = Process()
            helper.executableURL = try builtExecutable()
            helper.arguments = ["write-until-killed", folder.url.path]
            let output = Pipe()
            helper.standardOutput = output
            try helper.run()
            usleep(UInt32.random(in: 30_000...250_000, using: &generator))
            kill(helper.processIdentifier, SIGKILL)
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            helper.waitUntilExit()
            #expect(helper.terminationReason == .uncaughtSignal)
            let ids = String(decoding: printed, as: UTF8.self).split(separator: "\n").compactMap { Int64($0) }
            #expect(Set(ids).isDisjoint(with: acknowledged), "round \(round): an id was given twice")
            acknowledged.formUnion(ids)
            let store = try Store(at: folder.url, configuration: .init(models: [Ticket.self]))
            let stored = Set(try store.objects(Ticket.self).results().map(\.id))
            let lost = acknowledged.subtracting(stored)
            #expect(lost.isEmpty, "round \(round), seed \(seed): acknowledged commits lost: \(lost.sorted().prefix(5))")
            _ = try store.verifyIntegrity()
        }
        #expect(acknowledged.count >= rounds)
    }

    /// 4 KiB of random bytes over the pages of a store with every kind of page, from a fixed list of seeds. Each
    /// damaged file is a typed error when opened (a small file has every page checked at open), or found by
    /// `verifyIntegrity()`, or has sound pages: then only bytes inside values were hit (LMDB keeps no checksums, so
    /// the pages cannot tell), and a reader gets the old values, other values, or `decodingFailed`, never a crash.
    /// Child processes read every file, so a crash is counted instead of ending the test: through Cellar, after its
    /// checks, none may crash; through LMDB alone, without them, the count says what the checks prevent.
    @Test func damagedPagesAreTypedErrorsOrReadBackUnchanged() throws {
        // A compacted copy has no free pages, so the damage lands on pages in use.
        let varied = TemporaryFolder()
        let template = TemporaryFolder()
        do { try PageCheckTests.varied(in: varied).compact(to: template.url) }
        let expected = try runHelper(["read-pets", template.url.path])
        #expect(expected.output.hasPrefix("ok "))
        let original = try Data(contentsOf: template.url.appendingPathComponent("data.mdb"))
        let pageSize = 4_096
        let seeds = longTorture ? Array(UInt64(0)..<300) : Array(UInt64(0)..<30)
        var typedAtOpen = 0
        var foundByCheck = 0
        var sound = 0
        var changedValues = 0
        var crashesUnchecked = 0
        var signals: [Int32: Int] = [:]
        for seed in seeds {
            var generator = SeededGenerator(seed: seed)
            var bytes = [UInt8](original)
            let offset = Int.random(in: 2 * pageSize..<(bytes.count - pageSize), using: &generator)
            for index in offset..<(offset + pageSize) { bytes[index] = .random(in: 0...255, using: &generator) }
            let folder = TemporaryFolder()
            try Data(bytes).write(to: folder.url.appendingPathComponent("data.mdb"))
            var verdict = "sound"
            do {
                let store = try Store(at: folder.url, configuration: .init(models: [PageCheckTests.Pet.self]))
                verdict = "opened"
                _ = try store.verifyIntegrity()
                verdict = "sound"
            } catch {
                guard case .corruptedFile = error else {
                    Issue.record("seed \(seed): expected corruptedFile, got \(error)")
                    continue
                }
                if verdict == "opened" { foundByCheck += 1 } else { typedAtOpen += 1 }
                verdict = "damaged"
            }
            if verdict == "sound" {
                let read = try runHelper(["read-pets", folder.url.path])
                sound += 1
                #expect(!read.crashed, "seed \(seed): a file the checks found sound crashed a reader")
                if read.output != expected.output { changedValues += 1 }
            }
            let raw = try runHelper(["read-raw", folder.url.path])
            if raw.crashed {
                crashesUnchecked += 1
                signals[raw.signal, default: 0] += 1
            }
        }
        print(
            "damaged pages: \(seeds.count) files; typed error at open \(typedAtOpen), found by verifyIntegrity "
                + "\(foundByCheck), sound pages \(sound) (of which \(changedValues) read other values: bytes inside "
                + "records or overflow values); read through LMDB alone, without the checks, \(crashesUnchecked) "
                + "crashed (signals \(signals)); read through Cellar after the checks, 0 crashed")
        #expect(typedAtOpen + foundByCheck + sound == seeds.count)
        #expect(typedAtOpen + foundByCheck > 0)
    }
}
