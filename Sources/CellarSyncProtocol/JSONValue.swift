/// A JSON value as it travels between a device and the server: a record's properties are values of this type, so
/// that neither side needs the model's Swift type to merge them.
///
/// Numbers keep the form they were written in: an integer that fits `Int64` or `UInt64` stays exact (a `Double` would
/// round ids and counters past 2⁵³); any other number is a `Double`.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// An integer above `Int64.max`.
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsigned(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .unsigned(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue {
    /// The value as compact JSON text with object keys sorted: equal values give equal text, whatever order their
    /// keys were written in. Breaks a tie between two writes with the same stamp, so that every side picks the same.
    public var canonicalText: String {
        var text = ""
        appendCanonical(to: &text)
        return text
    }

    private func appendCanonical(to text: inout String) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .integer(let value): text += String(value)
        case .unsigned(let value): text += String(value)
        case .double(let value): text += value.isFinite ? "\(value)" : "null"
        case .string(let value): Self.appendQuoted(value, to: &text)
        case .array(let values):
            text += "["
            for (position, value) in values.enumerated() {
                if position > 0 { text += "," }
                value.appendCanonical(to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (position, name) in members.keys.sorted().enumerated() {
                if position > 0 { text += "," }
                Self.appendQuoted(name, to: &text)
                text += ":"
                members[name, default: .null].appendCanonical(to: &text)
            }
            text += "}"
        }
    }

    private static func appendQuoted(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
