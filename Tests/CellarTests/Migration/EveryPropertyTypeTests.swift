import Foundation
import Testing

@testable import Cellar

/// Types whose decoding refuses, traps on or loops over the placeholders a schema capture could invent: each one
/// must open, write, reopen, migrate, be observed and be dumped like any other property.
enum PropertyTypes {
    enum Flavour: String, Codable, Hashable, Sendable { case vanilla, mint }

    struct GridPoint: Codable, Hashable, Sendable {
        var x: Int
        var y: Int
    }

    /// An enum with associated values, which the README says just works.
    enum Shape: Codable, Equatable, Sendable {
        case point
        case circle(radius: Double)
        case label(text: String, size: Int)
    }

    /// Reads the second element of the list it decodes: a one-element placeholder would trap.
    struct Pair: Codable, Equatable, Sendable {
        var first: Int
        var second: Int
        init(first: Int, second: Int) {
            self.first = first
            self.second = second
        }
        init(from decoder: any Decoder) throws {
            let values = try decoder.singleValueContainer().decode([Int].self)
            first = values[0]
            second = values[1]
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode([first, second])
        }
    }

    /// Splits its text and reads the first part: an empty placeholder would trap.
    struct Version: Codable, Equatable, Sendable {
        var major: Int
        var rest: String
        init(major: Int, rest: String) {
            self.major = major
            self.rest = rest
        }
        init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            let parts = text.split(separator: ".", maxSplits: 1)
            major = Int(parts[0]) ?? 0
            rest = parts.count > 1 ? String(parts[1]) : ""
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rest.isEmpty ? "\(major)" : "\(major).\(rest)")
        }
    }

    /// Walks nested lists for as long as they have elements: placeholders that always offer one never end.
    struct Tree: Codable, Equatable, Sendable {
        var depths: [Int]
        init(depths: [Int]) { self.depths = depths }
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            var depths: [Int] = []
            try Self.read(&container, depth: 0, into: &depths)
            self.depths = depths
        }
        private static func read(_ container: inout any UnkeyedDecodingContainer, depth: Int, into depths: inout [Int])
            throws
        {
            while !container.isAtEnd {
                var inner = try container.nestedUnkeyedContainer()
                depths.append(depth)
                try read(&inner, depth: depth + 1, into: &depths)
            }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            for _ in depths { _ = container.nestedUnkeyedContainer() }
        }
    }

    /// Validates what it decodes and refuses anything else.
    struct Email: Codable, Comparable, Sendable {
        var address: String
        static func < (lhs: Email, rhs: Email) -> Bool { lhs.address < rhs.address }
        init(_ address: String) { self.address = address }
        init(from decoder: any Decoder) throws {
            address = try decoder.singleValueContainer().decode(String.self)
            guard address.contains("@") else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no @"))
            }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(address)
        }
    }

    struct Wide: Model, Equatable {
        var id: Int64 = 0
        var components: URLComponents
        var characters: CharacterSet
        var zone: TimeZone
        var calendar: Calendar
        var locale: Locale
        var parts: DateComponents
        var difference: CollectionDifference<Int>
        var shape: Shape
        var shapes: [Shape]
        var flavours: [Flavour: Bool]
        var byPoint: [GridPoint: String]
        var pair: Pair
        var version: Version
        var tree: Tree
        var span: Range<Int>
        var huge: Int128
        var hugeUnsigned: UInt128?
        var email: Email
        var emails: ClosedRange<Email>
        var note: String?
        static let schema = Schema<Wide>(autoIncrement: true)

        static func sample(_ number: Int) -> Wide {
            var components = URLComponents()
            components.scheme = "https"
            components.host = "example.com"
            components.path = "/dogs/\(number)"
            var parts = DateComponents()
            parts.year = 2026
            parts.day = number
            return Wide(
                components: components, characters: CharacterSet(charactersIn: "abc\(number)"),
                zone: TimeZone(identifier: "Europe/Paris") ?? .gmt, calendar: Calendar(identifier: .iso8601),
                locale: Locale(identifier: "fr_FR"), parts: parts,
                difference: [1, 2, number].difference(from: [1, 3]),
                shape: number % 2 == 0 ? .circle(radius: Double(number)) : .label(text: "n\(number)", size: number),
                shapes: [.point, .circle(radius: 1)], flavours: [.vanilla: true, .mint: number % 2 == 0],
                byPoint: [GridPoint(x: number, y: 1): "here"], pair: Pair(first: number, second: -number),
                version: Version(major: number, rest: "2.\(number)"), tree: Tree(depths: [0, 0]),
                span: number..<(number + 10), huge: Int128(number) << 100, hugeUnsigned: UInt128.max - UInt128(number),
                email: Email("dog\(number)@example.com"),
                emails: Email("a\(number)@example.com")...Email("b@example.com"), note: nil)
        }
    }
}

