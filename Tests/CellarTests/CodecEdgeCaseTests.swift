import Foundation
import LMDB
import Testing

@testable import Cellar

// Codable shapes that synthesized code never produces but hand-written code may. Each must come back equal, or be
// refused when written; never stored unreadable or changed.

/// Encodes `value` and expects the encoder to refuse it.
private func expectRefused<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(throws: EncodingError.self, sourceLocation: sourceLocation) {
        _ = try RecordEncoder(dictionary: .empty).encode(value)
    }
}

private enum Keys: String, CodingKey { case a, b, c }

/// Writes one key twice.
private struct TwiceKeyed: Codable {
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .a)
        try container.encode(2, forKey: .a)
    }
}

/// Writes a nested container and a value under one key.
private struct ContainerAndValueShareAKey: Encodable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .a)
        try nested.encode(1, forKey: .b)
        try container.encode(2, forKey: .a)
    }
}

/// Takes two sibling containers, then writes to the first.
private struct SiblingsOutOfOrder: Encodable {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var first = container.nestedContainer(keyedBy: Keys.self, forKey: .a)
        var second = container.nestedContainer(keyedBy: Keys.self, forKey: .b)
        try second.encode(2, forKey: .c)
        try first.encode(1, forKey: .c)
    }
}

/// Takes a super encoder, writes another element, then writes through the super encoder.
private struct SuperWrittenLate: Encodable {
    func encode(to encoder: any Encoder) throws {
        var list = encoder.unkeyedContainer()
        let late = list.superEncoder()
        try list.encode(2)
        var single = late.singleValueContainer()
        try single.encode(1)
    }
}

/// Writes one single-value container twice.
private struct SingleWrittenTwice: Encodable {
    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(1)
        try single.encode(2)
    }
}

/// A list whose first element is written through `superEncoder()`, in order: it must come back in order.
private struct SuperElementsInOrder: Codable, Equatable {
    var first: Int
    var second: Int
    init(first: Int, second: Int) {
        self.first = first
        self.second = second
    }
    func encode(to encoder: any Encoder) throws {
        var list = encoder.unkeyedContainer()
        var single = list.superEncoder().singleValueContainer()
        try single.encode(first)
        try list.encode(second)
    }
    init(from decoder: any Decoder) throws {
        var list = try decoder.unkeyedContainer()
        first = try list.superDecoder().singleValueContainer().decode(Int.self)
        second = try list.decode(Int.self)
    }
}

/// Takes a super encoder and never writes it; reads the super value back as an empty container. Also reads a
/// super decoder for a key that was never written, which reads as nil.
private struct UnusedSuper: Codable, Equatable {
    var value: Int
    init(value: Int) { self.value = value }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        _ = container.superEncoder(forKey: .a)
        try container.encode(value, forKey: .b)
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let empty = try container.superDecoder(forKey: .a).container(keyedBy: Keys.self)
        guard empty.allKeys.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .a, in: container, debugDescription: "")
        }
        guard try container.superDecoder(forKey: .c).singleValueContainer().decodeNil() else {
            throw DecodingError.dataCorruptedError(forKey: .c, in: container, debugDescription: "not nil")
        }
        value = try container.decode(Int.self, forKey: .b)
    }
}

/// A tree `depth` levels deep: each level a struct holding a list of children.
private struct Tree: Codable, Equatable {
    var children: [Tree]
    static func chain(_ depth: Int) -> Tree {
        var tree = Tree(children: [])
        for _ in 1..<max(depth, 1) { tree = Tree(children: [tree]) }
        return tree
    }
}

/// Keeps its container after `init(from:)` returns.
private final class ContainerThief: @unchecked Sendable {
    static let shared = ContainerThief()
    var stolen: KeyedDecodingContainer<Keys>?
}

private struct Stealing: Codable {
    var a: Int
    init(a: Int) { self.a = a }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        a = try container.decode(Int.self, forKey: .a)
        ContainerThief.shared.stolen = container
    }
}

/// Opens its root twice: with other coding keys, then with the same ones again.
private struct TwoRootViews: Codable, Equatable {
    enum Other: String, CodingKey { case b }
    var a: Int
    var b: String
    init(a: Int, b: String) {
        self.a = a
        self.b = b
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(a, forKey: .a)
        try container.encode(b, forKey: .b)
    }
    init(from decoder: any Decoder) throws {
        let first = try decoder.container(keyedBy: Keys.self)
        let other = try decoder.container(keyedBy: Other.self)
        let again = try decoder.container(keyedBy: Keys.self)
        b = try other.decode(String.self, forKey: .b)
        a = try again.decode(Int.self, forKey: .a)
        guard try first.decode(Int.self, forKey: .a) == a, try first.decode(String.self, forKey: .b) == b else {
            throw DecodingError.dataCorruptedError(forKey: .a, in: first, debugDescription: "the views disagree")
        }
    }
}

