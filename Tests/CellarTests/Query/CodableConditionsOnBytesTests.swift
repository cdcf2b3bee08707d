import CellarMacros
import Foundation
import LMDB
import Testing

@testable import Cellar

/// `Pet` as a plain `Codable` model (synthesized decoding), stored under the same name: same records.
struct CodablePet: Model, Equatable {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
    var weight: Double
    var tally: Tally
    static let schema = Schema<CodablePet>(name: "Pet", indexes: [.index(\.name)])
}

/// A plain `Codable` model with a property of every scalar type a condition reads from bytes.
struct ScalarPet: Model, Equatable {
    var id: Int64
    var small: Int8
    var unsigned: UInt16
    var medium: Int32
    var large: UInt64
    var int: Int
    var float: Float
    var double: Double
    var flag: Bool
    var text: String
    var date: Date
    var uuid: UUID
    var url: URL
    var amount: Decimal
    var blob: Data
    var maybe: Int?
    var maybeText: String?
    var words: [String]
    var flavour: PropertyTypes.Flavour
}

/// Decodes `age` from its text: the field's kind is not the property's, so it is not tied to the property.
struct TextAge: Model, Equatable {
    var id: Int64
    var age: Int
    enum CodingKeys: String, CodingKey { case id, age }
    init(id: Int64, age: Int) { (self.id, self.age) = (id, age) }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        age = Int(try container.decode(String.self, forKey: .age)) ?? -1
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(String(age), forKey: .age)
    }
}

/// Keys swapped between two properties of one kind: each property's field holds the other's value.
struct Swapped: Model, Equatable {
    var id: Int64
    var first: Int
    var second: Int
    enum CodingKeys: String, CodingKey {
        case id
        case first = "second"
        case second = "first"
    }
}

/// A stored property its coding keys leave out, which synthesized decoding passes over.
struct WithConstant: Model, Equatable {
    var id: Int64
    var note = ""
    var age: Int
    enum CodingKeys: String, CodingKey { case id, age }
}

/// A nested struct whose first property starts where the struct does.
struct Nested: Model, Equatable {
    struct Address: Codable, Equatable, Sendable {
        var zip: Int
        var city: String
    }
    var id: Int64
    var address: Address
    var zip: Int
    var doubled: Int { zip * 2 }
}

/// Reads `nick` from an older key when the record has none: the capture's placeholder never asks for the older key,
/// so the records an older version wrote are decoded to tell.
struct LegacyNick: Model, Equatable {
    var id: Int64
    var nick: String?
    enum CodingKeys: String, CodingKey { case id, nick, legacyNick }
    init(id: Int64, nick: String?) { (self.id, self.nick) = (id, nick) }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        nick =
            try container.decodeIfPresent(String.self, forKey: .nick)
            ?? container.decodeIfPresent(String.self, forKey: .legacyNick)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(nick, forKey: .nick)
    }
}

/// The older version, which stored the nick under `legacyNick`.
struct OldNick: Model {
    var id: Int64
    var legacyNick: String?
    static let schema = Schema<OldNick>(name: "LegacyNick")
}

/// A text type that refuses the capture's placeholder.
struct Address: Codable, Equatable, Sendable {
    let value: String
    init(_ value: String) { self.value = value }
    init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard text.contains("@") else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not an address"))
        }
        value = text
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// A renamed key after a field whose type refuses placeholders: what the capture learns after that field is the
/// stored properties' names, which proves nothing about the keys.
struct Account: Model, Equatable {
    var id: Int64
    var email: Address
    var managerID: Int?
    enum CodingKeys: String, CodingKey {
        case id, email
        case managerID = "manager_id"
    }
}

// Nested in the `@Record` suite, which is serialized: `tallyReads` counts the decodes of both.
extension ConditionsOnBytesTests {
    @Suite("Conditions checked on a Codable model's record bytes")
    struct CodableConditionsOnBytesTests {
        static func pets() -> [CodablePet] {
            ConditionsOnBytesTests.pets().map {
                CodablePet(id: $0.id, name: $0.name, age: $0.age, owner: $0.owner, weight: $0.weight, tally: $0.tally)
            }
        }

