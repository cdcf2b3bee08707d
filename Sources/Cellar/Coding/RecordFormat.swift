import Foundation
import LMDB

/// The binary record format: self-describing, so any record can be read without its Swift type.
///
/// A record is a format byte (`RecordFormat.version`), one value, and a 4-byte little-endian CRC-32C of the
/// bytes before it (`RecordChecksum.swift`; records of format 1, written before checksums, end with the value).
/// A value is a type byte and a payload:
/// - numbers: fixed-width little-endian (`Int8`…`UInt64`, `Int128`, `UInt128`, `Float`, `Double`); `Bool` as two
///   type bytes;
/// - `String`, `Data`, `URL`, `Decimal` (as its exact decimal text): a varint length and the bytes;
/// - `Date`: seconds since 2001 as a `Double`; `UUID`: 16 bytes;
/// - keyed containers (structs, enums with associated values, dictionaries): a 4-byte payload length,
///   a 4-byte entry count, then entries `key value`;
/// - unkeyed containers (arrays, sets): a 4-byte payload length, a 4-byte count, then values.
///
/// A key is a varint: even values are `tag << 1`, a small integer naming a key string in the model's key
/// dictionary (kept in `_meta`, append-only); `len << 2 | 1` is an inline UTF-8 key of `len` bytes that follows
/// (dictionary keys, which are data, not schema); `3` is an integer key whose zig-zag varint follows.
/// The lengths let a reader skip values it does not know in constant time.
@usableFromInline
enum RecordFormat {
    /// The format every record is written in: the value followed by its checksum.
    static let version: UInt8 = 2
    /// The format of records written before checksums: the value alone. Read, never written.
    static let uncheckedVersion: UInt8 = 1
    /// The deepest nesting a record may have; deeper input is refused rather than risking the stack.
    static let maximumDepth = 200

    @usableFromInline
    enum ValueType: UInt8, Sendable {
        case null = 0x00
        case `false` = 0x01
        case `true` = 0x02
        case int8 = 0x03
        case int16 = 0x04
        case int32 = 0x05
        case int64 = 0x06
        case uint8 = 0x07
        case uint16 = 0x08
        case uint32 = 0x09
        case uint64 = 0x0A
        case float = 0x0B
        case double = 0x0C
        case string = 0x0D
        case bytes = 0x0E
        case date = 0x0F
        case uuid = 0x10
        case url = 0x11
        case decimal = 0x12
        case keyed = 0x13
        case unkeyed = 0x14
        case int128 = 0x15
        case uint128 = 0x16

        /// The type a record's type byte names; `nil` for an unknown byte. What `init(rawValue:)` does, in the few
        /// instructions every value read can afford (a test checks the two agree on every byte).
        @inline(__always)
        init?(byte: UInt8) {
            guard byte <= Self.uint128.rawValue else { return nil }
            // The cases are declared in the order of their raw values, from 0: a case's number is its raw value.
            self = unsafeBitCast(byte, to: Self.self)
        }
    }

    /// The type byte of an integer stored in its own type's width (a value no type byte has for other widths).
    @inlinable @inline(__always)
    static func storedType<T: FixedWidthInteger>(of _: T.Type) -> UInt8 {
        switch (T.isSigned, T.bitWidth) {
        case (true, 8): ValueType.int8.rawValue
        case (true, 16): ValueType.int16.rawValue
        case (true, 32): ValueType.int32.rawValue
        case (true, 64): ValueType.int64.rawValue
        case (false, 8): ValueType.uint8.rawValue
        case (false, 16): ValueType.uint16.rawValue
        case (false, 32): ValueType.uint32.rawValue
        case (false, 64): ValueType.uint64.rawValue
        case (true, 128): ValueType.int128.rawValue
        case (false, 128): ValueType.uint128.rawValue
        default: 0xFF
        }
    }

    /// The size of the value at `offset`, its type byte included, when it is whole before `end` (which is at most
    /// `bytes.count`); `nil` when it runs past `end` or its type is unknown. Every reader skips values through it,
    /// so it switches on the type byte itself: no conversion to `ValueType` on the way.
    @inline(__always)
    static func valueSize(in bytes: UnsafeRawBufferPointer, at offset: Int, end: Int) -> Int? {
        guard offset >= 0, offset < end, end <= bytes.count else { return nil }
        return valueSize(checkedIn: bytes, at: offset, end: end)
    }

