import CellarSyncProtocol
import Foundation
import Testing

/// One user's stuck transaction does not hold up the others: statements and lock waits are bounded, and one user's
/// requests take at most a few of the pool's connections at once.
@Suite("Sync: a stuck user does not stall the others", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct StuckUserTests {
    /// psql holding a transaction with `owner`'s row locked until it is stopped (or four minutes passed: far past
    /// what the test takes on a loaded machine, so that "still held" means the others did not wait for it).
    final class HeldLock: @unchecked Sendable {
        let process = Process()
        let owner: String

        init(owner: String) throws {
            self.owner = owner
            let environment = Harness.environment
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "psql", "-X", "-q", "-h", environment["CELLAR_DATABASE_SOCKET"] ?? "", "-U",
                environment["CELLAR_DATABASE_USER"] ?? "cellar", "-d", environment["CELLAR_DATABASE_NAME"] ?? "cellar",
                "-c",
                "BEGIN; SELECT 1 FROM cellar_owners WHERE owner = '\(owner)' FOR UPDATE; "
                    + "SELECT pg_sleep(240) /* holds \(owner) */; COMMIT;",
            ]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
        }

        var isHeld: Bool { process.isRunning }

        /// Ends the holding session (a killed psql leaves its backend asleep, and the lock held, until pg_sleep ends).
        func release() async throws {
            _ = try await Harness.sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%holds \(owner) */%' "
                    + "AND pid <> pg_backend_pid()")
            process.waitUntilExit()
        }

        deinit { if process.isRunning { process.terminate() } }
    }

    /// Before: 60 pushes of a user whose row another transaction held took the pool's 20 connections, each waiting on
    /// the lock, and another user's pull waited as long as the lock was held.
    @Test func anotherUsersPullsGoThroughWhileOneUsersRowIsLocked() async throws {
        let server = try await ServerProcess()
        let stuck = Harness.newUser("stuck")
        let other = Harness.newUser("other")
        let stuckDevice = Device(
            server: server.url, token: try await Harness.token(for: stuck), id: Harness.device("a"),
            session: Device.ownSession())
        let otherDevice = Device(
            server: server.url, token: try await Harness.token(for: other), id: Harness.device("b"),
            session: Device.ownSession())
        _ = try await stuckDevice.push([change("first", ["name": .string("1")], stamp: Harness.stamp(stuckDevice.id))])
        _ = try await otherDevice.push([change("mine", ["name": .string("2")], stamp: Harness.stamp(otherDevice.id))])
        // Until the row is locked: psql's BEGIN and SELECT … FOR UPDATE ran.
        let lock = try HeldLock(owner: stuck)
        var locked = false
        for _ in 0..<500 where !locked {
            locked =
                try await Harness.sql(
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                        + "WHERE a.query LIKE '%holds \(stuck) */%' AND a.pid <> pg_backend_pid() "
                        + "AND l.locktype = 'transactionid'")
                != "0"
            if !locked { try await Task.sleep(for: .milliseconds(20)) }
        }
        try #require(locked)

        let pushes = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for number in 0..<60 {
                    group.addTask {
                        let body = PushRequest(
                            device: stuckDevice.id, models: Device.models,
                            changes: [
                                change("p\(number)", ["name": .string("x")], stamp: Harness.stamp(stuckDevice.id))
                            ])
                        return try await stuckDevice.post(SyncProtocol.pushPath, body: Data(body.jsonBytes)).status
                    }
                }
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
        }
        // Meanwhile, another user's pulls and pushes go through, while the lock is still held.
        try await Task.sleep(for: .milliseconds(500))
        for number in 0..<10 {
            _ = try await otherDevice.push([
                change("o\(number)", ["name": .string("y")], stamp: Harness.stamp(otherDevice.id))
            ])
            #expect(try await otherDevice.pull(cursor: nil).changes.count == number + 2)
        }
        #expect(lock.isHeld, "the other user's requests waited for the lock to end")
        // The stuck user's pushes were answered, each refused for now (503, to be retried), while the lock held.
        let statuses = try await pushes.value
        #expect(lock.isHeld)
        #expect(statuses.count == 60 && statuses.allSatisfy { $0 == 503 }, "\(statuses)")
        try await lock.release()
        // Once the lock is gone, the same pushes go through.
        #expect(
            try await stuckDevice.push([change("after", ["name": .string("z")], stamp: Harness.stamp(stuckDevice.id))])
                .applied == 1)
    }
}
