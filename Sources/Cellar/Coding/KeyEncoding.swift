import Foundation

/// Order-preserving key bytes: for two values of one type, comparing their keys byte by byte (as LMDB does)
/// gives the same order as comparing the values. Range queries become cursor ranges.
///
/// Every component starts with a tag byte, so `nil` (the lowest tag) sorts first and a prefix can be bounded
/// with `0xFF`:
/// - signed integers of any width: tag, then the value as `Int64`, big-endian with the sign bit flipped;
///   unsigned integers: their own tag, then the value as `UInt64`, big-endian;
/// - `Float` and `Double`: tag, then the `Double` bits big-endian, with the sign bit flipped for positive
///   numbers and every bit flipped for negative ones; `-0.0` is stored as `+0.0`; NaN is refused, because it
///   has no place in an order; `Date` the same, as seconds since 2001, with a tag of its own;
/// - `String`: tag, the NFC-normalised UTF-8 (so "é" composed and decomposed, equal in Swift, are one key),
///   each `0x00` escaped as `0x00 0xFF`, then a `0x00` terminator; `Data` and `URL` alike;
/// - `UUID`: tag and its 16 bytes; `Bool`: one tag each for `false` and `true`;
/// - structures: their fields' components one after another; arrays: their elements, then `0x00`.
enum KeyEncoding {
    enum Tag: UInt8 {
        case end = 0x00
        case null = 0x05
        case `false` = 0x10
        case `true` = 0x11
        case signed = 0x20
        case unsigned = 0x21
        case double = 0x30
        case date = 0x31
        case string = 0x40
        case bytes = 0x41
        case url = 0x42
        case uuid = 0x50
    }

    /// The key of `nil`.
    static let nilComponent: [UInt8] = [Tag.null.rawValue]

    /// Why a value cannot become a key.
    enum Failure: Error {
        case notANumber
        case unsupported(String)
    }

    /// Appends the key bytes of `value` to `key`.
    static func append<T: Encodable>(_ value: T, to key: inout [UInt8]) throws {
        // The common primary-key types skip the Encoder entirely; these compares fold away when specialised.
        if T.self == Int64.self {
            appendSigned(unsafeBitCast(value, to: Int64.self), to: &key)
        } else if T.self == Int.self {
            appendSigned(Int64(unsafeBitCast(value, to: Int.self)), to: &key)
        } else if T.self == String.self {
            appendString(unsafeBitCast(value, to: String.self), to: &key)
        } else if T.self == UUID.self {
            appendUUID(unsafeBitCast(value, to: UUID.self), to: &key)
        } else {
            let encoder = KeyEncoder(key: key)
            key = []
            defer { key = encoder.key }
            try encoder.encodeComponent(value)
        }
    }

