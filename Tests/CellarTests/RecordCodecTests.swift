import Foundation
import PropertyBased
import Testing

@testable import Cellar

struct Scalars: Codable, Equatable {
    var int: Int, int8: Int8, int16: Int16, int32: Int32, int64: Int64
    var uint: UInt, uint8: UInt8, uint16: UInt16, uint32: UInt32, uint64: UInt64
    var bool: Bool, float: Float, double: Double
    var string: String, empty: String, long: String, unicode: String
}

struct Foundations: Codable, Equatable {
    var data: Data, emptyData: Data, date: Date, uuid: UUID, url: URL, decimal: Decimal
}

enum Kind: String, Codable, Equatable { case mutt, shiba }
enum Rank: Int, Codable, Equatable {
    case low = 1
    case high = 99
}
enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rectangle(Double, Double)
    case point
    case labelled(name: String, tags: [String])
}

struct Containers: Codable, Equatable {
    var optional: Int?
    var missing: String?
    var nested: Int??
    var nestedNil: Int??
    var nestedInnerNil: Int??
    var array: [Int]
    var emptyArray: [String]
    var set: Set<String>
    var stringDictionary: [String: Int]
    var intDictionary: [Int: String]
    var uuidDictionary: [UUID: Double]
    var matrix: [[Int]]
    var kind: Kind
    var rank: Rank
    var shapes: [Shape]
    var inner: Inner
    var inners: [Inner]
    var optionalInner: Inner?

    struct Inner: Codable, Equatable {
        var name: String
        var values: [Double]
    }
}

class Animal: Codable {
    var name: String
    init(name: String) { self.name = name }
}

final class Cat: Animal, @unchecked Sendable {
    var lives: Int
    init(name: String, lives: Int) {
        self.lives = lives
        super.init(name: name)
    }
    enum CodingKeys: String, CodingKey { case lives }
    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        lives = try container.decode(Int.self, forKey: .lives)
        try super.init(from: container.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lives, forKey: .lives)
        try super.encode(to: container.superEncoder())
    }
}

/// A class whose subclass shares its container instead of a `super` entry.
class Vehicle: Codable {
    var wheels: Int
    init(wheels: Int) { self.wheels = wheels }
}

final class Bike: Vehicle, @unchecked Sendable {
    var brand: String
    init(brand: String) {
        self.brand = brand
        super.init(wheels: 2)
    }
    enum CodingKeys: String, CodingKey { case brand }
    required init(from decoder: any Decoder) throws {
        brand = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .brand)
        try super.init(from: decoder)
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(brand, forKey: .brand)
        try super.encode(to: encoder)
    }
}

@Suite("Record codec")
struct RecordCodecTests {
    @Test func scalarsRoundTrip() throws {
        let value = Scalars(
            int: .min, int8: -128, int16: .max, int32: -7, int64: .max, uint: .max, uint8: 255, uint16: 0,
            uint32: .max, uint64: .max, bool: true, float: -1.5, double: .pi, string: "Taro", empty: "",
            long: String(repeating: "long text ", count: 2_000), unicode: "e\u{301} 日本語 🐕‍🦺 \0 end")
        #expect(try roundTrip(value) == value)
    }

    @Test func eachTypeByteNamesTheTypeItsRawValueDoes() {
        for byte in UInt8.min...UInt8.max {
            #expect(RecordFormat.ValueType(byte: byte) == RecordFormat.ValueType(rawValue: byte), "byte \(byte)")
        }
    }

    /// The bytes check's table of fixed sizes says what the format's own function says, type by type.
    @Test func theEntryWalksTableOfSizesIsTheFormats() {
        let zeros = [UInt8](repeating: 0, count: 32)
        for type in 0..<16 {
            var value = zeros
            value[0] = UInt8(type)
            let size = value.withUnsafeBytes { RecordFormat.valueSize(in: $0, at: 0, end: 32) }
            let fromTable = Int((RecordEntries.fixedSizes >> (UInt64(type) * 4)) & 0xF)
            let variable: Set<RecordFormat.ValueType> = [.string, .bytes]
            let expected = RecordFormat.ValueType(byte: UInt8(type)).map { variable.contains($0) } == true ? 0 : size
            #expect(fromTable == expected, "type \(type)")
        }
    }

