import Foundation
import LMDB
import Synchronization
import Testing

@testable import Cellar

/// Commits of another process (`cellar-test-helper insert-on-request`) reach an observer while this process commits to
/// other models and other observers arrive: under the file watch, and under the poll alone.
@Suite("Observation: other processes' commits among this process's", .serialized, .hangGuard)
struct OtherProcessCommitsTests {
    struct Other: Model {
        var id: Int
    }

    /// What this process does around each commit of the other one.
    enum Meanwhile: String, CaseIterable, CustomTestStringConvertible {
        /// A thread commits to `Other`.
        case ownCommitsToAnotherModel
        /// Observers of `Other` arrive, each at the newest version, and leave.
        case observersArrivingLate
        var testDescription: String { rawValue }
    }

    /// How commits of other processes are looked for.
    enum Looking: String, CaseIterable, CustomTestStringConvertible {
        case fileWatch, pollAlone
        var testDescription: String { rawValue }

        /// Rounds of one foreign commit each. A signal that let a version count as known unread lost a ticket in the
        /// first two rounds under the poll alone (its 50 ms leave time for it), and under the watch, which looks within
        /// a fraction of a millisecond, never after round 43 in 26 runs.
        var rounds: Int { self == .fileWatch ? 150 : 20 }
    }

    @Test(arguments: Meanwhile.allCases, Looking.allCases)
    func everyCommitOfAnotherProcessReachesTheObserver(_ meanwhile: Meanwhile, _ looking: Looking) async throws {
        let folder = TemporaryFolder()
        let store = try await Store(
            at: folder.url, configuration: .init(models: [Ticket.self, Other.self], durability: .none))
        if looking == .pollAlone { store.core.readOtherProcessesCommits(watchingTheFile: false) }

        // The observer of tickets: the newest id it has delivered (0 once its initial results are in).
        let delivered = Lock<Int64?>(nil)
        let observer = Task.detached {
            for try await change in store.changes(of: store.objects(Ticket.self)) {
                delivered.withLock { $0 = change.results.last?.id ?? 0 }
            }
        }
        defer { observer.cancel() }
        #expect(await holds(within: .seconds(30)) { delivered.withLock { $0 } != nil })

        let disturbance = Disturbance(meanwhile, store: store)
        defer { disturbance.stop() }
        let helper = try HelperOnRequest(["insert-on-request", folder.url.path])
        var printed = helper.lines.makeAsyncIterator()
        for round in 1...looking.rounds {
            // Disturbed while the other process commits, and for a while after.
            disturbance.go(Int.max)
            try helper.send("insert")
            let id = try #require(await printed.next().flatMap { Int64($0) }, "the helper printed no id")
            disturbance.go(50)
            // Generous: the poll alone looks every 50 ms, and a busy machine may not run the observer for seconds.
            let seen = await holds(within: .seconds(30)) { (delivered.withLock { $0 } ?? 0) >= id }
            guard seen else {
                Issue.record("round \(round): ticket \(id), committed by the other process, never reached the observer")
                break
            }
        }
        #expect(await helper.finish() == 0, "the helper exits once its input ends")
    }

    /// What this process does meanwhile, on a thread of its own, when told how many times.
    final class Disturbance: Sendable {
        private let left = Atomic<Int>(0)
        private let stopped = Atomic<Bool>(false)
        private let told = DispatchSemaphore(value: 0)

        init(_ meanwhile: Meanwhile, store: Store) {
            Thread { [self] in
                var next = 0
                // Late observers still waiting, oldest first: a few at a time, one arriving every 200 µs.
                var late: [Task<Void, any Error>] = []
                while !stopped.load(ordering: .relaxed) {
                    guard left.load(ordering: .relaxed) > 0 else {
                        for observer in late { observer.cancel() }
                        late = []
                        told.wait()
                        continue
                    }
                    left.subtract(1, ordering: .relaxed)
                    switch meanwhile {
                    case .ownCommitsToAnotherModel:
                        next += 1
                        let id = next
                        do { try store.write { tx in try tx.insert(Other(id: id)) } } catch {
                            Issue.record(error)
                            return
                        }
                    case .observersArrivingLate:
                        // It reads the newest version, finds nothing new, and waits beyond it until cancelled.
                        late.append(
                            Task {
                                var changes = store.changes(of: store.objects(Other.self)).makeAsyncIterator()
                                _ = try await changes.next()
                                _ = try await changes.next()
                            })
                        usleep(200)
                        if late.count > 5 { late.removeFirst().cancel() }
                    }
                }
                for observer in late { observer.cancel() }
            }.start()
        }

        /// Does it `count` more times.
        func go(_ count: Int) {
            left.store(count, ordering: .relaxed)
            told.signal()
        }

        func stop() {
            stopped.store(true, ordering: .relaxed)
            told.signal()
        }
    }
}
