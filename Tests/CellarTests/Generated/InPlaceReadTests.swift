import CellarMacros
import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// Every type whose fields generated code reads in place when they come where expected.
@Record
struct InPlaceFields: Equatable {
    var int: Int
    var int64: Int64
    var int32: Int32
    var uint64: UInt64
    var double: Double
    var flag: Bool
    var text: String
    var maybeInt: Int?
    var maybeInt64: Int64?
    var maybeInt32: Int32?
    var maybeUInt64: UInt64?
    var maybeDouble: Double?
    var maybeFlag: Bool?
    var maybeText: String?
}

/// The same names in another order, with narrower integers: its records hold every field out of the order
/// `InPlaceFields` expects, and integers in other widths.
struct ShuffledFields: Codable {
    var maybeText: String?
    var text: String
    var flag: Bool
    var int: Int8
    var int64: Int16
    var int32: Int8
    var uint64: UInt8
    var double: Float
    var maybeInt: Int8?
    var maybeFlag: Bool?
}

/// An older version without the optional fields.
struct RequiredFields: Codable {
    var int: Int
    var int64: Int64
    var int32: Int32
    var uint64: UInt64
    var double: Double
    var flag: Bool
    var text: String
}

@Suite("Fields read in place")
struct InPlaceReadTests {
    func read(_ bytes: [UInt8], _ keys: KeyDictionary) throws -> InPlaceFields {
        try readGenerated(InPlaceFields.self, bytes, dictionary: keys)
    }

    @Test func inPlaceReadsGiveWhatCodableGives() async {
        let text = Gen.unicodeScalar(in: "\u{0}"..."\u{D7FF}").map(Character.init).string(of: 0...200)
        let values = zip(
            Gen.int(in: .min ... .max), Gen.int64(in: .min ... .max), Gen.int32(in: .min ... .max),
            Gen.uint64(in: .min ... .max), Gen.double(in: -1e300...1e300), Gen.bool, text,
            Gen.int(in: -3...3)
        ).map { int, int64, int32, uint64, double, flag, text, choice in
            // `choice` decides which optionals hold a value: none, all, or every other one.
            let some = { (position: Int) in choice > 0 || (choice == 0 && position % 2 == 0) }
            return InPlaceFields(
                int: int, int64: int64, int32: int32, uint64: uint64, double: double, flag: flag, text: text,
                maybeInt: some(0) ? int : nil, maybeInt64: some(1) ? int64 : nil, maybeInt32: some(2) ? int32 : nil,
                maybeUInt64: some(3) ? uint64 : nil, maybeDouble: some(4) ? double : nil,
                maybeFlag: some(5) ? !flag : nil, maybeText: some(6) ? String(text.reversed()) : nil)
        }
        await checkProperty(count: 500, input: values) { value in
            let (bytes, keys) = try encoded(value)
            #expect(try read(bytes, keys) == value)
            #expect(
                try bytes.withUnsafeBytes { try RecordDecoder.decode(InPlaceFields.self, from: $0, dictionary: keys) }
                    == value)
        }
    }

    @Test func fieldsOutOfOrderInOtherWidthsOrMissingReadAsCodableReadsThem() throws {
        let shuffled = ShuffledFields(
            maybeText: "é", text: String(repeating: "long ", count: 40), flag: true, int: -5, int64: 300, int32: 7,
            uint64: 200, double: 1.5, maybeInt: 9, maybeFlag: false)
        let (bytes, keys) = try encoded(shuffled)
        let read = try read(bytes, keys)
        #expect(
            read
                == InPlaceFields(
                    int: -5, int64: 300, int32: 7, uint64: 200, double: 1.5, flag: true,
                    text: String(repeating: "long ", count: 40), maybeInt: 9, maybeInt64: nil, maybeInt32: nil,
                    maybeUInt64: nil, maybeDouble: nil, maybeFlag: false, maybeText: "é"))
        #expect(
            try bytes.withUnsafeBytes { try RecordDecoder.decode(InPlaceFields.self, from: $0, dictionary: keys) }
                == read)

        let (older, olderKeys) = try encoded(
            RequiredFields(int: 1, int64: 2, int32: 3, uint64: 4, double: 5, flag: false, text: "six"))
        let upgraded = try self.read(older, olderKeys)
        #expect(upgraded.text == "six" && upgraded.maybeInt == nil && upgraded.maybeText == nil)
    }

    @Test func aFieldOfAnotherTypeIsAMismatchNamingTheField() throws {
        struct WrongType: Codable {
            var int: String
        }
        struct OnlyInt: Codable {
            var int: Int
        }
        var (bytes, keys) = try encoded(WrongType(int: "x"))
        #expect {
            try read(bytes, keys)
        } throws: { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["int"]
        }
        // A required field that is not there is named too.
        (bytes, keys) = try encoded(OnlyInt(int: 1))
        #expect {
            try read(bytes, keys)
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return false }
            return key.stringValue == "int64"
        }
    }
}