    /// `valueSize(in:at:end:)` for a caller that has made sure that `0 <= offset < end <= bytes.count`, as a loop
    /// over a container's entries does once for all of them.
    @inline(__always)
    static func valueSize(checkedIn bytes: UnsafeRawBufferPointer, at offset: Int, end: Int) -> Int? {
        let size: Int
        switch bytes[offset] {
        case 0x00, 0x01, 0x02: size = 1  // null, false, true
        case 0x03, 0x07: size = 2  // int8, uint8
        case 0x04, 0x08: size = 3  // int16, uint16
        case 0x05, 0x09, 0x0B: size = 5  // int32, uint32, float
        case 0x06, 0x0A, 0x0C, 0x0F: size = 9  // int64, uint64, double, date
        case 0x10, 0x15, 0x16: size = 17  // uuid, int128, uint128
        case 0x0D, 0x0E, 0x11, 0x12:  // string, bytes, url, decimal: a varint length, then the bytes
            // Most lengths are below 128: one byte.
            if end - offset > 1, bytes[offset + 1] < 0x80 {
                size = 2 + Int(bytes[offset + 1])
                break
            }
            var reader = ByteReader(bytes, offset: offset + 1, end: end)
            guard let length = try? reader.varint(), length <= UInt64(end - reader.offset) else { return nil }
            size = reader.offset - offset + Int(length)
        case 0x13, 0x14:  // keyed, unkeyed: payload length and count, then the payload
            guard end - offset > containerHeaderSize else { return nil }
            let length = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self))
            size = 1 + containerHeaderSize + Int(length)
        default: return nil
        }
        return size <= end - offset ? size : nil
    }

    /// Size of a container header: payload length and entry count, 4 bytes each.
    static let containerHeaderSize = 8
    /// The header a container starts with until its length and count are known.
    static let emptyContainerHeader = [UInt8](repeating: 0, count: containerHeaderSize)

    /// The coding key type `Dictionary` encodes with. Its containers hold data keys, which are written
    /// inline instead of entering the model's key dictionary. Found once by watching a dictionary encode
    /// itself, then recognised by comparing metatypes.
    static let dictionaryKeyType: Any.Type = {
        let probe = KeyTypeProbe()
        try? [String: Int]().encode(to: probe)
        return probe.keyType ?? Never.self
    }()
}

/// An encoder that only records which key type a value asks its keyed container for.
private final class KeyTypeProbe: Encoder {
    var keyType: Any.Type?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        keyType = Key.self
        return KeyedEncodingContainer(Keyed<Key>())
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { Unkeyed() }
    func singleValueContainer() -> any SingleValueEncodingContainer { Unkeyed() }

    private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        var codingPath: [any CodingKey] { [] }
        mutating func encodeNil(forKey key: Key) {}
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) {}
        mutating func nestedContainer<N: CodingKey>(keyedBy: N.Type, forKey: Key) -> KeyedEncodingContainer<N> {
            KeyedEncodingContainer(Keyed<N>())
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { Unkeyed() }
        mutating func superEncoder() -> any Encoder { KeyTypeProbe() }
        mutating func superEncoder(forKey key: Key) -> any Encoder { KeyTypeProbe() }
    }

    private struct Unkeyed: UnkeyedEncodingContainer, SingleValueEncodingContainer {
        var codingPath: [any CodingKey] { [] }
        var count: Int { 0 }
        mutating func encodeNil() {}
        mutating func encode<T: Encodable>(_ value: T) {}
        mutating func nestedContainer<N: CodingKey>(keyedBy: N.Type) -> KeyedEncodingContainer<N> {
            KeyedEncodingContainer(Keyed<N>())
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { Unkeyed() }
        mutating func superEncoder() -> any Encoder { KeyTypeProbe() }
    }
}

/// A model's key dictionary: each key string its records use, numbered in the order first seen.
/// Immutable; a writer that meets new keys builds the next one.
final class KeyDictionary: Sendable {
    let names: [String]
    let tags: [String: UInt32]
    /// For generated record code: per type, which of its fields each tag names. Made once per dictionary.
    private let fieldTables = Lock<[ObjectIdentifier: FieldTable]>([:])

    init(names: [String]) {
        self.names = names
        var tags: [String: UInt32] = [:]
        for (tag, name) in names.enumerated() { tags[name] = UInt32(tag) }
        self.tags = tags
    }

    static let empty = KeyDictionary(names: [])

