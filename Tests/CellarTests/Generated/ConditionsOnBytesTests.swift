import CellarMacros
import Foundation
import LMDB
import Testing

@testable import Cellar

/// How many `Tally` values were decoded: a record is decoded whole or not at all, so this counts records decoded.
let tallyReads = Lock(0)

/// A property whose reading is counted.
struct Tally: RecordStorable, Equatable {
    var value: Int
    init(_ value: Int) { self.value = value }
    init(from decoder: any Decoder) throws {
        tallyReads.withLock { $0 += 1 }
        value = try decoder.singleValueContainer().decode(Int.self)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
    static func read(from reader: inout RecordReader) throws -> Tally {
        tallyReads.withLock { $0 += 1 }
        return Tally(try reader.readInteger(Int.self))
    }
    func write(to writer: inout RecordWriter) { writer.writeInt(value) }
}

@Record
struct Pet: Model, Equatable {
    var id: Int64
    var name: String
    var age: Int
    var owner: Int64?
    var weight: Double
    var tally: Tally
    static let schema = Schema<Pet>(indexes: [.index(\.name)])
}

/// An earlier version of `Pet`, without `owner`: its records have no entry for it.
struct OldPet: Model {
    var id: Int64
    var name: String
    var age: Int
    var weight: Double
    var tally: Tally
    static let schema = Schema<OldPet>(name: "Pet", indexes: [.index(\.name)])
}

/// A plain `Codable` model whose keys are not its property names and whose decoding transforms a value: its
/// conditions must be checked on decoded values.
struct Renamed: Model, Equatable {
    var id: Int64
    var age: Int
    var owner: Int64?

    enum CodingKeys: String, CodingKey {
        case id
        case age = "years"
        case owner = "person"
    }

    init(id: Int64, age: Int, owner: Int64?) {
        (self.id, self.age, self.owner) = (id, age, owner)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        // Stored in months since version 2; read back in years.
        age = try container.decode(Int.self, forKey: .age) / 12
        owner = try container.decodeIfPresent(Int64.self, forKey: .owner)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(age * 12, forKey: .age)
        try container.encodeIfPresent(owner, forKey: .owner)
    }
}

// Serialized: `tallyReads` counts the decodes of every test of the suite.
@Suite("Conditions checked on record bytes", .serialized)
struct ConditionsOnBytesTests {
    static func pets() -> [Pet] {
        let names = ["Taro", "Hana", "taro", "Kuro", "Pochi"]
        return (1...300).map { (n: Int) -> Pet in
            let owner: Int64? = n % 4 == 0 ? nil : Int64(n % 9)
            let name = names[n % 5] + String(n % 7)
            return Pet(id: Int64(n), name: name, age: n % 12, owner: owner, weight: Double(n % 30) / 2, tally: Tally(n))
        }
    }

