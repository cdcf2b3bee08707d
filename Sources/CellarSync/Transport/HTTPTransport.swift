import CellarSyncProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The requests a client makes: JSON over HTTP (the protocol's own codec), with the user's token.
struct HTTPTransport: Sendable {
    let server: URL
    var token: String
    let session: URLSession

    init(server: URL, token: String) {
        self.server = server
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = TimeInterval(SyncProtocol.maxWaitSeconds + 30)
        self.session = URLSession(configuration: configuration)
    }

    func post<Response: JSONMessage>(
        _ path: String, _ body: some JSONMessage, waiting wait: Int = 0
    ) async throws(SyncError) -> Response {
        var request = URLRequest(url: server.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.timeoutInterval = TimeInterval(wait + 30)
        request.httpBody = Data(body.jsonBytes)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw .unreachable(reason: error.localizedDescription)
        }
        guard let http = response as? HTTPURLResponse else { throw .unreachable(reason: "the answer is not HTTP") }
        guard http.statusCode == 200 else {
            if let failure = try? SyncFailure(jsonBytes: data) { throw .server(failure) }
            throw .unreachable(reason: "the server answered HTTP \(http.statusCode)")
        }
        do throws(JSONShapeError) {
            return try Response(jsonBytes: data)
        } catch {
            throw .unreachable(reason: "the server's answer is not a \(Response.self): \(error)")
        }
    }
}