    /// Which field of the type whose keys are `keys` each tag names.
    func fieldTable(for keys: RecordKeys) -> FieldTable {
        fieldTables.withLock { tables in
            if let table = tables[ObjectIdentifier(keys)], table.keys === keys { return table }
            let table = FieldTable(keys: keys, dictionary: self)
            tables[ObjectIdentifier(keys)] = table
            return table
        }
    }

    /// The dictionary with `added` appended.
    func appending(_ added: [String]) -> KeyDictionary {
        added.isEmpty ? self : KeyDictionary(names: names + added)
    }

    /// The stored form: a varint count, then each name as a varint length and UTF-8.
    var serialized: [UInt8] {
        var bytes: [UInt8] = []
        Varint.append(UInt64(names.count), to: &bytes)
        for name in names {
            Varint.append(UInt64(name.utf8.count), to: &bytes)
            bytes.append(contentsOf: name.utf8)
        }
        return bytes
    }

    /// Reads the stored form; `nil` when the bytes are damaged.
    static func deserialize(_ bytes: UnsafeRawBufferPointer) -> KeyDictionary? {
        var reader = ByteReader(bytes)
        guard let count = try? reader.varint(), count <= UInt64(bytes.count) else { return nil }
        var names: [String] = []
        names.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let length = try? reader.varint(), let raw = try? reader.bytes(Int(clamping: length)),
                let name = String(validating: raw, as: UTF8.self)
            else { return nil }
            names.append(name)
        }
        return KeyDictionary(names: names)
    }

    /// The count at the front of a stored dictionary, read without parsing the names.
    static func storedCount(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var reader = ByteReader(bytes)
        return (try? reader.varint()).map { Int(clamping: $0) }
    }
}

/// LEB128 varints, for lengths and keys.
enum Varint {
    @inline(__always)
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}

/// Bounds-checked reading of untrusted bytes: every read that would pass the end throws instead.
struct ByteReader {
    let base: UnsafeRawBufferPointer
    var offset: Int
    var end: Int

    struct OutOfBounds: Error {}

    /// The text stored as `bytes`; `nil` when they are not UTF-8. ASCII, the common case, is copied without the
    /// validation, which costs more than the rest of the read. (`String(validating:)` is generic over the encoding
    /// and, unspecialized, looks up metadata on every call; `String(decoding:)` costs twice this copy.)
    static func text(_ bytes: UnsafeRawBufferPointer) -> String? {
        isASCII(bytes) ? asciiText(bytes) : String(validating: bytes, as: UTF8.self)
    }

    /// The text of bytes known to be ASCII.
    @inline(__always)
    static func asciiText(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { buffer in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: bytes)
            return bytes.count
        }
    }

    /// Whether every byte is below 0x80, eight at a time.
    @inline(__always)
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var high: UInt64 = 0
        while bytes.count - index >= 8 {
            high |= bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    init(_ base: UnsafeRawBufferPointer, offset: Int = 0, end: Int? = nil) {
        self.base = base
        self.offset = offset
        // Never past the bytes themselves, whatever a caller's bounds say.
        self.end = Swift.min(end ?? base.count, base.count)
    }

    var isAtEnd: Bool { offset >= end }

    @inline(__always)
    mutating func byte() throws(OutOfBounds) -> UInt8 {
        guard offset < end else { throw OutOfBounds() }
        defer { offset += 1 }
        return base[offset]
    }

    @inline(__always)
    mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws(OutOfBounds) -> T {
        let size = MemoryLayout<T>.size
        guard end - offset >= size else { throw OutOfBounds() }
        defer { offset += size }
        return T(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    @inline(__always)
    mutating func varint() throws(OutOfBounds) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try self.byte()
            guard shift < 64 else { throw OutOfBounds() }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    @inline(__always)
    mutating func bytes(_ count: Int) throws(OutOfBounds) -> UnsafeRawBufferPointer {
        guard count >= 0, end - offset >= count else { throw OutOfBounds() }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: base[offset..<offset + count])
    }

    mutating func skip(_ count: Int) throws(OutOfBounds) {
        guard count >= 0, end - offset >= count else { throw OutOfBounds() }
        offset += count
    }

    /// Skips one whole value, whatever its type.
    @inline(__always)
    mutating func skipValue() throws(OutOfBounds) {
        guard let size = RecordFormat.valueSize(in: base, at: offset, end: end) else { throw OutOfBounds() }
        offset += size
    }
}