        /// Each condition, checked on bytes, finds what Swift's `filter` finds on the values; the plan says so.
        @Test func everyKindOfConditionAnswersAsTheValuesDo() throws {
            let folder = TemporaryFolder()
            let store = try folder.store([CodablePet.self])
            let pets = Self.pets()
            try store.write { tx in for pet in pets { try tx.insert(pet) } }
            func check(_ condition: Condition<CodablePet>, _ expected: (CodablePet) -> Bool, line: Int = #line) throws {
                let query = store.objects(CodablePet.self).where(condition)
                #expect(
                    try query.results().map(\.id).sorted() == pets.filter(expected).map(\.id),
                    "line \(line): \(condition.node.description)")
                #expect(try query.explain().contains("bytes"), "line \(line)")
            }
            try check(\.owner == 3) { $0.owner == 3 }
            try check(\.owner == nil) { $0.owner == nil }
            try check(\.owner != 3) { $0.owner != 3 }
            try check(\.age < 4) { $0.age < 4 }
            try check(\.age >= 9) { $0.age >= 9 }
            try check(\.weight > 7.5) { $0.weight > 7.5 }
            try check(.between(\.age, 3...5)) { (3...5).contains($0.age) }
            try check(.in(\.owner, [1, 2, nil])) { [1, 2, nil].contains($0.owner) }
            try check(.contains(\.name, "ar")) { $0.name.contains("ar") }
            try check(.equalsIgnoringCase(\.name, "TARO1")) { $0.name.lowercased() == "taro1" }
            try check(\.age == 3 && \.owner == 3) { $0.age == 3 && $0.owner == 3 }
            try check(\.age == 3 || \.owner == nil) { $0.age == 3 || $0.owner == nil }
            try check(!(\.age > 2)) { !($0.age > 2) }
            try check(\.age == 3 && .matching { $0.tally.value > 100 }) { $0.age == 3 && $0.tally.value > 100 }
            let macro = try store.objects(CodablePet.self).where(#Predicate { $0.owner == 3 && $0.age < 6 }).results()
            #expect(macro.map(\.id) == pets.filter { $0.owner == 3 && $0.age < 6 }.map(\.id))
        }

        @Test func onlyMatchingRecordsAreDecoded() throws {
            let folder = TemporaryFolder()
            let store = try folder.store([CodablePet.self])
            try store.write { tx in for pet in Self.pets() { try tx.insert(pet) } }
            // (Made first: the first condition on a model learns its fields, which decodes its types' placeholders.)
            let query = store.objects(CodablePet.self).where(\.owner == 3 && \.age < 6)
            tallyReads.withLock { $0 = 0 }
            let found = try query.results()
            #expect(found.count == Self.pets().filter { $0.owner == 3 && $0.age < 6 }.count)
            #expect(found.count > 0)
            #expect(tallyReads.withLock { $0 } == found.count)
            #expect(
                try store.objects(CodablePet.self).where(\.owner == 3).explain()
                    == "scan r/Pet, then check each record's bytes for owner == 3 before decoding it")
        }

        /// Records the `@Record` twin wrote, and records an older version wrote without `owner`, answer alike.
        @Test func recordsOfOtherVersionsAnswerAsTheirDecodedValues() throws {
            let folder = TemporaryFolder()
            do {
                let store = try folder.store([OldPet.self])
                try store.write { tx in
                    for n in 1...10 {
                        try tx.insert(OldPet(id: Int64(n), name: "Old", age: n % 3, weight: 1, tally: Tally(n)))
                    }
                }
            }
            do {
                let store = try folder.store([Pet.self])
                try store.write { tx in
                    try tx.insert(Pet(id: 11, name: "Made", age: 1, owner: 5, weight: 2, tally: Tally(11)))
                }
            }
            let store = try folder.store([CodablePet.self])
            try store.write { tx in
                try tx.insert(CodablePet(id: 12, name: "Plain", age: 2, owner: 5, weight: 2, tally: Tally(12)))
            }
            #expect(try store.objects(CodablePet.self).where(\.owner == nil).results().map(\.id) == Array(1...10))
            #expect(try store.objects(CodablePet.self).where(\.owner == 5).results().map(\.id) == [11, 12])
            #expect(try store.objects(CodablePet.self).where(\.owner != nil && \.age == 1).results().map(\.id) == [11])
        }