@Suite("Every property type the README names")
struct EveryPropertyTypeTests {
    typealias Wide = PropertyTypes.Wide

    @Test func aModelOfTypesWhoseDecodersValidateOpensWritesAndReadsBack() throws {
        let folder = TemporaryFolder()
        let written = (1...6).map(Wide.sample)
        do {
            let store = try folder.store([Wide.self])
            try store.write { tx in for var wide in written { try tx.insert(&wide) } }
        }
        let store = try folder.store([Wide.self])
        let read = try store.objects(Wide.self).results()
        #expect(read.count == written.count)
        for (index, wide) in read.enumerated() {
            var expected = written[index]
            expected.id = Int64(index + 1)
            #expect(wide == expected)
        }
        #expect(try store.verifyIntegrity().problems == [])
        let schema = try Wide.describedSchema()
        #expect(schema.property("zone")?.shape == .opaque("TimeZone"))
        #expect(schema.property("shape")?.shape == .opaque("Shape"))
        #expect(schema.property("flavours")?.shape == .pairs(key: .string, value: .bool))
        #expect(schema.property("huge")?.shape == .int)
        #expect(schema.property("span")?.shape == .list(.int))
        // A struct is described by its stored properties, whatever its own coding does with them; its records say
        // whether they read.
        let email = ValueShape.object([PropertyShape(name: "address", shape: .string, isOptional: false)])
        #expect(schema.property("email")?.shape == email)
        #expect(schema.property("emails")?.shape == .list(email))
        #expect(schema.properties.last?.name == "note")
    }

    @Test func aChangeInsideAnOpaqueTypeThatStoredRecordsCannotFollowNeedsAMigration() throws {
        let folder = TemporaryFolder()
        enum Before {
            enum Mood: Codable, Sendable {
                case calm
                case angry(level: Int)
            }
        }
        enum After {
            enum Mood: Codable, Sendable {
                case calm
                case angry(level: Int, reason: String)
            }
        }
        struct V1: Model {
            var id: Int
            var mood: Before.Mood
            static let schema = Schema<V1>(name: "Person")
        }
        struct V2: Model {
            var id: Int
            var mood: After.Mood
            var nickname: String?
            static let schema = Schema<V2>(name: "Person")
        }
        do {
            let store = try folder.store([V1.self])
            try store.write { tx in
                try tx.insert(V1(id: 1, mood: .calm))
                try tx.insert(V1(id: 2, mood: .angry(level: 3)))
            }
        }
        // The stored shapes name the same type, but record 2 no longer decodes: found at opening, in words.
        do {
            _ = try folder.store([V2.self])
            Issue.record("opening succeeded")
        } catch let error as StoreError {
            guard case .migrationRequired(let changes) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(
                changes.contains {
                    if case .propertyUnreadable("Person", let property, let reason) = $0 {
                        return property.hasPrefix("mood") && reason.contains("id 2")
                    }
                    return false
                }, "\(changes)")
        }
        // A migration that rewrites the records opens it.
        let migrated = try Store(
            at: folder.url,
            configuration: .init(
                models: [V2.self], schemaVersion: 2,
                migrations: [
                    .to(2) { migration in
                        try migration.enumerateRecords(ofType: "Person") { person in person.delete() }
                    }
                ]))
        #expect(try migrated.count(V2.self) == 0)
    }