    /// Each condition, checked on bytes, finds what Swift's `filter` finds on the values.
    @Test func everyKindOfConditionAnswersAsTheValuesDo() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Pet.self])
        let pets = Self.pets()
        try store.write { tx in for pet in pets { try tx.insert(pet) } }
        func check(_ condition: Condition<Pet>, _ expected: (Pet) -> Bool, line: Int = #line) throws {
            let found = try store.objects(Pet.self).where(condition).results()
            #expect(
                found.map(\.id).sorted() == pets.filter(expected).map(\.id),
                "line \(line): \(condition.node.description)")
        }
        try check(\.owner == 3) { $0.owner == 3 }
        try check(\.owner == nil) { $0.owner == nil }
        try check(\.owner != 3) { $0.owner != 3 }
        try check(\.age < 4) { $0.age < 4 }
        try check(\.age >= 9) { $0.age >= 9 }
        try check(\.weight > 7.5) { $0.weight > 7.5 }
        try check(.between(\.age, 3...5)) { (3...5).contains($0.age) }
        try check(.between(\.age, 3..<5)) { (3..<5).contains($0.age) }
        try check(.in(\.owner, [1, 2, nil])) { [1, 2, nil].contains($0.owner) }
        try check(.contains(\.name, "ar")) { $0.name.contains("ar") }
        try check(.equalsIgnoringCase(\.name, "TARO1")) { $0.name.lowercased() == "taro1" }
        try check(\.age == 3 && \.owner == 3) { $0.age == 3 && $0.owner == 3 }
        try check(\.age == 3 || \.owner == nil) { $0.age == 3 || $0.owner == nil }
        try check(!(\.age > 2)) { !($0.age > 2) }
        try check(\.age == 3 && .matching { $0.tally.value > 100 }) { $0.age == 3 && $0.tally.value > 100 }
        try check(\.age == 3 || .matching { $0.tally.value > 290 }) { $0.age == 3 || $0.tally.value > 290 }
        try check(.hasPrefix(\.name, "Ta") && \.age < 6) { $0.name.hasPrefix("Ta") && $0.age < 6 }
    }

    @Test func onlyMatchingRecordsAreDecoded() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Pet.self])
        try store.write { tx in for pet in Self.pets() { try tx.insert(pet) } }
        tallyReads.withLock { $0 = 0 }
        let found = try store.objects(Pet.self).where(\.owner == 3 && \.age < 6).results()
        #expect(found.count == Self.pets().filter { $0.owner == 3 && $0.age < 6 }.count)
        #expect(found.count > 0)
        #expect(tallyReads.withLock { $0 } == found.count)
        let plan = try store.objects(Pet.self).where(\.owner == 3).explain()
        #expect(plan == "scan r/Pet, then check each record's bytes for owner == 3 before decoding it")
    }

    @Test func entriesOlderRecordsLackReadAsTheirDecodedValues() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([OldPet.self])
            try store.write { tx in
                for n in 1...20 {
                    try tx.insert(OldPet(id: Int64(n), name: "Old \(n)", age: n % 3, weight: 1, tally: Tally(n)))
                }
            }
        }
        let store = try folder.store([Pet.self])
        try store.write { tx in
            try tx.insert(Pet(id: 21, name: "New", age: 1, owner: 5, weight: 2, tally: Tally(21)))
        }
        // An absent optional entry reads as nil on bytes, as `decodeIfPresent` reads it.
        #expect(try store.objects(Pet.self).where(\.owner == nil).results().map(\.id) == Array(1...20))
        #expect(try store.objects(Pet.self).where(\.owner == 5).results().map(\.id) == [21])
        #expect(try store.objects(Pet.self).where(\.owner != nil && \.age == 1).results().map(\.id) == [21])
    }

    /// A property widened since its records were written (`Int32?` then, `Int64?` now) is compared by value, not
    /// by bytes: the stored form differs from the compared value's.
    @Test func aNarrowerStoredIntegerStillMatches() throws {
        struct NarrowPet: Model {
            var id: Int64
            var name: String
            var age: Int
            var owner: Int32?
            var weight: Double
            var tally: Tally
            static let schema = Schema<NarrowPet>(name: "Pet", indexes: [.index(\.name)])
        }
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([NarrowPet.self])
            try store.write { tx in
                for n in 1...9 {
                    try tx.insert(
                        NarrowPet(
                            id: Int64(n), name: "N\(n)", age: 1, owner: n % 3 == 0 ? nil : Int32(n), weight: 1,
                            tally: Tally(n)))
                }
            }
        }
        let store = try folder.store([Pet.self])
        #expect(try store.objects(Pet.self).where(\.owner == 5).results().map(\.id) == [5])
        #expect(try store.objects(Pet.self).where(.in(\.owner, [4, nil])).results().map(\.id) == [3, 4, 6, 9])
        #expect(try store.objects(Pet.self).where(\.owner != 5).results().count == 8)
        #expect(try store.objects(Pet.self).where(\.owner == nil).results().map(\.id) == [3, 6, 9])
    }

    /// A name another process added after this one loaded its key dictionary: the bytes cannot say which field
    /// the new tag is, so the record is decoded (which reads the dictionary again) and still found.
    @Test func aTagTheLoadedDictionaryLacksIsLeftToTheDecoder() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([OldPet.self])
            try store.write { tx in
                for n in 1...5 {
                    try tx.insert(OldPet(id: Int64(n), name: "Old \(n)", age: 1, weight: 1, tally: Tally(n)))
                }
            }
        }
        let store = try folder.store([Pet.self])
        #expect(try store.objects(Pet.self).where(\.owner == 5).results().isEmpty)
        // What another process's writer does, behind this store's back: `owner` joins the dictionary, and pet 5
        // gets one.
        let info = try store.info(for: Pet.self)
        let loaded = try store.read { try $0.dictionary(for: info) }
        #expect(loaded.tags["owner"] == nil)
        try store.core.environment.write { txn in
            let grown = loaded.appending(["owner"])
            try txn.put(store.core.meta, key: info.dictionaryKey, value: grown.serialized)
            let record = try #require(try txn.get(info.records, key: KeyEncoding.key(Int64(5))).map { Array($0) })
            try txn.put(
                info.records, key: KeyEncoding.key(Int64(5)),
                value: Self.adding(Self.ownerEntry(tag: grown.names.count - 1, owner: 5), to: record, first: false))
        }
        #expect(try store.objects(Pet.self).where(\.owner == 5).results().map(\.id) == [5])
        #expect(try store.objects(Pet.self).where(\.owner == nil).results().map(\.id) == [1, 2, 3, 4])
    }

    /// A damaged record that holds a field twice: the bytes do not say which entry the decoder reads, so the
    /// decoder decides, and the query answers as the decoded values do.
    @Test func aFieldStoredTwiceIsLeftToTheDecoder() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Pet.self])
        try store.write { tx in
            try tx.insert(Pet(id: 1, name: "Twice", age: 1, owner: 3, weight: 1, tally: Tally(1)))
            try tx.insert(Pet(id: 2, name: "Once", age: 1, owner: 5, weight: 1, tally: Tally(2)))
        }
        let info = try store.info(for: Pet.self)
        let ownerTag = try #require(try store.read { try $0.dictionary(for: info).tags["owner"] })
        try store.core.environment.write { txn in
            let record = try #require(try txn.get(info.records, key: KeyEncoding.key(Int64(1))).map { Array($0) })
            // owner = 5 before the others, where the generated decoder, which reads the entry after `age`, passes
            // over it.
            try txn.put(
                info.records, key: KeyEncoding.key(Int64(1)),
                value: Self.adding(Self.ownerEntry(tag: Int(ownerTag), owner: 5), to: record, first: true))
        }
        let all = try store.objects(Pet.self).results()
        for owner: Int64 in [3, 5] {
            let found = try store.objects(Pet.self).where(\.owner == owner).results().map(\.id)
            #expect(found == all.filter { $0.owner == owner }.map(\.id), "owner == \(owner)")
        }
    }

    /// An entry `owner = owner`, with the key of `tag`.
    static func ownerEntry(tag: Int, owner: Int64) -> [UInt8] {
        [UInt8(tag << 1), RecordFormat.ValueType.int64.rawValue] + withUnsafeBytes(of: owner.littleEndian, Array.init)
    }

    /// `record` with `entry` added to its container, first or last; the container's length and count grow to match.
    /// (Sealed again, as a writer of the format would: the checksum vouches for the bytes, and the reader is tested.)
    static func adding(_ entry: [UInt8], to record: [UInt8], first: Bool) -> [UInt8] {
        resealed(record) { record in
            let header = 2 + RecordFormat.containerHeaderSize
            record.insert(contentsOf: entry, at: first ? header : record.count)
            let length = UInt32(record.count - header)
            let count = record.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 6, as: UInt32.self) } + 1
            withUnsafeBytes(of: length.littleEndian) { record.replaceSubrange(2..<6, with: $0) }
            withUnsafeBytes(of: count.littleEndian) { record.replaceSubrange(6..<10, with: $0) }
        }
    }

    /// A plain `Codable` model with renamed keys and a transforming `init(from:)`: conditions see decoded values.
    @Test func aCustomCodableModelAnswersCorrectly() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Renamed.self])
        let all = (1...60).map { Renamed(id: Int64($0), age: $0 % 10, owner: $0 % 3 == 0 ? nil : Int64($0 % 5)) }
        try store.write { tx in for value in all { try tx.insert(value) } }
        #expect(Array(try store.objects(Renamed.self).where(\.age == 4).results()) == all.filter { $0.age == 4 })
        #expect(
            Array(try store.objects(Renamed.self).where(\.owner == 2 || \.age > 7).results())
                == all.filter { $0.owner == 2 || $0.age > 7 })
        #expect(try !store.objects(Renamed.self).where(\.age == 4).explain().contains("bytes"))
    }
}