        /// Every scalar type: `==` with a stored value and `<` (where ordered) find what the values say, and each reads
        /// the field's bytes; a raw-value enum's condition is checked on decoded values.
        @Test func everyScalarTypeAnswersAsTheValuesDo() throws {
            var generator = SeededGenerator(seed: 24)
            let values = (1...200).map { (n: Int) -> ScalarPet in
                func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &generator)] }
                return ScalarPet(
                    id: Int64(n), small: pick([-128, -1, 0, 5, 127]), unsigned: pick([0, 7, 65535]),
                    medium: pick([-70_000, 0, 3]), large: pick([0, 1, .max]), int: pick([-3, 0, 1 << 40]),
                    float: pick([-1.5, 0, 2.25]), double: pick([-0.0, 0.1, 1e300]), flag: pick([true, false]),
                    text: pick(["", "a", "é", "e\u{301}", "zz"]),
                    date: Date(timeIntervalSinceReferenceDate: pick([-1, 0, 86_400.5])),
                    uuid: pick([
                        UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)),
                        UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
                    ]),
                    url: pick([URL(fileURLWithPath: "/tmp/a"), URL(string: "https://example.com/x?y=1")!]),
                    amount: pick([Decimal(0), Decimal(string: "12.50")!, Decimal(-3)]),
                    blob: pick([Data(), Data([1, 2])]),
                    maybe: pick([nil, 0, 9]), maybeText: pick([nil, "", "x"]), words: pick([[], ["a"], ["a", "b"]]),
                    flavour: pick([.vanilla, .mint]))
            }
            let folder = TemporaryFolder()
            let store = try folder.store([ScalarPet.self])
            try store.write { tx in for value in values { try tx.insert(value) } }
            func check<V: Equatable & Encodable & Sendable>(
                _ path: KeyPath<ScalarPet, V> & Sendable, onBytes: Bool = true, line: Int = #line
            ) throws {
                for probe in values.prefix(3).map({ $0[keyPath: path] }) {
                    let query = store.objects(ScalarPet.self).where(path == probe)
                    #expect(
                        try query.results().map(\.id) == values.filter { $0[keyPath: path] == probe }.map(\.id),
                        "line \(line): == \(probe)")
                    #expect(try query.explain().contains("bytes") == onBytes, "line \(line)")
                    let different = store.objects(ScalarPet.self).where(path != probe)
                    #expect(
                        try different.results().map(\.id) == values.filter { $0[keyPath: path] != probe }.map(\.id),
                        "line \(line): != \(probe)")
                }
            }
            func ordered<V: Comparable & Encodable & Sendable>(
                _ path: KeyPath<ScalarPet, V> & Sendable, line: Int = #line
            )
                throws
            {
                try check(path, line: line)
                for probe in values.prefix(3).map({ $0[keyPath: path] }) {
                    let query = store.objects(ScalarPet.self).where(path < probe)
                    #expect(
                        try query.results().map(\.id) == values.filter { $0[keyPath: path] < probe }.map(\.id),
                        "line \(line): < \(probe)")
                }
            }
            try ordered(\.small)
            try ordered(\.unsigned)
            try ordered(\.medium)
            try ordered(\.large)
            try ordered(\.int)
            try ordered(\.float)
            try ordered(\.double)
            try check(\.flag)
            try ordered(\.text)
            try ordered(\.date)
            try check(\.uuid)
            try check(\.url)
            try ordered(\.amount)
            try check(\.blob)
            try check(\.maybe)
            try check(\.maybeText)
            try check(\.words)
            try check(\.flavour, onBytes: false)
        }

        /// An `init(from:)` that falls back to an older key, and renamed keys the capture cannot see: found all the same.
        @Test func recordsAnOlderKeyOrARenamedKeyHoldsAreFound() throws {
            let folder = TemporaryFolder()
            do {
                let store = try folder.store([OldNick.self])
                try store.write { tx in
                    try tx.insert(OldNick(id: 1, legacyNick: "bob"))
                    try tx.insert(OldNick(id: 2, legacyNick: nil))
                }
            }
            let store = try folder.store([LegacyNick.self, Account.self])
            try store.write { tx in
                try tx.insert(LegacyNick(id: 3, nick: "bob"))
                try tx.insert(LegacyNick(id: 4, nick: nil))
                for n in 1...6 { try tx.insert(Account(id: Int64(n), email: Address("a\(n)@b.c"), managerID: n % 3)) }
            }
            #expect(try store.objects(LegacyNick.self).where(\.nick == "bob").results().map(\.id) == [1, 3])
            #expect(try store.objects(LegacyNick.self).where(\.nick == nil).results().map(\.id) == [2, 4])
            #expect(try store.objects(LegacyNick.self).where(\.nick != nil).results().map(\.id) == [1, 3])
            #expect(
                try store.objects(LegacyNick.self).where(#Predicate { $0.nick == "bob" }).results().map(\.id) == [1, 3])
            let managed = store.objects(Account.self).where(\.managerID == 1)
            #expect(try managed.results().map(\.id) == [1, 4])
            #expect(try !managed.explain().contains("bytes"))
        }

        /// Models whose fields cannot be tied to their properties by name answer from decoded values.
        @Test func modelsWhoseFieldsAreNotTheirPropertiesAreDecoded() throws {
            let folder = TemporaryFolder()
            let store = try folder.store([TextAge.self, Swapped.self, WithConstant.self, Nested.self])
            try store.write { tx in
                for n in 1...30 {
                    try tx.insert(TextAge(id: Int64(n), age: n % 4))
                    try tx.insert(Swapped(id: Int64(n), first: n % 3, second: n % 5))
                    try tx.insert(WithConstant(id: Int64(n), age: n % 6))
                    try tx.insert(Nested(id: Int64(n), address: .init(zip: n % 7, city: "C\(n % 2)"), zip: n % 4))
                }
            }
            func expectDecoded<M: Model>(_ query: Query<M>, _ ids: [Int64], line: Int = #line) throws
            where M.ID == Int64 {
                #expect(try query.results().map(\.id) == ids, "line \(line)")
                #expect(try !query.explain().contains("bytes"), "line \(line)")
            }
            let all = Array(Int64(1)...30)
            try expectDecoded(store.objects(TextAge.self).where(\.age == 2), all.filter { $0 % 4 == 2 })
            try expectDecoded(store.objects(Swapped.self).where(\.first == 2), all.filter { $0 % 3 == 2 })
            try expectDecoded(store.objects(Swapped.self).where(\.second == 4), all.filter { $0 % 5 == 4 })
            try expectDecoded(store.objects(WithConstant.self).where(\.age == 5), all.filter { $0 % 6 == 5 })
            try expectDecoded(store.objects(Nested.self).where(\.address.zip == 3), all.filter { $0 % 7 == 3 })
            try expectDecoded(store.objects(Nested.self).where(\.address.city == "C1"), all.filter { $0 % 2 == 1 })
            try expectDecoded(store.objects(Nested.self).where(\.doubled == 4), all.filter { $0 % 4 == 2 })
            // The top-level property is read from bytes, beside the path into `address` that starts at its offset.
            let zip = store.objects(Nested.self).where(\.zip == 1)
            #expect(try zip.results().map(\.id) == all.filter { $0 % 4 == 1 })
            #expect(try zip.explain().contains("bytes for zip == 1"))
        }

        /// Observation, a read-only store and a query inside a write see the same answers as a query on the store.
        @Test func bytesChecksWorkWhereverAQueryRuns() async throws {
            let folder = TemporaryFolder()
            do {
                let store = try folder.store([CodablePet.self])
                try await store.write { tx in for pet in Self.pets() { try tx.insert(pet) } }
                let expected = Self.pets().filter { $0.owner == 3 }.map(\.id)
                try await store.write { tx in
                    #expect(try tx.objects(CodablePet.self).where(\.owner == 3).results().map(\.id) == expected)
                    try tx.insert(CodablePet(id: 1_000, name: "New", age: 1, owner: 3, weight: 1, tally: Tally(0)))
                    #expect(
                        try tx.objects(CodablePet.self).where(\.owner == 3).results().map(\.id) == expected + [1_000])
                }
                var changes = store.changes(of: store.objects(CodablePet.self).where(\.owner == 3)).makeAsyncIterator()
                let first = try #require(try await changes.next())
                #expect(first.results.map(\.id) == expected + [1_000])
                try await store.write { tx in try tx.delete(CodablePet.self, id: 1_000) }
                let second = try #require(try await changes.next())
                #expect(second.results.map(\.id) == expected)
            }
            let readOnly = try await Store(
                at: folder.url, configuration: ReadOnlyStoreTests.readOnly([CodablePet.self]))
            #expect(
                try await readOnly.objects(CodablePet.self).where(\.owner == 3).results().map(\.id)
                    == Self.pets().filter { $0.owner == 3 }.map(\.id))
        }
    }
}