    /// The size every reader skips a value by is what its encoding takes; cut anywhere shorter, it is refused.
    @Test func aValuesSizeIsWhatItsEncodingTakes() throws {
        let values: [any Encodable] = [
            Int8(-1), Int16(300), Int32(-70_000), Int64.max, UInt8(7), UInt16(9), UInt32(11), UInt64.max, true, false,
            Float(1.5), Double.pi, "", "Taro", String(repeating: "long ", count: 100), Data([1, 2, 3]),
            Date(timeIntervalSinceReferenceDate: 5), UUID(), URL(fileURLWithPath: "/tmp/a"), Decimal(string: "1.25"),
            [1, 2, 3], ["a": 1], Optional<Int>.none,
            Scalars(
                int: 1, int8: 2, int16: 3, int32: 4, int64: 5, uint: 6, uint8: 7, uint16: 8, uint32: 9, uint64: 10,
                bool: true, float: 1, double: 2, string: "s", empty: "", long: "l", unicode: "é"),
        ]
        for value in values {
            // A value alone is a format byte, the value and the checksum.
            let (record, _) = try encoded(value)
            let body = Array(record.dropLast(RecordFormat.checksumSize))
            body.withUnsafeBytes { bytes in
                #expect(RecordFormat.valueSize(in: bytes, at: 1, end: bytes.count) == bytes.count - 1, "\(value)")
                for end in 1..<bytes.count {
                    #expect(RecordFormat.valueSize(in: bytes, at: 1, end: end) == nil, "\(value) cut at \(end)")
                }
            }
        }
    }

    @Test func foundationTypesRoundTrip() throws {
        let value = Foundations(
            data: Data([0, 1, 2, 255]), emptyData: Data(), date: Date(timeIntervalSinceReferenceDate: 12_345.678),
            uuid: UUID(), url: URL(string: "https://example.com/a?b=c#d")!,
            decimal: Decimal(string: "-12345678901234567890.123456789")!)
        #expect(try roundTrip(value) == value)
    }

    @Test func containersRoundTrip() throws {
        let value = Containers(
            optional: 5, missing: nil, nested: .some(.some(3)), nestedNil: .none, nestedInnerNil: .some(.none),
            array: [1, 2, 3], emptyArray: [], set: ["a", "b"], stringDictionary: ["x": 1, "": 2, "日本": 3],
            intDictionary: [-1: "minus", 0: "zero", 42: "answer"], uuidDictionary: [UUID(): 1.5],
            matrix: [[1], [], [2, 3]], kind: .shiba, rank: .high,
            shapes: [.circle(radius: 2), .rectangle(3, 4), .point, .labelled(name: "n", tags: ["t"])],
            inner: .init(name: "in", values: [1, 2]),
            inners: [.init(name: "a", values: []), .init(name: "b", values: [3])],
            optionalInner: nil)
        let decoded = try roundTrip(value)
        // Synthesized Codable writes `.some(nil)` of an `Int??` as nil, as JSONEncoder does: it reads back as nil.
        var expected = value
        expected.nestedInnerNil = nil
        #expect(decoded == expected)
    }

    @Test func classesWithSuperEncoderRoundTrip() throws {
        let cat = try roundTrip(Cat(name: "Tama", lives: 9))
        #expect(cat.name == "Tama")
        #expect(cat.lives == 9)
        let bike = try roundTrip(Bike(brand: "Brompton"))
        #expect(bike.brand == "Brompton")
        #expect(bike.wheels == 2)
    }

