/// A JSON number, kept as the text it was written with: nothing is rounded on the way, whatever the number's size or
/// precision. `JSONEncoder` writes a `Decimal`, an `Int128` or a `Double` as the exact text its decoder reads back,
/// so a model's value crosses devices unchanged as long as nothing between converts it to a binary number.
///
/// Two numbers are equal when their texts are: `1` and `1.0` differ, as the same write always has the same text.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number as JSON writes it: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    public let text: String

    /// The number written as `text`; `nil` when `text` is not a JSON number.
    public init?(_ text: String) {
        var text = text
        let valid = text.withUTF8 { Self.isNumber(UnsafeRawBufferPointer($0)) }
        guard valid else { return nil }
        self.text = text
    }

    /// Text already checked by the parser.
    init(checked text: String) { self.text = text }

    public init(_ value: some BinaryInteger) { text = String(value) }

    /// A finite `Double`, in the shortest text that reads back as the same value (`-0.0` keeps its sign); `nil` for
    /// infinities and NaN.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        text =
            value == value.rounded() && abs(value) < 1e15 && !(value == 0 && value.sign == .minus)
            ? String(Int64(value)) : "\(value)"
    }

    public var description: String { text }

    /// The number as an `Int64`, when it is an integer in its range written without a fraction or exponent.
    public var int64Value: Int64? { Int64(text) }

    /// The nearest `Double`.
    public var doubleValue: Double? { Double(text) }

    /// Whether `bytes` are exactly one JSON number.
    static func isNumber(_ bytes: UnsafeRawBufferPointer) -> Bool {
        numberEnd(bytes, from: 0) == bytes.count && !bytes.isEmpty
    }

    /// Where the number that starts at `start` ends; `nil` when none starts there.
    static func numberEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var position = start
        func digits() -> Int {
            let first = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return position - first
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count else { return nil }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else if digits() == 0 {
            return nil
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { return nil }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { return nil }
        }
        return position
    }
}
