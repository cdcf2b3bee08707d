import Cellar
import Foundation

extension RecordValue {
    /// The value as a person reads it: `{id: 1, name: "Taro", tags: ["a", "b"], owner: nil}`.
    var text: String {
        switch self {
        case .null: "nil"
        case .bool(let value): String(value)
        case .int(let value): String(value)
        case .uint(let value): String(value)
        case .int128(let value): String(value)
        case .uint128(let value): String(value)
        case .float(let value): String(value)
        case .double(let value): String(value)
        case .string(let value): Self.quoted(value)
        case .bytes(let value): value.count <= 32 ? "<\(value.hexadecimal)>" : "<\(Format.bytes(value.count))>"
        case .date(let value): Self.dateText(value)
        case .uuid(let value): value.uuidString
        case .url(let value): "<\(value)>"
        case .decimal(let value): value
        case .keyed(let entries): "{" + entries.map { "\($0.key): \($0.value.text)" }.joined(separator: ", ") + "}"
        case .unkeyed(let values): "[" + values.map(\.text).joined(separator: ", ") + "]"
        }
    }

    /// The value as JSON, keys in the record's order: numbers as numbers, `Data` as base64, dates in ISO 8601,
    /// infinities and NaN as strings.
    var json: String {
        switch self {
        case .null: "null"
        case .bool(let value): String(value)
        case .int(let value): String(value)
        case .uint(let value): String(value)
        case .int128(let value): String(value)
        case .uint128(let value): String(value)
        case .float(let value): value.isFinite ? String(value) : Self.quoted(String(value))
        case .double(let value): value.isFinite ? String(value) : Self.quoted(String(value))
        case .string(let value), .url(let value): Self.quoted(value)
        case .decimal(let value): value
        case .bytes(let value): Self.quoted(value.base64EncodedString())
        case .date(let value): Self.quoted(Self.dateText(value))
        case .uuid(let value): Self.quoted(value.uuidString)
        case .keyed(let entries):
            "{" + entries.map { Self.quoted($0.key) + ":" + $0.value.json }.joined(separator: ",") + "}"
        case .unkeyed(let values): "[" + values.map(\.json).joined(separator: ",") + "]"
        }
    }

    /// The value as `--where` compares it: text without quotes, numbers as written, `nil` or `null` for none.
    func matches(_ text: String) -> Bool {
        switch self {
        case .null: text == "nil" || text == "null"
        case .string(let value), .url(let value), .decimal(let value): value == text
        case .int(let value): Int64(text) == value
        case .uint(let value): UInt64(text) == value
        case .int128(let value): Int128(text) == value
        case .uint128(let value): UInt128(text) == value
        case .double(let value): Double(text) == value
        case .float(let value): Float(text) == value
        case .bool(let value): Bool(text) == value
        case .uuid(let value): UUID(uuidString: text) == value
        case .date(let value): Self.dateText(value) == text
        case .bytes, .keyed, .unkeyed: self.text == text
        }
    }

    private static func dateText(_ date: Date) -> String { StoredDate.iso8601(date) }

    /// A string in double quotes with JSON's escapes, which the text form uses too.
    private static func quoted(_ text: String) -> String {
        "\"" + text.unicodeScalars.map(escaped).joined() + "\""
    }

    private static func escaped(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\"": "\\\""
        case "\\": "\\\\"
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        case _ where scalar.value < 0x20: "\\u" + String(format: "%04x", scalar.value)
        default: String(scalar)
        }
    }
}

extension Data {
    fileprivate var hexadecimal: String { map { String(format: "%02x", $0) }.joined() }
}
