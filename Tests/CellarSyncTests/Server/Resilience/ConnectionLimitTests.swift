import CellarSyncProtocol
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Connections cannot hold the server: a half-sent request is closed after the idle timeout, and a stopping server
/// answers its waiting pulls instead of waiting for them.
@Suite("Sync: connections the server does not keep", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct ConnectionLimitTests {
    /// A TCP connection to the server that sent `text` and nothing more.
    final class RawConnection: @unchecked Sendable {
        let socket: Int32

        init?(port: Int, sending text: String) {
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(socket)
                return nil
            }
            _ = text.withCString { send(socket, $0, strlen($0), 0) }
        }

        deinit { close(socket) }

        /// How many of `connections` the server closed, waiting up to `seconds` in all, on a thread of its own.
        static func closedByServer(_ connections: [RawConnection], within seconds: Int) async -> Int {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    let deadline = DispatchTime.now() + .seconds(seconds)
                    var open = Set(connections.map(\.socket))
                    while !open.isEmpty, DispatchTime.now() < deadline {
                        var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                        guard poll(&descriptors, nfds_t(descriptors.count), 500) > 0 else { continue }
                        for descriptor in descriptors where descriptor.revents != 0 {
                            var byte: UInt8 = 0
                            if recv(descriptor.fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0 { open.remove(descriptor.fd) }
                        }
                    }
                    continuation.resume(returning: connections.count - open.count)
                }
            }
        }
    }

    /// Before: 200 half-sent, unauthenticated requests were all still open after 150 s.
    @Test func halfSentRequestsAreClosedAfterTheIdleTimeout() async throws {
        let server = try await ServerProcess(arguments: ["--idle-timeout", "2"])
        let port = try #require(server.url.port)
        let connections = (0..<200).compactMap { number in
            RawConnection(
                port: port,
                sending: "POST /v1/pull HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(number)\r\nContent-")
        }
        #expect(connections.count == 200)
        // Each is closed by the server; a minute is far past the two seconds asked.
        let closed = await RawConnection.closedByServer(connections, within: 60)
        #expect(closed == 200)
        // And the server still answers.
        let device = Device(server: server.url, token: nil, id: Harness.device("c"))
        #expect(try await device.refused(SyncProtocol.pullPath, body: Data("{}".utf8)).status == 401)
    }

    /// Before: a server with one pull waiting took as long as the pull's wait (23 s seen) to stop on SIGTERM.
    @Test func aStoppingServerAnswersItsWaitingPullsAndEnds() async throws {
        let server = try await ServerProcess()
        let device = Device(
            server: server.url, token: try await Harness.token(for: Harness.newUser("shutdown")),
            id: Harness.device("d"), session: Device.ownSession())
        _ = try await device.push([change("rex", ["name": .string("Rex")], stamp: Harness.stamp(device.id))])
        let cursor = try await device.pull(cursor: nil).cursor
        let started = ContinuousClock.now
        let waiting = Task { try await device.pull(cursor: cursor, wait: SyncProtocol.maxWaitSeconds) }
        // Once the pull waits on the server.
        try await Task.sleep(for: .seconds(1))
        server.stop(SIGTERM)
        let stopped = ContinuousClock.now - started
        let answer = try await waiting.value
        #expect(answer.changes.isEmpty)
        #expect(server.process.terminationReason == .exit, "\(server.process.terminationReason.rawValue)")
        // It ended well before the pull's own wait would have: the wait did not hold it.
        #expect(stopped < .seconds(SyncProtocol.maxWaitSeconds / 2), "stopped after \(stopped)")
    }
}