    @Test func aMigrationStepTouchesTheModelAndObservationSeesTheResult() async throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Wide.self])
            try await store.write { tx in for var wide in (1...3).map(Wide.sample) { try tx.insert(&wide) } }
        }
        let store = try await Store(
            at: folder.url,
            configuration: .init(
                models: [Wide.self], schemaVersion: 2,
                migrations: [
                    .to(2) { migration in
                        try migration.enumerateRecords(ofType: "Wide") { wide in
                            try wide.set("note", to: "migrated")
                            try wide.set("huge", to: Int128(-7))
                        }
                    }
                ]))
        let all = try await store.objects(Wide.self).results()
        #expect(all.map(\.note) == ["migrated", "migrated", "migrated"])
        #expect(all.map(\.huge) == [-7, -7, -7])
        #expect(all.map(\.shape) == (1...3).map { Wide.sample($0).shape })

        var changes = store.changes(of: store.objects(Wide.self)).makeAsyncIterator()
        let initial = try #require(try await changes.next())
        #expect(initial.results.count == 3)
        try await store.write { tx in
            var changed = Wide.sample(4)
            changed.id = 2
            try tx.update(changed)
        }
        let change = try #require(try await changes.next())
        #expect(change.modifications == [1] && change.results[1].shape == .circle(radius: 4))
        #expect(try await store.verifyIntegrity().problems == [])
    }

    indirect enum Tree: Codable, Equatable, Sendable {
        case node(Tree, Tree)
        case leaf(Int)
    }

    enum Payment: Codable, Equatable, Sendable {
        case card(PropertyTypes.Email)
        case cash
    }

    @Test func anEnumWhoseFirstCaseRecursesOrRefusesOpensAsAnOpaqueValue() throws {
        struct Ledger: Model, Equatable {
            var id: Int
            var tree: Tree
            var spare: Tree?
            var payment: Payment
            var payments: [Payment]
        }
        let schema = try Ledger.describedSchema()
        #expect(schema.property("tree")?.shape == .opaque("Tree"))
        #expect(schema.property("payment")?.shape == .opaque("Payment"))
        #expect(schema.property("payments")?.shape == .list(.opaque("Payment")))
        let folder = TemporaryFolder()
        let ledger = Ledger(
            id: 1, tree: .node(.leaf(1), .node(.leaf(2), .leaf(3))), spare: nil,
            payment: .card(PropertyTypes.Email("a@b.c")), payments: [.cash, .card(PropertyTypes.Email("d@e.f"))])
        do {
            let store = try folder.store([Ledger.self])
            try store.write { tx in try tx.insert(ledger) }
        }
        #expect(try folder.store([Ledger.self]).object(Ledger.self, id: 1) == ledger)
    }

    @Test func aListOfAnOpaqueTypeRenamedIsJudgedByItsRecords() throws {
        enum Before {
            enum Status: Codable, Sendable {
                case active
                case banned(reason: String)
            }
        }
        enum After {
            enum PaymentStatus: Codable, Sendable {
                case active
                case banned(reason: String)
            }
        }
        struct V1: Model {
            var id: Int
            var history: [Before.Status]
            static let schema = Schema<V1>(name: "Account")
        }
        struct V2: Model {
            var id: Int
            var history: [After.PaymentStatus]
            static let schema = Schema<V2>(name: "Account")
        }
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([V1.self])
            try store.write { tx in try tx.insert(V1(id: 1, history: [.active, .banned(reason: "spam")])) }
        }
        // The same stored form under another type name: the records read, so no migration is asked for.
        let store = try folder.store([V2.self])
        #expect(try store.object(V2.self, id: 1)?.history.count == 2)
    }

    @Test func cellarDumpsAndVerifiesTheStore() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Wide.self])
            try store.write { tx in for var wide in (1...2).map(Wide.sample) { try tx.insert(&wide) } }
        }
        let dump = try CellarToolTests.cellar("dump", folder.url.path, "Wide", "--json")
        #expect(dump.status == 0, "\(dump.errors)")
        #expect(dump.output.split(separator: "\n").count == 2)
        #expect(dump.output.contains("example.com") && dump.output.contains("Europe/Paris"))
        let verify = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(verify.status == 0, "\(verify.output)\(verify.errors)")
    }
}
