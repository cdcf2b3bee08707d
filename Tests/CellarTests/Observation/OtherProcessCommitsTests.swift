import Foundation
import Synchronization
import Testing

@testable import Cellar

/// Commits of another process (`cellar-test-helper insert-on-request`) reach an observer while this process commits to
/// other models and other observers arrive: under the file watch, and under the poll alone.
@Suite("Observation: other processes' commits among this process's", .timeLimit(.minutes(3)))
struct OtherProcessCommitsTests {
    struct Other: Model {
        var id: Int
    }

    /// What this process does while the other one commits.
    enum Meanwhile: String, CaseIterable, CustomTestStringConvertible {
        /// A thread commits to `Other` again and again.
        case ownCommitsToAnotherModel
        /// Observers of `Other` keep arriving, each at the newest version, and leave.
        case observersArrivingLate
        var testDescription: String { rawValue }
    }

    /// How commits of other processes are looked for.
    enum Looking: String, CaseIterable, CustomTestStringConvertible {
        case fileWatch, pollAlone
        var testDescription: String { rawValue }
    }

    /// Rounds of one foreign commit each: a signal that let a version count as known unread lost one within the
    /// first five rounds of every run.
    static let rounds = 100

    @Test(arguments: Meanwhile.allCases, Looking.allCases)
    func everyCommitOfAnotherProcessReachesTheObserver(_ meanwhile: Meanwhile, _ looking: Looking) async throws {
        let folder = TemporaryFolder()
        let store = try Store(
            at: folder.url, configuration: .init(models: [Ticket.self, Other.self], durability: .none))
        if looking == .pollAlone { store.core.readOtherProcessesCommits(watchingTheFile: false) }

        // The observer of tickets: the newest id it has delivered (0 once its initial results are in).
        let delivered = Mutex<Int64?>(nil)
        let observer = Task.detached {
            for try await change in store.changes(of: store.objects(Ticket.self)) {
                delivered.withLock { $0 = change.results.last?.id ?? 0 }
            }
        }
        defer { observer.cancel() }
        #expect(await arrives(within: .seconds(30)) { delivered.withLock { $0 } != nil })

        let stop = Atomic<Bool>(false)
        let stopped = DispatchSemaphore(value: 0)
        defer { stop.store(true, ordering: .relaxed) }
        switch meanwhile {
        case .ownCommitsToAnotherModel:
            Thread {
                var next = 0
                while !stop.load(ordering: .relaxed) {
                    next += 1
                    do { try store.write { tx in try tx.insert(Other(id: next)) } } catch {
                        Issue.record(error)
                        break
                    }
                }
                stopped.signal()
            }.start()
        case .observersArrivingLate:
            Task.detached {
                while !stop.load(ordering: .relaxed) {
                    let late = Task {
                        var changes = store.changes(of: store.objects(Other.self)).makeAsyncIterator()
                        _ = try await changes.next()
                        _ = try await changes.next()
                    }
                    try? await Task.sleep(for: .milliseconds(1))
                    late.cancel()
                    _ = await late.result
                }
                stopped.signal()
            }
        }

        let helper = Process()
        helper.executableURL = try builtExecutable()
        helper.arguments = ["insert-on-request", folder.url.path]
        let input = Pipe()
        let output = Pipe()
        helper.standardInput = input
        helper.standardOutput = output
        try helper.run()
        var printed = ""
        for round in 1...Self.rounds {
            try input.fileHandleForWriting.write(contentsOf: Data("insert\n".utf8))
            while !printed.hasSuffix("\n") {
                let data = output.fileHandleForReading.availableData
                try #require(!data.isEmpty, "the helper ended")
                printed += String(decoding: data, as: UTF8.self)
            }
            let id = try #require(Int64(printed.dropLast()), "the helper printed \(printed)")
            printed = ""
            // Generous: the poll alone looks every 50 ms, and a busy machine may take seconds.
            let seen = await arrives(within: .seconds(10)) { (delivered.withLock { $0 } ?? 0) >= id }
            guard seen else {
                Issue.record("round \(round): ticket \(id), committed by the other process, never reached the observer")
                break
            }
        }
        try input.fileHandleForWriting.close()
        helper.waitUntilExit()
        #expect(helper.terminationStatus == 0)
        stop.store(true, ordering: .relaxed)
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                stopped.wait()
                continuation.resume()
            }
        }
    }

    /// Whether `condition` holds within `limit`; returns as soon as it does.
    func arrives(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while clock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return condition()
    }
}
