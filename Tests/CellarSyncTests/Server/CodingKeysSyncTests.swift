@_spi(Sync) import Cellar
import CellarSyncProtocol
import Foundation
import Testing

@testable import CellarSync

/// A contact whose coding keys are not its property names, and whose decoder force-unwraps: what app code that also
/// reads JSON from an API looks like.
struct KeyedContact: Model, Equatable {
    enum Tier: String, Codable, Sendable { case free, paid }
    var id: String
    var fullName: String
    var tier: Tier
    var phone: String?

    enum CodingKeys: String, CodingKey {
        case id
        case fullName = "full_name"
        case tier = "tier_name"
        case phone
    }

    init(id: String, fullName: String, tier: Tier, phone: String?) {
        self.id = id
        self.fullName = fullName
        self.tier = tier
        self.phone = phone
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        fullName = try container.decode(String.self, forKey: .fullName)
        tier = Tier(rawValue: try container.decode(String.self, forKey: .tier))!
        phone = try container.decodeIfPresent(String.self, forKey: .phone)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(fullName, forKey: .fullName)
        try container.encode(tier.rawValue, forKey: .tier)
        try container.encodeIfPresent(phone, forKey: .phone)
    }
}

@Suite(
    "Sync: a model whose coding keys are not its property names", .serialized,
    .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct CodingKeysSyncTests {
    /// The client is made before anything is written, as an app's launch does: the server is told the keys the
    /// records are written with once a record shows them, and each property arrives on the other device.
    @Test func everyPropertyArrivesUnderItsCodingKey() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("coding-keys")
        let token = try await Harness.token(for: user)
        let folder = TemporaryFolder()
        let models: [any Model.Type] = [KeyedContact.self]
        let contact = KeyedContact(id: "c1", fullName: "Ann Lee", tier: .paid, phone: nil)
        do {
            let store = try await Store(
                at: folder.url.appendingPathComponent("a"), configuration: .init(models: models))
            let client = try SyncClient(
                store: store, configuration: .init(server: server.url, token: token, models: models))
            try await store.write { try $0.insert(contact) }
            try await client.sync()
        }
        let stored = try await Harness.sql(
            "select record->>'full_name', record->>'tier_name' from cellar_records where owner = '\(user)' and id = 'c1'"
        )
        #expect(stored == "Ann Lee|paid")
        let store = try await Store(at: folder.url.appendingPathComponent("b"), configuration: .init(models: models))
        let client = try SyncClient(
            store: store, configuration: .init(server: server.url, token: token, models: models))
        try await client.sync()
        #expect(try await store.object(KeyedContact.self, id: "c1") == contact)
    }
}