/// Reads its root through a single-value container as another keyed type, which opens a keyed container at the
/// same place.
private struct Wrapped: Codable, Equatable {
    var inner: TwoRootViews
    init(inner: TwoRootViews) { self.inner = inner }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(inner)
    }
    init(from decoder: any Decoder) throws { inner = try decoder.singleValueContainer().decode(TwoRootViews.self) }
}

/// Keeps its root container, and what it opens, after `init(from:)` returns; apart from `ContainerThief`, whose
/// test runs beside this one's.
private final class RootThief: @unchecked Sendable {
    static let shared = RootThief()
    var stolen: KeyedDecodingContainer<Keys>?
}

private struct KeepingRoot: Codable {
    var a: Int
    var b: [Int]
    init(a: Int) {
        self.a = a
        b = [a]
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        a = try container.decode(Int.self, forKey: .a)
        b = try container.decode([Int].self, forKey: .b)
        RootThief.shared.stolen = container
    }
}

/// Coding keys of a class, opened as the base class and as the subclass.
private class BaseKey: CodingKey, @unchecked Sendable {
    let stringValue: String
    var intValue: Int? { nil }
    required init?(stringValue: String) { self.stringValue = stringValue }
    required init?(intValue: Int) { nil }
}
private final class SubKey: BaseKey, @unchecked Sendable {}

private struct OpenedAsBase: Codable, Equatable {
    var a: Int
    init(a: Int) { self.a = a }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(a, forKey: .a)
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: SubKey.self as BaseKey.Type)
        a = try container.decode(Int.self, forKey: try #require(BaseKey(stringValue: "a")))
    }
}

private struct OpenedAsSub: Codable, Equatable {
    var a: Int
    init(a: Int) { self.a = a }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(a, forKey: .a)
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: SubKey.self)
        a = try container.decode(Int.self, forKey: try #require(SubKey(stringValue: "a")))
    }
}

/// A class and its superclass, each with coding keys of its own: the root is opened with both.
private class Creature: Codable {
    var name: String
    init(name: String) { self.name = name }
}
private final class Tabby: Creature, Equatable {
    enum CodingKeys: String, CodingKey { case lives }
    var lives: Int
    init(name: String, lives: Int) {
        self.lives = lives
        super.init(name: name)
    }
    required init(from decoder: any Decoder) throws {
        lives = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .lives)
        try super.init(from: decoder)
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lives, forKey: .lives)
        try super.encode(to: encoder)
    }
    static func == (left: Tabby, right: Tabby) -> Bool { left.name == right.name && left.lives == right.lives }
}

/// Lists of links of two target types beside other lists: the decoder remembers, type by type, which are links.
private struct LinkLists: Codable, Equatable {
    var people: [Link<Person>]
    var numbers: [Int64]
    var trees: [Tree]
    var shelves: [Link<Shelf>]
    var one: Link<Person>?
}

/// A model with text ids, for links of another id type.
private struct Shelf: Model {
    var id: String
}

@Suite("Codec edge cases: what is written reads back equal, or is refused")
struct CodecEdgeCaseTests {
    @Test func stringKeysThatLookLikeNumbersStayText() throws {
        let value = ["007": 1, "7": 2, "+1": 3, "1": 4, "-0": 5, "0": 6, "-12": 7, " 3": 8, "99999999999999999999": 9]
        #expect(try roundTrip(value) == value)
        let numbers = [7: "a", -12: "b", 0: "c", Int.max: "d"]
        #expect(try roundTrip(numbers) == numbers)
        struct Holder: Codable, Equatable { var scores: [String: Int] }
        #expect(try roundTrip(Holder(scores: value)) == Holder(scores: value))
    }

    @Test func shapesARecordCannotHoldAreRefusedWhenWritten() {
        expectRefused(TwiceKeyed())
        expectRefused(ContainerAndValueShareAKey())
        expectRefused(SiblingsOutOfOrder())
        expectRefused(SuperWrittenLate())
        expectRefused(SingleWrittenTwice())
    }

