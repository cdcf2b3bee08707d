import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// Links are stored as their bare ids. Cellar's coders write and read lists of links in one pass; these tests hold
/// that pass to the bytes of the ordinary `Codable` path, for every kind of id.
@Suite("Relationships: how links are stored")
struct LinkCodingTests {
    struct Target: Model { var id: Int64 }
    struct Named: Model { var id: String }
    struct Tagged: Model { var id: UUID }
    struct Composite: Model {
        struct Key: Codable, Hashable, Sendable {
            var shelf: String
            var slot: Int
        }
        var id: Key
    }

    struct Holder<T: Model>: Codable {
        var one: Link<T>?
        var many: [Link<T>]
    }

    struct Plain<ID: Codable>: Codable {
        var one: ID?
        var many: [ID]
    }

    /// The bytes of a holder of links equal those of the same ids in plain properties, and read back equal.
    private func expectStoredAsBareIDs<T: Model>(_ ids: [T.ID], of type: T.Type) throws where T.ID: Equatable {
        let holder = Holder<T>(one: ids.first.map { Link(id: $0) }, many: ids.map { Link(id: $0) })
        let plain = Plain<T.ID>(one: ids.first, many: ids)
        let (holderBytes, holderKeys) = try encoded(holder)
        let (plainBytes, _) = try encoded(plain)
        #expect(holderBytes == plainBytes)
        let back = try holderBytes.withUnsafeBytes {
            try RecordDecoder.decode(Holder<T>.self, from: $0, dictionary: holderKeys)
        }
        #expect(back.many.map(\.id) == ids)
        #expect(back.one?.id == ids.first)
    }

    @Test func everyKindOfIdIsStoredBare() throws {
        try expectStoredAsBareIDs([3, -1, .max, 3], of: Target.self)
        try expectStoredAsBareIDs(["taro", "", "hanako"], of: Named.self)
        try expectStoredAsBareIDs([UUID(), UUID()], of: Tagged.self)
        try expectStoredAsBareIDs(
            [.init(shelf: "A", slot: 1), .init(shelf: "B", slot: -2)], of: Composite.self)
        try expectStoredAsBareIDs([], of: Target.self)
    }

    @Test func randomListsOfLinksReadBackAsWritten() async {
        await checkProperty(count: 500, input: Gen.int64(in: .min ... .max).array(of: 0...40)) { ids in
            try expectStoredAsBareIDs(ids, of: Target.self)
        }
    }

    @Test func otherCodersSeeALinkAsItsId() throws {
        let holder = Holder<Named>(one: Link(id: "taro"), many: [Link(id: "a"), Link(id: "b")])
        let json = try JSONEncoder().encode(holder)
        #expect(String(decoding: json, as: UTF8.self).contains(#"["a","b"]"#))
        let back = try JSONDecoder().decode(Holder<Named>.self, from: json)
        #expect(back.many == holder.many && back.one == holder.one)
    }

    @Test func aDamagedListOfLinksIsADecodingError() throws {
        var (bytes, keys) = try encoded(Holder<Target>(one: nil, many: [Link(id: 1), Link(id: 2)]))
        // Cut the record inside the list's last element.
        bytes.removeLast(4)
        #expect(throws: DecodingError.self) {
            try bytes.withUnsafeBytes { try RecordDecoder.decode(Holder<Target>.self, from: $0, dictionary: keys) }
        }
    }
}
