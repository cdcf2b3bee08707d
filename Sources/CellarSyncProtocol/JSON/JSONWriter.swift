extension JSONValue {
    /// The value as compact JSON (no whitespace), object keys in the order of their UTF-8 bytes, numbers as their
    /// text: the form both sides send and the server stores.
    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(serializedSize)
        JSONWriter.write(self, to: &bytes)
        return bytes
    }
}

enum JSONWriter {
    static func write(_ value: JSONValue, to bytes: inout [UInt8]) {
        switch value {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let value): bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let number): bytes.append(contentsOf: number.text.utf8)
        case .string(let text): quote(text, to: &bytes)
        case .array(let values):
            bytes.append(UInt8(ascii: "["))
            for (position, value) in values.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                write(value, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (position, key) in sortedKeys(members).enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                quote(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                write(members[key] ?? .null, to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// The keys in the order of their UTF-8 bytes: one order, whatever the keys' normal forms.
    static func sortedKeys(_ members: [String: JSONValue]) -> [String] {
        members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    static func quote(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case ..<0x20:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hexDigit(byte >> 4))
                bytes.append(hexDigit(byte & 0xF))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    static func quotedSize(_ text: String) -> Int {
        var size = 2
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09: size += 2
            case ..<0x20: size += 6
            default: size += 1
            }
        }
        return size
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