    @Test func topLevelScalarsAndCollections() throws {
        #expect(try roundTrip(42) == 42)
        #expect(try roundTrip("text") == "text")
        #expect(try roundTrip([1, 2, 3]) == [1, 2, 3])
        #expect(try roundTrip(["a": [1], "b": []]) == ["a": [1], "b": []])
        #expect(try roundTrip(Int?.none) == nil)
    }

    struct Version1: Codable, Equatable {
        var name: String
        var age: Int
    }

    struct Version2: Codable, Equatable {
        var name: String
        var color: String?
        var age: Int
        var tags: [String]?
    }

    @Test func unknownFieldsAreSkippedAndMissingOptionalsAreNil() throws {
        let (newer, newerKeys) = try encoded(Version2(name: "Taro", color: "brown", age: 3, tags: ["good"]))
        let old = try newer.withUnsafeBytes { try RecordDecoder.decode(Version1.self, from: $0, dictionary: newerKeys) }
        #expect(old == Version1(name: "Taro", age: 3))

        let (older, olderKeys) = try encoded(Version1(name: "Jiro", age: 5))
        let new = try older.withUnsafeBytes { try RecordDecoder.decode(Version2.self, from: $0, dictionary: olderKeys) }
        #expect(new == Version2(name: "Jiro", color: nil, age: 5, tags: nil))
    }

    @Test func integersWidenAndRefuseWhatDoesNotFit() throws {
        struct Small: Codable { var n: Int8 }
        struct Wide: Codable { var n: Int64 }
        struct Unsigned: Codable { var n: UInt8 }
        let (small, keys) = try encoded(Small(n: -5))
        let wide = try small.withUnsafeBytes { try RecordDecoder.decode(Wide.self, from: $0, dictionary: keys) }
        #expect(wide.n == -5)
        #expect(throws: DecodingError.self) {
            try small.withUnsafeBytes { try RecordDecoder.decode(Unsigned.self, from: $0, dictionary: keys) }
        }
    }

    @Test func keyDictionaryTagsAreSharedAndAppendOnly() throws {
        let (_, first) = try encoded(Version1(name: "a", age: 1))
        #expect(first.names == ["name", "age"])
        let (_, second) = try encoded(Version2(name: "b", color: nil, age: 2, tags: nil), dictionary: first)
        #expect(second.names == ["name", "age", "color", "tags"])
        // Dictionary keys are data: they stay inline and never enter the model's key dictionary.
        let (_, third) = try encoded(["free-form key": 1, "another": 2], dictionary: second)
        #expect(third.names == second.names)
        let stored = third.serialized
        #expect(stored.withUnsafeBytes { KeyDictionary.deserialize($0)?.names } == third.names)
        #expect(stored.withUnsafeBytes { KeyDictionary.storedCount($0) } == third.names.count)
    }

    @Test func typeMismatchNamesTheField() throws {
        struct Wrong: Codable { var name: Int }
        let (bytes, keys) = try encoded(Version1(name: "Taro", age: 3))
        do {
            _ = try bytes.withUnsafeBytes { try RecordDecoder.decode(Wrong.self, from: $0, dictionary: keys) }
            Issue.record("decoding a String as an Int must fail")
        } catch let error as DecodingError {
            guard case .typeMismatch(_, let context) = error else {
                Issue.record("expected a type mismatch, got \(error)")
                return
            }
            #expect(context.codingPath.map(\.stringValue) == ["name"])
        }
    }

    @Test func thousandsOfMutatedRecordsNeverCrash() throws {
        let value = Containers(
            optional: 5, missing: "m", nested: 3, nestedNil: nil, nestedInnerNil: .some(nil), array: [1, 2, 3],
            emptyArray: [], set: ["a"], stringDictionary: ["x": 1], intDictionary: [1: "one"],
            uuidDictionary: [UUID(): 2], matrix: [[1, 2]], kind: .mutt, rank: .low,
            shapes: [.circle(radius: 1), .labelled(name: "n", tags: ["a", "b"])],
            inner: .init(name: "i", values: [1]), inners: [.init(name: "j", values: [2])],
            optionalInner: .init(name: "k", values: []))
        let (bytes, keys) = try encoded(value)
        let seed = UInt64.random(in: 0...UInt64(UInt32.max))
        print("mutated records: seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        var failures = 0
        for round in 0..<5_000 {
            let mutated = mutation(round, of: bytes, using: &generator)
            do {
                _ = try mutated.withUnsafeBytes {
                    try RecordDecoder.decode(Containers.self, from: $0, dictionary: keys)
                }
            } catch {
                if round % 4 == 0 { failures += 1 }
            }
        }
        // Every truncated record is an error (its container lengths promise bytes that are gone); the other
        // mutations may decode or fail, but none may crash (reaching this line is that part of the test).
        #expect(failures == 1_250)
    }

    struct Sample: Codable, Equatable {
        var id: Int64
        var name: String
        var score: Double
        var flags: [Bool]
        var note: String?
    }

    @Test func propertyRoundTrip() async {
        let samples = zip(
            Gen.int64(in: .min ... .max),
            Gen.unicodeScalar(in: "\u{0}"..."\u{D7FF}").map(Character.init).string(of: 0...40),
            Gen.double(in: -1e12...1e12), Gen.bool.array(of: 0...8)
        ).map { Sample(id: $0, name: $1, score: $2, flags: $3, note: $3.first == true ? $1 : nil) }
        await checkProperty(count: 500, input: samples) { sample in
            #expect((try? roundTrip(sample)) == sample)
        }
    }
}