    /// The key bytes of `value`.
    static func key<T: Encodable>(_ value: T) throws -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(16)
        try append(value, to: &key)
        return key
    }

    /// `value` as an `Int64` when it is one of the integer types whose key is a signed one.
    @inline(__always)
    static func signedInteger<T>(_ value: T) -> Int64? {
        if T.self == Int64.self { return unsafeBitCast(value, to: Int64.self) }
        if T.self == Int.self { return Int64(unsafeBitCast(value, to: Int.self)) }
        return nil
    }

    /// The key of a signed integer, on the stack: the bytes `appendSigned` writes.
    struct SignedKey {
        private var storage: (UInt64, UInt64) = (0, 0)
        /// The key's length.
        static let count = 9

        init(_ value: Int64) {
            withUnsafeMutableBytes(of: &storage) { raw in
                raw[0] = Tag.signed.rawValue
                raw.storeBytes(of: (UInt64(bitPattern: value) ^ (1 << 63)).bigEndian, toByteOffset: 1, as: UInt64.self)
            }
        }

        /// The room `write(to:)` needs, aligned for `UInt64`: the key is a tag byte and eight bytes of number.
        static let room = MemoryLayout<(UInt64, UInt64)>.size

        /// Writes the key at `pointer` (with `room` bytes, aligned for `UInt64`), and returns it there.
        func write(to pointer: UnsafeMutableRawPointer) -> UnsafeRawBufferPointer {
            pointer.storeBytes(of: storage, as: (UInt64, UInt64).self)
            return UnsafeRawBufferPointer(start: pointer, count: Self.count)
        }

        /// The key as an array.
        var bytes: [UInt8] {
            withUnsafeBytes(of: storage) { [UInt8]($0[0..<Self.count]) }
        }
    }

    static func appendSigned(_ value: Int64, to key: inout [UInt8]) {
        key.append(Tag.signed.rawValue)
        appendBigEndian(UInt64(bitPattern: value) ^ (1 << 63), to: &key)
    }

    static func appendUnsigned(_ value: UInt64, to key: inout [UInt8]) {
        key.append(Tag.unsigned.rawValue)
        appendBigEndian(value, to: &key)
    }

    static func appendDouble(_ value: Double, tag: Tag = .double, to key: inout [UInt8]) throws {
        guard !value.isNaN else { throw Failure.notANumber }
        let bits = (value == 0 ? 0.0 : value).bitPattern
        key.append(tag.rawValue)
        appendBigEndian(bits & (1 << 63) == 0 ? bits ^ (1 << 63) : ~bits, to: &key)
    }

    static func appendString(_ value: String, to key: inout [UInt8]) {
        key.append(Tag.string.rawValue)
        var value = value
        // ASCII is NFC already, and is copied whole; anything else is normalised so canonically equal strings are
        // one key.
        let isASCII = value.withUTF8 { utf8 in
            guard ByteReader.isASCII(UnsafeRawBufferPointer(utf8)) else { return false }
            appendEscaped(contiguous: utf8, to: &key)
            return true
        }
        guard !isASCII else { return }
        value = value.precomposedStringWithCanonicalMapping
        value.withUTF8 { appendEscaped(contiguous: $0, to: &key) }
    }

    static func appendEscaped(_ bytes: some Sequence<UInt8>, tag: Tag, to key: inout [UInt8]) {
        key.append(tag.rawValue)
        appendEscaped(bytes, to: &key)
    }

    /// `appendEscaped(_:tag:to:)` for bytes in memory.
    static func appendEscaped(_ bytes: UnsafeRawBufferPointer, tag: Tag, to key: inout [UInt8]) {
        key.append(tag.rawValue)
        appendEscaped(contiguous: bytes.assumingMemoryBound(to: UInt8.self), to: &key)
    }

    /// The escaped bytes and the terminator, copied in one move when there is no zero byte to escape (nearly
    /// always), byte by byte otherwise.
    private static func appendEscaped(contiguous bytes: UnsafeBufferPointer<UInt8>, to key: inout [UInt8]) {
        guard let base = bytes.baseAddress, memchr(base, 0, bytes.count) == nil else {
            return appendEscaped(bytes, to: &key)
        }
        key.append(contentsOf: bytes)
        key.append(0)
    }

    private static func appendEscaped(_ bytes: some Sequence<UInt8>, to key: inout [UInt8]) {
        for byte in bytes {
            key.append(byte)
            if byte == 0 { key.append(0xFF) }
        }
        key.append(0)
    }

    static func appendUUID(_ value: UUID, to key: inout [UInt8]) {
        key.append(Tag.uuid.rawValue)
        withUnsafeBytes(of: value.uuid) { key.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    // Bytes are appended as typed `UInt8` buffers: `Array` copies those in one move, raw buffers byte by byte.
    private static func appendBigEndian(_ value: UInt64, to key: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { key.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }
}

// MARK: - The Encoder for any other key type

/// Encodes a `Codable` value's scalar parts as order-preserving key components.
final class KeyEncoder: Encoder {
    var key: [UInt8]
    /// Arrays opened while encoding the current value; each gets its terminator when the value is done.
    private var openArrays = 0

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(key: [UInt8]) { self.key = key }

    func encodeComponent<T: Encodable>(_ value: T) throws {
        if T.self == Date.self {
            try KeyEncoding.appendDouble(
                unsafeBitCast(value, to: Date.self).timeIntervalSinceReferenceDate, tag: .date, to: &key)
        } else if T.self == Data.self {
            KeyEncoding.appendEscaped(unsafeBitCast(value, to: Data.self), tag: .bytes, to: &key)
        } else if T.self == URL.self {
            KeyEncoding.appendEscaped(unsafeBitCast(value, to: URL.self).absoluteString.utf8, tag: .url, to: &key)
        } else if T.self == UUID.self {
            KeyEncoding.appendUUID(unsafeBitCast(value, to: UUID.self), to: &key)
        } else if T.self == Decimal.self {
            throw KeyEncoding.Failure.unsupported(
                "Decimal has no order-preserving key form; store and index its Double or an integer of cents")
        } else if let unordered = value as? any UnorderedKeyCollection {
            // A set's iteration order depends on its capacity and the process's hash seed: equal sets must give
            // one key, so the elements' keys are sorted.
            for element in try unordered.sortedElementKeys() { key.append(contentsOf: element) }
            key.append(KeyEncoding.Tag.end.rawValue)
        } else {
            let outer = openArrays
            openArrays = 0
            try value.encode(to: self)
            key.append(contentsOf: repeatElement(KeyEncoding.Tag.end.rawValue, count: openArrays))
            openArrays = outer
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        openArrays += 1
        return ValueContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { ValueContainer(encoder: self) }

    // MARK: Scalars, shared by the three container kinds

    func encodeNil() { key.append(KeyEncoding.Tag.null.rawValue) }
    func encode(_ value: Bool) { key.append(value ? KeyEncoding.Tag.true.rawValue : KeyEncoding.Tag.false.rawValue) }
    func encode(_ value: String) { KeyEncoding.appendString(value, to: &key) }
    func encode(_ value: Double) throws { try KeyEncoding.appendDouble(value, to: &key) }
    func encode(_ value: Float) throws { try KeyEncoding.appendDouble(Double(value), to: &key) }
    func encode<T: BinaryInteger & FixedWidthInteger>(integer value: T) {
        if T.isSigned {
            KeyEncoding.appendSigned(Int64(value), to: &key)
        } else {
            KeyEncoding.appendUnsigned(UInt64(value), to: &key)
        }
    }

    private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: KeyEncoder
        var codingPath: [any CodingKey] { [] }

        // Keys are not part of a key: only the values, in the order the type encodes them.
        mutating func encodeNil(forKey key: Key) { encoder.encodeNil() }
        mutating func encode(_ value: Bool, forKey key: Key) { encoder.encode(value) }
        mutating func encode(_ value: String, forKey key: Key) { encoder.encode(value) }
        mutating func encode(_ value: Double, forKey key: Key) throws { try encoder.encode(value) }
        mutating func encode(_ value: Float, forKey key: Key) throws { try encoder.encode(value) }
        mutating func encode(_ value: Int, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: Int8, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: Int16, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: Int32, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: Int64, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: UInt, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: UInt8, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: UInt16, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: UInt32, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode(_ value: UInt64, forKey key: Key) { encoder.encode(integer: value) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try encoder.encodeComponent(value) }
        // `encodeIfPresent` must write a component for `nil` too, or keys of different shapes would mix.
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
            if let value { try encoder.encodeComponent(value) } else { encoder.encodeNil() }
        }
        /// A nested keyed container is how synthesized `Codable` writes an enum with associated values: the case is
        /// the key (`{"failed": {"reason": "disk"}}`, `{"queued": {}}`). The key is a component here, so that cases
        /// with equal payloads, and cases with none, have keys of their own: such values order by case name, then
        /// payload.
        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            encoder.encode(key.stringValue)
            return encoder.container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            encoder.unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder { encoder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
    }

    /// Arrays and single values write the same components one after another, so one container serves both.
    private struct ValueContainer: UnkeyedEncodingContainer, SingleValueEncodingContainer {
        let encoder: KeyEncoder
        var codingPath: [any CodingKey] { [] }
        var count = 0

        mutating func encodeNil() {
            encoder.encodeNil()
            count += 1
        }
        mutating func encode(_ value: Bool) {
            encoder.encode(value)
            count += 1
        }
        mutating func encode(_ value: String) {
            encoder.encode(value)
            count += 1
        }
        mutating func encode(_ value: Double) throws {
            try encoder.encode(value)
            count += 1
        }
        mutating func encode(_ value: Float) throws {
            try encoder.encode(value)
            count += 1
        }
        mutating func encode(_ value: Int) { integer(value) }
        mutating func encode(_ value: Int8) { integer(value) }
        mutating func encode(_ value: Int16) { integer(value) }
        mutating func encode(_ value: Int32) { integer(value) }
        mutating func encode(_ value: Int64) { integer(value) }
        mutating func encode(_ value: UInt) { integer(value) }
        mutating func encode(_ value: UInt8) { integer(value) }
        mutating func encode(_ value: UInt16) { integer(value) }
        mutating func encode(_ value: UInt32) { integer(value) }
        mutating func encode(_ value: UInt64) { integer(value) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            try encoder.encodeComponent(value)
            count += 1
        }
        private mutating func integer<I: BinaryInteger & FixedWidthInteger>(_ value: I) {
            encoder.encode(integer: value)
            count += 1
        }
        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type
        ) -> KeyedEncodingContainer<NestedKey> {
            count += 1
            return encoder.container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            count += 1
            return encoder.unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder { encoder }
    }
}

/// A collection whose order is not part of its value (`Set`, `Dictionary`): its key is its elements' keys in
/// sorted order, so equal collections always have one key.
protocol UnorderedKeyCollection {
    func sortedElementKeys() throws -> [[UInt8]]
}

extension Set: UnorderedKeyCollection where Element: Encodable {
    func sortedElementKeys() throws -> [[UInt8]] {
        try map { try KeyEncoding.key($0) }.sorted { $0.lexicographicallyPrecedes($1) }
    }
}

extension Dictionary: UnorderedKeyCollection where Key: Encodable, Value: Encodable {
    /// Each entry is its key's key followed by its value's key, so the keys alone decide the order.
    func sortedElementKeys() throws -> [[UInt8]] {
        try map { try KeyEncoding.key($0.key) + KeyEncoding.key($0.value) }.sorted { $0.lexicographicallyPrecedes($1) }
    }
}

// MARK: - Reading keys back, for messages

extension KeyEncoding {
    /// A readable form of key bytes, such as `42`, `"Taro"` or `(3, "Taro")`, for error messages and tools; a long
    /// key is cut to its start and its length, so a damaged key never floods a message.
    static func describe(_ key: some Collection<UInt8>) -> String {
        let text = describeWhole(key)
        guard text.count > describedLength else { return text }
        return text.prefix(describedLength) + "… (\(key.count) bytes)"
    }

    /// How many characters of a described key a message quotes.
    static let describedLength = 64

    private static func describeWhole(_ key: some Collection<UInt8>) -> String {
        var bytes = ArraySlice(key)
        var parts: [String] = []
        while let tag = bytes.popFirst() {
            switch Tag(rawValue: tag) {
            case .null: parts.append("nil")
            case .false: parts.append("false")
            case .true: parts.append("true")
            case .signed:
                guard let bits = popBigEndian(&bytes) else { return hex(key) }
                parts.append(String(Int64(bitPattern: bits ^ (1 << 63))))
            case .unsigned:
                guard let bits = popBigEndian(&bytes) else { return hex(key) }
                parts.append(String(bits))
            case .double, .date:
                guard let bits = popBigEndian(&bytes) else { return hex(key) }
                let value = Double(bitPattern: bits & (1 << 63) != 0 ? bits ^ (1 << 63) : ~bits)
                parts.append(tag == Tag.date.rawValue ? StoredDate.description(value) : "\(value)")
            case .string, .bytes, .url:
                guard let raw = popEscaped(&bytes) else { return hex(key) }
                parts.append(
                    tag == Tag.bytes.rawValue ? hex(raw) : String(decoding: raw, as: UTF8.self).debugDescription)
            case .uuid:
                guard bytes.count >= 16 else { return hex(key) }
                let raw = Array(bytes.prefix(16))
                bytes = bytes.dropFirst(16)
                let uuid = raw.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
                parts.append(UUID(uuid: uuid).uuidString)
            case .end: parts.append("]")
            case nil: return hex(key)
            }
        }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: ", ") + ")"
    }

    fileprivate static func popBigEndian(_ bytes: inout ArraySlice<UInt8>) -> UInt64? {
        guard bytes.count >= 8 else { return nil }
        let value = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        bytes = bytes.dropFirst(8)
        return value
    }

    fileprivate static func popEscaped(_ bytes: inout ArraySlice<UInt8>) -> [UInt8]? {
        var raw: [UInt8] = []
        while let byte = bytes.popFirst() {
            guard byte == 0 else {
                raw.append(byte)
                continue
            }
            guard bytes.first == 0xFF else { return raw }
            bytes.removeFirst()
            raw.append(0)
        }
        return nil
    }

    private static func hex(_ bytes: some Collection<UInt8>) -> String {
        "0x" + bytes.prefix(describedLength / 2).map { String(format: "%02x", $0) }.joined()
            + (bytes.count > describedLength / 2 ? "…" : "")
    }
}

extension KeyEncoding {
    /// The text sync names a record by, from its primary key: a string id as it is, a UUID as its `uuidString`, an
    /// integer as its digits. `nil` for a key of any other shape (sync refuses those models when it starts).
    static func syncID(_ key: some Collection<UInt8>) -> String? {
        var bytes = ArraySlice(key)
        guard let tag = bytes.popFirst() else { return nil }
        let text: String
        switch Tag(rawValue: tag) {
        case .signed:
            guard let bits = popBigEndian(&bytes) else { return nil }
            text = String(Int64(bitPattern: bits ^ (1 << 63)))
        case .unsigned:
            guard let bits = popBigEndian(&bytes) else { return nil }
            text = String(bits)
        case .string:
            guard let raw = popEscaped(&bytes), let string = String(validating: raw, as: UTF8.self) else { return nil }
            text = string
        case .uuid:
            guard bytes.count >= 16 else { return nil }
            let uuid = Array(bytes.prefix(16)).withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
            bytes = bytes.dropFirst(16)
            text = UUID(uuid: uuid).uuidString
        default:
            return nil
        }
        return bytes.isEmpty ? text : nil
    }
}

/// Dates read from a store, as messages and `cellar` show them. Foundation's formatting is asked only about dates
/// between the years 1 and 9999: a damaged key or record can hold any 8 bytes, and Foundation traps on some of them
/// (a date 10^300 seconds away).
package enum StoredDate {
    /// Seconds since 2001 of the first moment of the year 1 and the last of the year 9999.
    static let describable: ClosedRange<Double> = -63_113_904_000...252_423_993_599

    /// `date`'s `description` (`2001-01-01 00:00:00 +0000`), or its seconds since 2001 when no calendar names it.
    static func description(_ seconds: Double) -> String {
        describable.contains(seconds)
            ? "\(Date(timeIntervalSinceReferenceDate: seconds))" : "\(seconds) seconds from 2001-01-01"
    }

    /// `date` in ISO 8601 with fractional seconds, or its seconds since 2001 when no calendar names it.
    package static func iso8601(_ date: Date) -> String {
        describable.contains(date.timeIntervalSinceReferenceDate)
            ? date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            : "\(date.timeIntervalSinceReferenceDate) seconds from 2001-01-01"
    }
}
