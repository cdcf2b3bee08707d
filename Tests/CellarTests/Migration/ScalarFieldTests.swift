import PropertyBased
import Testing

@testable import Cellar

/// A migration's common values, read and written without the coders, are the bytes and values the coders give.
@Suite("Migrations: scalar fields read and written directly")
struct ScalarFieldTests {
    /// The bytes `RecordEncoder` writes for `value`, without the record's format byte.
    static func viaEncoder<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(RecordFormat.value(ofEncoded: try RecordEncoder(dictionary: .empty).encode(value)))
    }

    /// `value` written directly, then read back directly and by the decoder.
    static func check<T: Codable & Equatable>(_ value: T) throws {
        let direct = try #require(ScalarField.encoded(value))
        #expect(direct == (try viaEncoder(value)), "\(value)")
        let read = direct.withUnsafeBytes { ScalarField.value(T.self, in: $0, at: 0) }
        let decoded = try direct.withUnsafeBytes {
            try RecordDecoder().decode(T.self, from: $0, at: 0, dictionary: .empty)
        }
        #expect(read == value && decoded == value, "\(value)")
    }

    @Test func textAndNumbersAreTheCodersBytesAndValues() async {
        let text = Gen.character(in: "\u{0}"..."\u{7F}").string(of: 0...200)
        let wide = Gen.character(in: "\u{E0}"..."\u{3000}").string(of: 0...20)
        await checkProperty(count: 300, input: zip(text, wide, Gen.int64(in: .min ... .max))) { ascii, other, number in
            try Self.check(ascii)
            try Self.check(ascii + other)
            try Self.check(number)
            try Self.check(Int(number))
            try Self.check(
                Double(bitPattern: UInt64(bitPattern: number)).isNaN
                    ? 0 : Double(bitPattern: UInt64(bitPattern: number)))
            try Self.check(number % 2 == 0)
        }
    }

    @Test func otherTypesAndOtherStoredKindsAreLeftToTheCoders() throws {
        #expect(ScalarField.encoded(Int32(3)) == nil)
        #expect(ScalarField.encoded([1, 2]) == nil)
        let int32 = try Self.viaEncoder(Int32(3))
        #expect(int32.withUnsafeBytes { ScalarField.value(Int.self, in: $0, at: 0) } == nil)
        let text = try Self.viaEncoder("7")
        #expect(text.withUnsafeBytes { ScalarField.value(Int.self, in: $0, at: 0) } == nil)
        #expect(text.withUnsafeBytes { ScalarField.value(Substring.self, in: $0, at: 0) } == nil)
        // Not UTF-8: the decoder says why.
        let damaged: [UInt8] = [RecordFormat.ValueType.string.rawValue, 2, 0xC3, 0x28]
        #expect(damaged.withUnsafeBytes { ScalarField.value(String.self, in: $0, at: 0) } == nil)
    }
}
