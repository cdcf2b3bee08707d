/// A JSON value as it travels between a device and the server: a record's properties are values of this type, so
/// that neither side needs the model's Swift type to merge them.
///
/// Values are read and written by this module's own codec (``init(parsing:)``, ``serialized()``), not by
/// `JSONDecoder`: a number keeps the text it was written with (``JSONNumber``), so `Decimal` money, integers past 64
/// bits and `-0.0` arrive as they left, on every device and in PostgreSQL (whose `json` column keeps the text too).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// An integer.
    public static func integer(_ value: some BinaryInteger) -> JSONValue { .number(JSONNumber(value)) }

    /// A finite `Double`, written as Swift writes it (the shortest text that reads back as the same value); `null`
    /// for infinities and NaN, which JSON has no numbers for.
    public static func double(_ value: Double) -> JSONValue { JSONNumber(value).map(JSONValue.number) ?? .null }
}

extension JSONValue {
    /// The value as compact JSON with object keys in the order of their UTF-8 bytes: equal values give equal text,
    /// whatever order their keys were written in. Breaks a tie between two writes with the same stamp, so that every
    /// side picks the same.
    public var canonicalText: String { String(decoding: serialized(), as: UTF8.self) }

    /// Whether the value holds U+0000 in a string or an object's key.
    public var holdsNUL: Bool {
        switch self {
        case .null, .bool, .number: false
        case .string(let text): text.utf8.contains(0)
        case .array(let values): values.contains(where: \.holdsNUL)
        case .object(let members): members.contains { $0.key.utf8.contains(0) || $0.value.holdsNUL }
        }
    }

    /// The number of UTF-8 bytes of ``serialized()``, without making it.
    public var serializedSize: Int {
        switch self {
        case .null: 4
        case .bool(let value): value ? 4 : 5
        case .number(let number): number.text.utf8.count
        case .string(let text): JSONWriter.quotedSize(text)
        case .array(let values): 2 + values.reduce(max(values.count - 1, 0)) { $0 + $1.serializedSize }
        case .object(let members):
            2
                + members.reduce(max(members.count - 1, 0)) {
                    $0 + JSONWriter.quotedSize($1.key) + 1 + $1.value.serializedSize
                }
        }
    }
}
