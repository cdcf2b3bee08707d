import Foundation

extension RecordValue {
    /// The value at a dotted path of field names (`["owner", "name"]`); `nil` where a field is absent.
    package func value(at path: some Sequence<String>) -> RecordValue? {
        var value = self
        for name in path {
            guard let inner = value[name] else { return nil }
            value = inner
        }
        return value
    }

    /// Appends the index key the value's Swift type gives (the bytes `KeyEncoding` makes from its `Codable` form):
    /// the record stores each scalar in the kind its `encode` call named, which is all a key needs. Lists are
    /// refused: the record does not say whether one was a `Set`, whose key sorts its elements.
    func appendKey(to key: inout [UInt8]) throws {
        switch self {
        case .null: key.append(KeyEncoding.Tag.null.rawValue)
        case .bool(let value): key.append(value ? KeyEncoding.Tag.true.rawValue : KeyEncoding.Tag.false.rawValue)
        case .int(let value): KeyEncoding.appendSigned(value, to: &key)
        case .uint(let value): KeyEncoding.appendUnsigned(value, to: &key)
        case .float(let value): try KeyEncoding.appendDouble(Double(value), to: &key)
        case .double(let value): try KeyEncoding.appendDouble(value, to: &key)
        case .string(let value): KeyEncoding.appendString(value, to: &key)
        case .bytes(let value): KeyEncoding.appendEscaped(value, tag: .bytes, to: &key)
        case .date(let value): try KeyEncoding.appendDouble(value.timeIntervalSinceReferenceDate, tag: .date, to: &key)
        case .uuid(let value): KeyEncoding.appendUUID(value, to: &key)
        case .url(let value): KeyEncoding.appendEscaped(value.utf8, tag: .url, to: &key)
        case .decimal: throw KeyEncoding.Failure.unsupported("Decimal has no key")
        case .int128, .uint128: throw KeyEncoding.Failure.unsupported("Int128 and UInt128 have no key")
        case .keyed(let entries): for entry in entries { try entry.value.appendKey(to: &key) }
        case .unkeyed: throw KeyEncoding.Failure.unsupported("a list's key depends on its Swift type")
        }
    }
}
