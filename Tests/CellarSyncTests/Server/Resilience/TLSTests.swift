import CellarSyncProtocol
import Foundation
import Testing

/// The server serves HTTPS when given a certificate and its key: made here by openssl, a certificate authority of
/// the test's own and a certificate for 127.0.0.1 that it signed.
@Suite("Sync: HTTPS", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct TLSTests {
    /// A certificate authority and a server certificate for 127.0.0.1 and localhost, in a folder of their own.
    struct Certificates {
        let folder = TemporaryFolder()
        var authority: String { folder.url.appendingPathComponent("ca.pem").path }
        var certificate: String { folder.url.appendingPathComponent("server.pem").path }
        var key: String { folder.url.appendingPathComponent("server.key").path }

        init() async throws {
            let openssl = URL(fileURLWithPath: "/usr/bin/openssl")
            let path = folder.url.path
            let steps: [[String]] = [
                [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Cellar test CA",
                    "-keyout", "\(path)/ca.key", "-out", "\(path)/ca.pem",
                ],
                [
                    "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "\(path)/server.key",
                    "-out", "\(path)/server.csr",
                ],
                [
                    "x509", "-req", "-in", "\(path)/server.csr", "-CA", "\(path)/ca.pem", "-CAkey", "\(path)/ca.key",
                    "-CAcreateserial", "-days", "2", "-out", "\(path)/server.pem", "-extfile", "\(path)/san.cnf",
                ],
            ]
            try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
                toFile: "\(path)/san.cnf", atomically: true, encoding: .utf8)
            for step in steps {
                let (status, _) = try await Harness.run(openssl, step)
                try #require(status == 0, "openssl \(step.prefix(2).joined(separator: " ")) failed")
            }
        }
    }

    /// curl's answer to a POST of `body`: its exit status and what the server said.
    func curl(_ url: URL, authority: String?, body: String, token: String? = nil) async throws -> (Int32, String) {
        var arguments = ["-sS", "-X", "POST", "--data", body, "-H", "Content-Type: application/json"]
        if let authority { arguments += ["--cacert", authority] }
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        return try await Harness.run(URL(fileURLWithPath: "/usr/bin/curl"), arguments + [url.absoluteString])
    }

    @Test func theServerServesHTTPSWithTheCertificateItIsGiven() async throws {
        let certificates = try await Certificates()
        let server = try await ServerProcess(arguments: [
            "--tls-certificate", certificates.certificate, "--tls-key", certificates.key,
        ])
        #expect(server.url.scheme == "https")
        let session = server.url.appendingPathComponent(SyncProtocol.sessionPath)
        let user = Harness.newUser("tls")
        let token = try await Harness.token(for: user)
        let device = Harness.device("f")
        // Trusting the test's authority, a session goes through, over TLS.
        let (status, answer) = try await curl(
            session, authority: certificates.authority, body: #"{"device":"\#(device)"}"#, token: token)
        #expect(status == 0)
        let response = try SessionResponse(jsonBytes: Array(answer.utf8))
        #expect(response.user == user)
        // Without trusting it, curl refuses the certificate; in plain HTTP, the server answers nothing.
        #expect(try await curl(session, authority: nil, body: "{}").0 != 0)
        var plain = URLComponents(url: session, resolvingAgainstBaseURL: false)!
        plain.scheme = "http"
        let (plainStatus, plainAnswer) = try await curl(plain.url!, authority: nil, body: "{}")
        #expect(plainStatus != 0 || !plainAnswer.contains("unauthorized"))
    }

    @Test func aServerWithoutItsKeyDoesNotStart() async throws {
        let certificates = try await Certificates()
        await #expect(throws: ServerProcess.ServerError.self) {
            _ = try await ServerProcess(arguments: [
                "--tls-certificate", certificates.certificate, "--tls-key", certificates.key + ".missing",
            ])
        }
    }
}
