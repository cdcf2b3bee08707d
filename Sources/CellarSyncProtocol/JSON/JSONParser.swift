/// Why bytes are not the JSON a reader expected: where, and what was wrong there.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible {
    /// The offset of the byte where reading stopped.
    public var offset: Int
    public var reason: String

    public var description: String { "\(reason) at byte \(offset)" }
}

extension JSONValue {
    /// The deepest nesting of arrays and objects the parser reads: deeper input is refused, so that no input can
    /// exhaust the stack.
    public static let maxDepth = 128

    /// Reads one JSON value (RFC 8259) from `bytes`, with whitespace around it and nothing else.
    ///
    /// Stricter than JSON's grammar in two ways, both for data that must mean one thing on every device: an object
    /// may not name a key twice (two spellings of one key in different Unicode normal forms count as one key, as
    /// Swift's strings compare them), and a string may not hold invalid UTF-8 or a lone surrogate.
    public init(parsing bytes: some Sequence<UInt8>) throws(JSONSyntaxError) {
        let array = Array(bytes)
        let result = array.withUnsafeBytes { buffer -> Result<JSONValue, JSONSyntaxError> in
            var parser = JSONParser(bytes: buffer)
            do throws(JSONSyntaxError) {
                parser.skipWhitespace()
                let value = try parser.value(depth: 0)
                parser.skipWhitespace()
                guard parser.position == buffer.count else { throw parser.error("more after the value") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }
}

/// A recursive-descent reader over bytes; numbers are kept as their text.
struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    func error(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(offset: position, reason: reason) }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard position < bytes.count else { throw error("the input ends where a value should be") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        default:
            guard let end = JSONNumber.numberEnd(bytes, from: position) else { throw error("not a JSON value") }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[position..<end]), as: UTF8.self)
            position = end
            return .number(JSONNumber(checked: text))
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count,
            UnsafeRawBufferPointer(start: word.utf8Start, count: count).elementsEqual(
                UnsafeRawBufferPointer(rebasing: bytes[position..<position + count]))
        else { throw error("not a JSON value") }
        position += count
        return value
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw error("nested deeper than \(JSONValue.maxDepth) levels") }
        position += 1
        var values: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(values)
        }
        while true {
            skipWhitespace()
            values.append(try value(depth: depth))
            skipWhitespace()
            guard position < bytes.count else { throw error("the input ends inside an array") }
            switch bytes[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                return .array(values)
            default: throw error("expected , or ] in an array")
            }
        }
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw error("nested deeper than \(JSONValue.maxDepth) levels") }
        position += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count else { throw error("the input ends inside an object") }
            guard bytes[position] == UInt8(ascii: "\"") else {
                throw error("expected a key in quotes in an object")
            }
            let keyOffset = position
            let key = try string()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw error("expected : after an object's key")
            }
            position += 1
            skipWhitespace()
            let value = try value(depth: depth)
            guard members.updateValue(value, forKey: key) == nil else {
                throw JSONSyntaxError(
                    offset: keyOffset,
                    reason: "the object names the key \"\(key.prefix(80))\" twice (perhaps in two Unicode normal forms)"
                )
            }
            skipWhitespace()
            guard position < bytes.count else { throw error("the input ends inside an object") }
            switch bytes[position] {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return .object(members)
            default: throw error("expected , or } in an object")
            }
        }
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        position += 1
        let start = position
        // The common case: no escapes, so the bytes are the string.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                guard let text = String(validating: raw, as: UTF8.self) else {
                    throw JSONSyntaxError(offset: start, reason: "a string is not valid UTF-8")
                }
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("a control character inside a string (escape it)") }
            position += 1
        }
        var utf8 = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw JSONSyntaxError(offset: start, reason: "a string is not valid UTF-8")
                }
                position += 1
                return text
            case UInt8(ascii: "\\"):
                position += 1
                guard position < bytes.count else { break }
                let escaped = bytes[position]
                position += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard position + 2 <= bytes.count, bytes[position] == UInt8(ascii: "\\"),
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw error("a lone surrogate in a string") }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("a lone surrogate in a string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw error("a lone surrogate in a string")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("not a Unicode scalar") }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw error("an unknown escape in a string")
                }
            default:
                guard byte >= 0x20 else { throw error("a control character inside a string (escape it)") }
                utf8.append(byte)
                position += 1
            }
        }
        throw error("the input ends inside a string")
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("the input ends inside a \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("not a hex digit in a \\u escape")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }
}