@Suite("Records read without their type")
struct RecordValueTests {
    @Test func aRecordReadsAsATreeWithKeyNames() throws {
        let dog = Containers.Inner(name: "Taro", values: [1.5, 2])
        let (bytes, keys) = try encoded(dog)
        let value = try bytes.withUnsafeBytes { try RecordValue(record: $0, dictionary: keys) }
        #expect(value["name"] == .string("Taro"))
        #expect(value["values"] == .unkeyed([.double(1.5), .double(2)]))
        #expect(value == .keyed([("name", .string("Taro")), ("values", .unkeyed([.double(1.5), .double(2)]))]))
    }

    @Test func everyValueKindIsReadable() throws {
        let value = Foundations(
            data: Data([9]), emptyData: Data(), date: Date(timeIntervalSinceReferenceDate: 1), uuid: UUID(),
            url: URL(string: "https://example.com")!, decimal: Decimal(string: "1.25")!)
        let (bytes, keys) = try encoded(value)
        let tree = try bytes.withUnsafeBytes { try RecordValue(record: $0, dictionary: keys) }
        #expect(tree["data"] == .bytes(Data([9])))
        #expect(tree["date"] == .date(value.date))
        #expect(tree["uuid"] == .uuid(value.uuid))
        #expect(tree["url"] == .url("https://example.com"))
        #expect(tree["decimal"] == .decimal("1.25"))
        let (dictionaryBytes, dictionaryKeys) = try encoded([7: "seven"])
        #expect(
            try dictionaryBytes.withUnsafeBytes { try RecordValue(record: $0, dictionary: dictionaryKeys) }
                == .keyed([("[7]", .string("seven"))]))
    }

    @Test func damagedBytesAreRefused() throws {
        let (bytes, keys) = try encoded(Containers.Inner(name: "Taro", values: [1]))
        for cut in 0..<bytes.count {
            #expect(throws: (any Error).self) {
                try Array(bytes.prefix(cut)).withUnsafeBytes { try RecordValue(record: $0, dictionary: keys) }
            }
        }
        #expect(throws: RecordValue.Malformed.self) {
            try bytes.withUnsafeBytes { try RecordValue(record: $0, dictionary: .empty) }
        }
    }
}