    @Test func aStoreRefusesSuchAValueWithEncodingFailedAndWritesNothing() throws {
        struct Odd: Model {
            var id: Int
            var inner = TwiceKeyed()
        }
        let store = try Store.inMemory(.init(models: [Odd.self]))
        #expect {
            try store.write { tx in try tx.insert(Odd(id: 1)) }
        } throws: { error in
            guard case .encodingFailed(let model, let reason) = error as? StoreError else { return false }
            return model == "Odd" && reason.contains("written twice")
        }
        #expect(try store.count(Odd.self) == 0)
    }

    @Test func anEncodingFailureQuotesAShortStartOfTheValue() throws {
        struct Big: Model {
            var id: Int
            var text = String(repeating: "x", count: 1_000_000)
            var inner = TwiceKeyed()
        }
        let store = try Store.inMemory(.init(models: [Big.self]))
        #expect {
            try store.write { tx in try tx.insert(Big(id: 1)) }
        } throws: { error in
            guard case .encodingFailed(_, let reason) = error as? StoreError else { return false }
            return reason.contains("written twice") && reason.count < 400 && reason.contains("characters")
        }
    }

    @Test func superEncodersWrittenInOrderComeBackInOrder() throws {
        let value = SuperElementsInOrder(first: 1, second: 2)
        #expect(try roundTrip(value) == value)
        #expect(try roundTrip([value, SuperElementsInOrder(first: 3, second: 4)]).map(\.first) == [1, 3])
    }

    @Test func anUnusedSuperEncoderStoresAnEmptyValueAndAnAbsentSuperReadsAsNil() throws {
        #expect(try roundTrip(UnusedSuper(value: 5)) == UnusedSuper(value: 5))
    }

    @Test func decimalNaNRoundTrips() throws {
        #expect(try roundTrip(Decimal.nan).isNaN)
        #expect(try roundTrip([Decimal(string: "12.345")!, .nan])[0] == Decimal(string: "12.345")!)
    }

    /// One limit for writing and reading: a tree either comes back equal, read typed and typeless, or is refused.
    @Test func nestingIsRefusedAtWriteExactlyWhereReadersWouldRefuseIt() throws {
        var refused: [Int] = []
        for depth in stride(from: 1, through: 130, by: 1) {
            let tree = Tree.chain(depth)
            let encoder = RecordEncoder(dictionary: .empty)
            let bytes: [UInt8]
            do {
                bytes = try encoder.encode(tree)
            } catch is EncodingError {
                refused.append(depth)
                continue
            }
            let dictionary = encoder.absorbAddedNames()
            try bytes.withUnsafeBytes { raw in
                #expect(try RecordDecoder.decode(Tree.self, from: raw, dictionary: dictionary) == tree)
                _ = try RecordValue(record: raw, dictionary: dictionary)
            }
        }
        #expect(refused.first == 100, "refused from depth \(refused.first ?? -1)")
        #expect(refused == Array(100...130))
    }

    @Test func aContainerUsedAfterItsDecodingReturnedIsATypedError() throws {
        let (first, dictionary) = try encoded(Stealing(a: 1))
        let (second, _) = try encoded(Stealing(a: 2), dictionary: dictionary)
        let decoder = RecordDecoder()
        _ = try first.withUnsafeBytes { try decoder.decode(Stealing.self, from: $0, dictionary: dictionary) }
        let stolen = try #require(ContainerThief.shared.stolen)
        #expect(throws: DecodingError.self) { try stolen.decode(Int.self, forKey: .a) }
        // Still refused while the same decoder reads another record.
        _ = try second.withUnsafeBytes { raw in
            try decoder.decode(Stealing.self, from: raw, dictionary: dictionary)
        }
        #expect(throws: DecodingError.self) { try stolen.decode(Int.self, forKey: .a) }
        #expect(stolen.allKeys.isEmpty)
    }

    /// A decoder keeps the container of a record's root for the next record with the same coding keys; each record
    /// still reads whole, whatever shapes come one after the other, and nested values of the root's type get
    /// containers of their own.
    @Test func oneDecoderReadsRecordsOfEveryShapeInAnyOrder() throws {
        var dictionary = KeyDictionary.empty
        func bytes<T: Encodable>(_ value: T) throws -> [UInt8] {
            let (bytes, grown) = try encoded(value, dictionary: dictionary)
            dictionary = grown
            return bytes
        }
        let trees = (1...6).map { Tree.chain($0) } + [Tree(children: [Tree.chain(3), Tree(children: []), .chain(2)])]
        let views = (0..<5).map { TwoRootViews(a: $0 * 7 - 11, b: "view \($0)") }
        let wrapped = views.map { Wrapped(inner: $0) }
        let people = (0..<5).map { Person(id: Int64($0), lastName: "Last \($0)", firstName: "First", email: "\($0)@") }
        typealias Read = (RecordDecoder, UnsafeRawBufferPointer) throws -> Bool
        typealias Reading = (bytes: [UInt8], read: Read)
        var records: [Reading] = []
        for tree in trees {
            records.append((try bytes(tree), { try $0.decode(Tree.self, from: $1, dictionary: dictionary) == tree }))
        }
        for view in views {
            let read: Read = { try $0.decode(TwoRootViews.self, from: $1, dictionary: dictionary) == view }
            records.append((try bytes(view), read))
        }
        for value in wrapped {
            let read: Read = { try $0.decode(Wrapped.self, from: $1, dictionary: dictionary) == value }
            records.append((try bytes(value), read))
        }
        for person in people {
            let read: Read = { try $0.decode(Person.self, from: $1, dictionary: dictionary) == person }
            records.append((try bytes(person), read))
        }
        for number in 0..<4 {
            let lists = LinkLists(
                people: (0..<Int64(number)).map { Link(id: $0) }, numbers: [Int64(number)],
                trees: [.chain(number + 1)], shelves: [Link(id: "shelf \(number)"), Link(id: "")],
                one: number % 2 == 0 ? nil : Link(id: Int64(number)))
            let readLists: Read = { try $0.decode(LinkLists.self, from: $1, dictionary: dictionary) == lists }
            records.append((try bytes(lists), readLists))
            let base = OpenedAsBase(a: number)
            let sub = OpenedAsSub(a: -number)
            let cat = Tabby(name: "cat \(number)", lives: number + 1)
            let readBase: Read = { try $0.decode(OpenedAsBase.self, from: $1, dictionary: dictionary) == base }
            let readSub: Read = { try $0.decode(OpenedAsSub.self, from: $1, dictionary: dictionary) == sub }
            records.append((try bytes(base), readBase))
            records.append((try bytes(sub), readSub))
            records.append((try bytes(cat), { try $0.decode(Tabby.self, from: $1, dictionary: dictionary) == cat }))
            // Generated record code, whose `Codable`-only fields open a root of their own inside the record.
            let everything = Everything.sample(number)
            let (generated, grown) = try generatedBytes(everything, dictionary: dictionary)
            dictionary = grown
            records.append(
                (
                    generated,
                    { decoder, raw in
                        var reader = RecordReader(decoder: decoder, dictionary: dictionary, bytes: raw, offset: 1)
                        return try Everything(record: &reader) == everything
                    }
                ))
        }
        let decoder = RecordDecoder()
        var generator = SystemRandomNumberGenerator()
        for round in 0..<400 {
            // In order first, so that each shape follows itself and the others; then at random.
            let record = round < records.count ? records[round] : records.randomElement(using: &generator)!
            let equal = try record.bytes.withUnsafeBytes { try record.read(decoder, $0) }
            #expect(equal, "record \(round)")
        }
    }

    /// The container a decoder keeps for the next record does not keep the decoder alive (no cycle), and once the
    /// decoder is gone a container a value kept is refused, not read.
    @Test func aKeptRootContainerNeitherKeepsItsDecoderNorOutlivesIt() throws {
        let (bytes, dictionary) = try encoded(KeepingRoot(a: 1))
        weak var gone: RecordDecoder?
        try {
            let decoder = RecordDecoder()
            gone = decoder
            for _ in 0..<3 {
                _ = try bytes.withUnsafeBytes { try decoder.decode(KeepingRoot.self, from: $0, dictionary: dictionary) }
            }
        }()
        #expect(gone == nil)
        let stolen = try #require(RootThief.shared.stolen)
        #expect(throws: DecodingError.self) { try stolen.decode(Int.self, forKey: .a) }
        #expect(throws: DecodingError.self) { try stolen.decodeNil(forKey: .a) }
        #expect(throws: DecodingError.self) { _ = try stolen.nestedUnkeyedContainer(forKey: .b) }
        #expect(throws: DecodingError.self) { _ = try stolen.nestedContainer(keyedBy: Keys.self, forKey: .b) }
        #expect(throws: DecodingError.self) { _ = try stolen.superDecoder() }
        #expect(throws: DecodingError.self) { _ = try stolen.superDecoder(forKey: .a) }
        #expect(!stolen.contains(.a))
        #expect(stolen.allKeys.isEmpty)
    }

    // MARK: Keys of indexes

    @Test func equalSetsAndDictionariesHaveOneKey() throws {
        var grown = Set<String>(minimumCapacity: 1_000)
        let words = (0..<50).map { "word \($0)" }
        for word in words.reversed() { grown.insert(word) }
        let small = Set(words)
        #expect(grown == small)
        #expect(try KeyEncoding.key(grown) == KeyEncoding.key(small))
        var dictionary: [String: Int] = [:]
        for (number, word) in words.enumerated() { dictionary[word] = number }
        var other = [String: Int](minimumCapacity: 500)
        for (number, word) in words.enumerated().reversed() { other[word] = number }
        #expect(try KeyEncoding.key(dictionary) == KeyEncoding.key(other))
        #expect(try KeyEncoding.key(Set([1, 2])) != KeyEncoding.key(Set([1, 3])))
    }

    @Test func anIndexOnASetFindsEqualSetsAndLeavesNothingBehind() throws {
        struct Tagged: Model {
            var id: Int
            var tags: Set<String>
            static var schema: Schema<Tagged> { Schema(indexes: [.index(\.tags)]) }
        }
        let store = try Store.inMemory(.init(models: [Tagged.self]))
        let words = (0..<40).map { "tag \($0)" }
        var stored = Set<String>(minimumCapacity: 200)
        for word in words { stored.insert(word) }
        try store.write { tx in try tx.insert(Tagged(id: 1, tags: stored)) }
        let asked = Set(words.reversed())
        #expect(try store.objects(Tagged.self).where(\.tags == asked).results().map(\.id) == [1])
        try store.write { tx in try tx.delete(Tagged(id: 1, tags: asked)) }
        let info = try store.info(for: Tagged.self)
        let entries = try store.core.environment.read { txn in try txn.statistics(info.indexes[0]).entries }
        #expect(entries == 0)
    }

    @Test func anIndexOnAComputedPropertyNeedsAName() throws {
        struct Computed: Model {
            var id: Int
            var first: String
            var last: String
            var full: String { first + " " + last }
            static var schema: Schema<Computed> { Schema(indexes: [.index(\.full)]) }
        }
        struct Named: Model {
            var id: Int
            var first: String
            var last: String
            var full: String { first + " " + last }
            static var schema: Schema<Named> { Schema(indexes: [.index(\.full, name: "full")]) }
        }
        let folder = TemporaryFolder()
        #expect {
            try folder.store([Computed.self])
        } throws: { error in
            guard case .invalidSchema(let model, let reason) = error as? StoreError else { return false }
            return model == "Computed" && reason.contains("computed property")
        }
        do {
            let store = try folder.store([Named.self])
            try store.write { tx in try tx.insert(Named(id: 1, first: "Ada", last: "Lovelace")) }
        }
        let store = try folder.store([Named.self])
        #expect(
            try store.objects(Named.self).where(\.full == "Ada Lovelace").explain().hasPrefix("use index i/Named.full"))
        #expect(try store.objects(Named.self).where(\.full == "Ada Lovelace").count() == 1)
    }

    @Test func aDamagedRecordOfAnIndexedModelCanBeDeleted() throws {
        struct Pet: Model {
            var id: Int
            var name: String
            var age: Int
            static var schema: Schema<Pet> { Schema(indexes: [.index(\.age), .unique(\.name)]) }
        }
        let store = try Store.inMemory(.init(models: [Pet.self]))
        try store.write { tx in
            try tx.insert(Pet(id: 1, name: "Rex", age: 3))
            try tx.insert(Pet(id: 2, name: "Ace", age: 3))
        }
        let info = try store.info(for: Pet.self)
        try store.core.environment.write { txn in
            try txn.put(info.records, key: KeyEncoding.key(1), value: [RecordFormat.version, 0x13, 0xFF])
        }
        #expect(throws: StoreError.self) { try store.object(Pet.self, id: 1) }
        #expect(try store.write { tx in try tx.delete(Pet.self, id: 1) })
        #expect(try store.count(Pet.self) == 1)
        #expect(try store.objects(Pet.self).where(\.age == 3).results().map(\.id) == [2])
        // "Rex" is free again: its unique entry went with the damaged record.
        try store.write { tx in try tx.insert(Pet(id: 3, name: "Rex", age: 4)) }
    }
}
