import Foundation
import PropertyBased
import Testing

@testable import Cellar

private func key<T: Encodable>(_ value: T) throws -> [UInt8] { try KeyEncoding.key(value) }

/// Asserts that key order equals value order for a pair.
private func expectSameOrder<T: Encodable & Comparable>(
    _ a: T, _ b: T, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let ka = try? key(a), let kb = try? key(b) else {
        Issue.record("\(a) or \(b) could not be encoded", sourceLocation: sourceLocation)
        return
    }
    #expect(ka.lexicographicallyPrecedes(kb) == (a < b), "\(a) vs \(b)", sourceLocation: sourceLocation)
    #expect((ka == kb) == (a == b), "\(a) vs \(b)", sourceLocation: sourceLocation)
}

struct Composite: Codable, Comparable {
    var last: String
    var first: String
    var age: Int
    static func < (l: Composite, r: Composite) -> Bool { (l.last, l.first, l.age) < (r.last, r.first, r.age) }
}

@Suite("Order-preserving keys")
struct KeyEncodingTests {
    @Test func stringTestVectorFromTheDesign() throws {
        #expect(
            try key("foo\0bar") == [
                KeyEncoding.Tag.string.rawValue, 0x66, 0x6F, 0x6F, 0x00, 0xFF, 0x62, 0x61, 0x72, 0x00,
            ])
    }

    @Test func signedIntegersAcrossTheSignAndByteBoundaries() {
        let values: [Int64] = [.min, -65_536, -257, -256, -255, -1, 0, 1, 255, 256, 257, 65_536, .max]
        for a in values { for b in values { expectSameOrder(a, b) } }
    }

    @Test func everyIntegerWidth() throws {
        expectSameOrder(Int8(-128), Int8(127))
        expectSameOrder(Int16(-300), Int16(-299))
        expectSameOrder(Int32(-1), Int32(0))
        expectSameOrder(UInt8(0), UInt8(255))
        expectSameOrder(UInt16(255), UInt16(256))
        expectSameOrder(UInt32.max - 1, UInt32.max)
        expectSameOrder(UInt64(1) << 63, UInt64.max)
        expectSameOrder(UInt(3), UInt(4))
        // Widths share one form, so changing a property's width keeps its keys.
        #expect(try key(Int8(-5)) == key(Int64(-5)))
        #expect(try key(UInt8(5)) == key(UInt64(5)))
    }

    @Test func doublesWithZeroesAndInfinities() throws {
        let values: [Double] = [
            -.infinity, -1e300, -2.5, -1, -.leastNonzeroMagnitude, 0, .leastNonzeroMagnitude, 1, 2.5, 1e300, .infinity,
        ]
        for a in values { for b in values { expectSameOrder(a, b) } }
        #expect(try key(-0.0) == key(0.0))
        expectSameOrder(Float(-1.5), Float(0.25))
        #expect(throws: KeyEncoding.Failure.self) { try key(Double.nan) }
        #expect(throws: KeyEncoding.Failure.self) { try key(Float.nan) }
    }

    @Test func stringsOrderByUTF8AndAreNormalised() throws {
        expectSameOrder("", "a")
        expectSameOrder("a", "a\0")
        expectSameOrder("a\0", "a\u{1}")
        expectSameOrder("ab", "b")
        expectSameOrder("Z", "a")
        // "é" composed and decomposed are equal in Swift, so they must be one key.
        #expect(try key("caf\u{E9}") == key("cafe\u{301}"))
    }

    @Test func otherScalarTypes() throws {
        #expect(try key(false).lexicographicallyPrecedes(key(true)))
        expectSameOrder(Date(timeIntervalSince1970: -5), Date(timeIntervalSince1970: 5))
        let uuids = (0..<20).map { _ in UUID() }
        for a in uuids {
            for b in uuids { #expect(try key(a).lexicographicallyPrecedes(key(b)) == (a.uuidString < b.uuidString)) }
        }
        #expect(try key(Data([1, 2])).lexicographicallyPrecedes(key(Data([1, 2, 0]))))
        #expect(throws: KeyEncoding.Failure.self) { try key(Decimal(1)) }
    }

    @Test func optionalsSortNilFirst() throws {
        #expect(try key(Int?.none).lexicographicallyPrecedes(key(Int?.some(.min))))
        #expect(try key(String?.none).lexicographicallyPrecedes(key(String?.some(""))))
    }

    @Test func compositesOrderComponentWise() {
        expectSameOrder(Composite(last: "Doe", first: "Al", age: 3), Composite(last: "Doe", first: "Al", age: 4))
        expectSameOrder(Composite(last: "Do", first: "Zed", age: 1), Composite(last: "Doe", first: "Al", age: 0))
        expectSameOrder(Composite(last: "Doe", first: "", age: 9), Composite(last: "Doe", first: "A", age: 0))
    }

    @Test func textKeysAreEscapedAndNormalised() throws {
        // ASCII is copied whole unless it holds a zero byte, which is escaped; other text is NFC first.
        #expect(try key("ab") == [0x40, 0x61, 0x62, 0x00])
        #expect(try key("a\u{0}b") == [0x40, 0x61, 0x00, 0xFF, 0x62, 0x00])
        #expect(try key("\u{0}") == [0x40, 0x00, 0xFF, 0x00])
        #expect(try key("") == [0x40, 0x00])
        #expect(try key("e\u{301}") == key("\u{E9}"))
        #expect(try key("\u{E9}\u{0}") == [0x40, 0xC3, 0xA9, 0x00, 0xFF, 0x00])
    }

    @Test func describeReadsKeysBack() throws {
        #expect(KeyEncoding.describe(try key(Int64(-42))) == "-42")
        #expect(KeyEncoding.describe(try key("Taro")) == "\"Taro\"")
        #expect(KeyEncoding.describe(try key(Composite(last: "Doe", first: "Al", age: 3))) == "(\"Doe\", \"Al\", 3)")
    }

    @Test func propertyIntegerOrder() async {
        await checkProperty(count: 2_000, input: Gen.int64(in: .min ... .max), Gen.int64(in: .min ... .max)) { a, b in
            expectSameOrder(a, b)
        }
    }

    @Test func propertyDoubleOrder() async {
        await checkProperty(count: 2_000, input: Gen.double(in: -1e300...1e300), Gen.double(in: -1e300...1e300)) {
            a, b in
            expectSameOrder(a, b)
        }
    }

    @Test func propertyStringOrder() async {
        // Strings from a small alphabet that includes NUL, so escapes and prefixes come up often.
        let text = Gen.character(in: "\u{0}"..."\u{3}").string(of: 0...6)
        await checkProperty(count: 2_000, input: text, text) { a, b in
            // Byte order is UTF-8 order, which is Unicode scalar order.
            let ka = try? key(a)
            let kb = try? key(b)
            #expect(
                ka?.lexicographicallyPrecedes(kb ?? []) == a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars))
        }
    }

    @Test func propertyCompositeOrder() async {
        let name = Gen.character(in: "a"..."c").string(of: 0...3)
        let composites = zip(name, name, Gen.int(in: -3...3)).map { Composite(last: $0, first: $1, age: $2) }
        await checkProperty(count: 2_000, input: composites, composites) { a, b in
            expectSameOrder(a, b)
        }
    }
}
