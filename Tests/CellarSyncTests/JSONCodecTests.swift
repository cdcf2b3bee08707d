import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

/// The protocol's JSON codec: what it writes it reads back equal, numbers keep their text, and input that is not
/// JSON, or that could mean two things, is refused with where and why.
@Suite("Sync: the JSON codec")
struct JSONCodecTests {
    /// A random JSON value: numbers as JSONEncoder writes them, strings with escapes, both normal forms, emoji.
    static func value(_ random: inout SplitMix, depth: Int = 0) -> JSONValue {
        switch random.below(depth > 3 ? 5 : 7) {
        case 0: return .null
        case 1: return .bool(random.below(2) == 0)
        case 2: return .number(number(&random))
        case 3, 4: return .string(text(&random))
        case 5: return .array((0..<random.below(4)).map { _ in value(&random, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<random.below(4) { members[text(&random)] = value(&random, depth: depth + 1) }
            return .object(members)
        }
    }

    static let pieces = [
        "a", "é", "e\u{301}", "\"", "\\", "\n", "\r\n", "\u{1}", "\u{7F}", "👩‍👩‍👧", "日本", " ", "/", "\u{2028}",
    ]

    static func text(_ random: inout SplitMix) -> String {
        (0..<random.below(5)).map { _ in pieces[random.below(pieces.count)] }.joined()
    }

    /// A number as `JSONEncoder` writes one of the codec's types.
    static func number(_ random: inout SplitMix) -> JSONNumber {
        let encoder = JSONEncoder()
        func text(_ value: some Encodable) -> String {
            String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
        }
        let written: String
        switch random.below(6) {
        case 0: written = text(Int64(bitPattern: random.next()))
        case 1: written = text(UInt128(random.next()) << 64 | UInt128(random.next()))
        case 2: written = text(Int128(bitPattern: UInt128(random.next()) << 64 | UInt128(random.next())))
        case 3:
            let double = Double(bitPattern: random.next())
            written = text(double.isFinite ? double : -0.0)
        case 4: written = text(Decimal(string: "\(random.next())\(random.next()).\(random.below(1000))") ?? 0)
        default:
            written = text(Float(bitPattern: UInt32(truncatingIfNeeded: random.next())).isFinite ? 0.1 as Float : 1)
        }
        return JSONNumber(written) ?? JSONNumber(0)
    }

    @Test func whatItWritesItReadsBackEqual() throws {
        var random = SplitMix(seed: 41)
        for _ in 0..<2_000 {
            let value = Self.value(&random)
            let bytes = value.serialized()
            #expect(bytes.count == value.serializedSize)
            let read = try JSONValue(parsing: bytes)
            #expect(read == value)
            // Whatever order keys come in, equal values write equal text.
            #expect(read.serialized() == bytes)
            // And Foundation reads it as the same JSON.
            _ = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        }
    }

    @Test func numbersKeepTheTextJSONEncoderWrote() throws {
        struct Money: Codable, Equatable {
            var amount: Decimal
            var big: UInt128
            var negativeZero: Double
            var tiny: Double
        }
        let money = Money(
            amount: Decimal(string: "12345678901234567.89")!, big: .max, negativeZero: -0.0,
            tiny: .leastNonzeroMagnitude)
        let written = try JSONEncoder().encode(money)
        let value = try JSONValue(parsing: written)
        guard case .object(let fields) = value else { throw CocoaError(.coderInvalidValue) }
        #expect(fields["amount"] == .number(JSONNumber("12345678901234567.89")!))
        #expect(fields["big"] == .number(JSONNumber("340282366920938463463374607431768211455")!))
        #expect(fields["negativeZero"] == .number(JSONNumber("-0")!))
        let back = try JSONDecoder().decode(Money.self, from: Data(value.serialized()))
        #expect(back == money)
        #expect(back.negativeZero.sign == .minus)
    }

    @Test func inputThatIsNotJSONOrCouldMeanTwoThingsIsRefused() {
        let cases: [(String, String)] = [
            ("", "ends"), ("{", "ends"), ("[1,]", "not a JSON value"), ("01", "more after"), ("1.", "not a JSON value"),
            ("-", "not a JSON value"), ("\"\\x\"", "unknown escape"), ("\"\\ud800\"", "lone surrogate"),
            ("\"\u{1}\"", "control character"), ("{\"a\":1,\"a\":2}", "twice"),
            ("{\"\u{E9}\":1,\"e\u{301}\":2}", "twice"), ("[1] [2]", "more after"), ("tru", "not a JSON value"),
            (String(repeating: "[", count: 600) + String(repeating: "]", count: 600), "deeper"),
        ]
        for (input, words) in cases {
            do throws(JSONSyntaxError) {
                _ = try JSONValue(parsing: Array(input.utf8))
                Issue.record("read \(input.prefix(20))")
            } catch {
                #expect(error.reason.contains(words), "\(input.prefix(20)): \(error)")
            }
        }
        #expect((try? JSONValue(parsing: [0x22, 0xFF, 0x22])) == nil, "invalid UTF-8")
        #expect(JSONNumber("1e5") != nil && JSONNumber("1e") == nil && JSONNumber("+1") == nil)
    }

    @Test func aMessageThatIsNotOneSaysWhere() {
        do throws(JSONShapeError) {
            _ = try PushRequest(jsonBytes: Array(#"{"device":"x","models":{},"changes":[{"model":"A","id":1}]}"#.utf8))
            Issue.record("read")
        } catch {
            #expect(error.description == "at changes[0].id: expected a string, found the number 1")
        }
    }
}
