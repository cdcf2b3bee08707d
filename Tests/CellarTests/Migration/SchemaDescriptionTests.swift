import Foundation
import Testing

@testable import Cellar

/// A model's fields come from its type's stored properties: no value is made and none of its code runs.
@Suite("Schema description")
struct SchemaDescriptionTests {
    enum Kind: String, Codable { case dog, cat }
    enum Size: Int, Codable, CaseIterable {
        case small = 1
        case large = 2
    }

    struct Address: Codable, Sendable {
        var street: String
        var zip: String?
    }

    struct Owner: Model {
        var id: Int
    }

    struct Everything: Model {
        var id: UUID
        var name: String
        var nickname: String?
        var age: Int8
        var weight: Double
        var ratio: Float
        var alive: Bool
        var born: Date
        var photo: Data
        var homepage: URL?
        var price: Decimal
        var kind: Kind
        var size: Size
        var address: Address
        var tags: [String]
        var scores: [String: Int]
        var visits: [Address]
        var owner: Link<Owner>?
        var friends: [Link<Owner>]
    }

    @Test func everyKindOfPropertyIsSeenWithItsOptionality() throws {
        let schema = try Everything.describedSchema()
        let byName = Dictionary(uniqueKeysWithValues: schema.properties.map { ($0.name, $0) })
        let expected: [(String, ValueShape, Bool)] = [
            ("id", .uuid, false), ("name", .string, false), ("nickname", .string, true), ("age", .int, false),
            ("weight", .double, false), ("ratio", .float, false), ("alive", .bool, false), ("born", .date, false),
            ("photo", .data, false), ("homepage", .url, true), ("price", .decimal, false),
            ("kind", .string, false), ("size", .int, false),
            (
                "address",
                .object([
                    PropertyShape(name: "street", shape: .string, isOptional: false),
                    PropertyShape(name: "zip", shape: .string, isOptional: true),
                ]), false
            ),
            ("tags", .list(.string), false), ("scores", .dictionary(.int), false),
            (
                "visits",
                .list(
                    .object([
                        PropertyShape(name: "street", shape: .string, isOptional: false),
                        PropertyShape(name: "zip", shape: .string, isOptional: true),
                    ])), false
            ),
            ("owner", .link("Owner"), true), ("friends", .list(.link("Owner")), false),
        ]
        #expect(schema.properties.map(\.name) == expected.map(\.0))
        for (name, shape, isOptional) in expected {
            #expect(byName[name]?.shape == shape, "\(name)")
            #expect(byName[name]?.isOptional == isOptional, "\(name)")
        }
    }

    indirect enum Status: Codable, Sendable {
        case active
        case banned(reason: String)
    }

    struct Node: Model {
        var id: Int
        var children: [Child]
        var status: Status
    }

    struct Child: Codable, Sendable {
        var name: String
        var children: [Child]
        var parent: Box?
    }

    final class Box: Codable, Sendable {
        let child: Child
    }

    @Test func recursiveTypesEndAndEnumsWithPayloadsAreJudgedByTheirRecords() throws {
        let schema = try Node.describedSchema()
        #expect(schema.properties.map(\.name) == ["id", "children", "status"])
        #expect(schema.property("status")?.shape == .opaque("Status"))
        guard case .list(.object(let fields)) = schema.property("children")?.shape else {
            Issue.record("children: \(String(describing: schema.property("children")))")
            return
        }
        #expect(fields.map(\.name) == ["name", "children", "parent"])
        #expect(fields[1].shape == .list(.opaque("Child")))
        #expect(fields[2].shape == .opaque("Box"))
    }

    struct Validating: Model {
        var id: Int
        var email: Email
    }

    struct Email: Codable, Sendable, Equatable {
        let address: String
        init(_ address: String) { self.address = address }
        init(from decoder: any Decoder) throws {
            address = try decoder.singleValueContainer().decode(String.self)
            guard address.contains("@") else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "not an email"))
            }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(address)
        }
    }

    struct Contact: Codable, Sendable, Equatable {
        var name: String
        var email: Email
        var backup: Email?
        var emails: [Email]
        var phone: String?
        var kind = "person"
    }

    struct Holder: Model, Equatable {
        var id: Int
        var contact: Contact
        var note: String
    }

    @Test func aTypeWithAValidatingDecoderIsDescribedByItsPropertiesAndRoundTrips() throws {
        let schema = try Holder.describedSchema()
        #expect(schema.properties.map(\.name) == ["id", "contact", "note"])
        guard case .object(let fields) = schema.property("contact")?.shape else {
            Issue.record("contact: \(String(describing: schema.property("contact")))")
            return
        }
        let email = ValueShape.object([PropertyShape(name: "address", shape: .string, isOptional: false)])
        let expected = [
            PropertyShape(name: "name", shape: .string, isOptional: false),
            PropertyShape(name: "email", shape: email, isOptional: false),
            PropertyShape(name: "backup", shape: email, isOptional: true),
            PropertyShape(name: "emails", shape: .list(email), isOptional: false),
            PropertyShape(name: "phone", shape: .string, isOptional: true),
            PropertyShape(name: "kind", shape: .string, isOptional: false),
        ]
        #expect(fields == expected)

        let folder = TemporaryFolder()
        let holder = Holder(
            id: 1,
            contact: Contact(
                name: "Ann", email: Email("a@b.c"), backup: nil, emails: [Email("c@d.e")], phone: "1"),
            note: "n")
        do {
            let store = try folder.store([Holder.self])
            try store.write { tx in try tx.insert(holder) }
        }
        #expect(try folder.store([Holder.self]).object(Holder.self, id: 1) == holder)
    }

    struct Renamed: Model, Equatable {
        var id: Int
        var email: Email
        var name: String
        enum CodingKeys: String, CodingKey {
            case id
            case email = "mail"
            case name
        }
    }

    @Test func aValidatingTypeBehindCustomKeysOpensStoresAndReadsBack() throws {
        let folder = TemporaryFolder()
        let renamed = Renamed(id: 1, email: Email("a@b.c"), name: "Ann")
        do {
            let store = try folder.store([Renamed.self])
            try store.write { tx in try tx.insert(renamed) }
        }
        let store = try folder.store([Renamed.self])
        #expect(try store.object(Renamed.self, id: 1) == renamed)
        #expect(try store.objects(Renamed.self).where(\.name == "Ann").count() == 1)
        #expect(try store.verifyIntegrity().problems == [])
    }
}
