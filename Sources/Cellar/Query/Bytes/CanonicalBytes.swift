import Foundation

/// Values compared for equality, as the record format stores them, where the stored form is canonical: equal
/// values have equal bytes and unequal values unequal bytes, as for integers of one width, `Bool`, `nil`, `UUID`
/// and ASCII text. (Not for `Double`, where `0.0 == -0.0`, or non-ASCII text, which Swift compares by canonical
/// equivalence.)
///
/// A class: a query's check holds one reference, and reading it per record costs no reference counting.
final class CanonicalBytes: Sendable {
    /// The stored forms (type byte and payload), one after the other: no array per value to retain per record.
    private let stored: [UInt8]
    /// Where each value lies in `stored`.
    private let values: [Range<Int>]
    /// Whether one of the values is `nil`; whether all are.
    private let hasNil: Bool
    private let allNil: Bool
    /// The one compared integer or `Bool`, the most common case, compared without a loop or `memcmp`.
    let scalar: StoredScalar?

    init?<V: Encodable>(_ values: [V]) {
        var stored: [UInt8] = []
        var ranges: [Range<Int>] = []
        for value in values {
            // A value alone is a record of one value: a format byte, the value and a checksum.
            guard let encoded = try? RecordEncoder(dictionary: .empty).encode(value) else { return nil }
            let bytes = RecordFormat.value(ofEncoded: encoded)
            guard let first = bytes.first, let type = RecordFormat.ValueType(byte: first),
                Self.isCanonical(type, bytes.dropFirst())
            else { return nil }
            ranges.append(stored.count..<stored.count + bytes.count)
            stored.append(contentsOf: bytes)
        }
        let null = RecordFormat.ValueType.null.rawValue
        self.stored = stored
        self.values = ranges
        hasNil = ranges.contains { stored[$0.lowerBound] == null }
        allNil = ranges.allSatisfy { stored[$0.lowerBound] == null }
        // (Not text: unequal bytes prove unequal text only when it is ASCII, which the general path checks.)
        if ranges.count == 1, stored.count <= 9, stored[0] != RecordFormat.ValueType.string.rawValue {
            var payload: UInt64 = 0
            for (position, byte) in stored.dropFirst().enumerated() { payload |= UInt64(byte) << (8 * position) }
            scalar = StoredScalar(type: stored[0], payload: payload, size: stored.count - 1)
        } else {
            scalar = nil
        }
    }

    /// The stored form of `value` alone, opened from an existential.
    static func of(_ value: any Encodable) -> CanonicalBytes? { make(value) }

    private static func make<V: Encodable>(_ value: V) -> CanonicalBytes? { CanonicalBytes([value]) }

    /// Whether the value at `offset` (whole inside `bytes`) equals one of the values; `nil` when its form cannot
    /// tell (another integer width, a non-ASCII text, another type), and the value must be read to compare.
    @inline(__always)
    func matches(_ bytes: UnsafeRawBufferPointer, at offset: Int, nullIsNil: Bool) -> Bool? {
        guard offset < bytes.count, let start = bytes.baseAddress else { return nil }
        let type = bytes[offset]
        if type == RecordFormat.ValueType.null.rawValue {
            // `nil` equals only `nil`. (In a property that is not optional, null is damage for the decoder to report.)
            return nullIsNil ? hasNil : nil
        }
        if let scalar, type == scalar.type { return scalar.matches(bytes, at: offset) }
        let available = bytes.count - offset
        var comparable = false
        let equal = stored.withUnsafeBytes { stored -> Bool in
            guard let compared = stored.baseAddress else { return false }
            for value in values where stored[value.lowerBound] == type {
                comparable = true
                if available >= value.count, memcmp(start + offset, compared + value.lowerBound, value.count) == 0 {
                    return true
                }
            }
            return false
        }
        if equal { return true }
        guard comparable else {
            // Stored in another form (another integer width): unequal for sure only when every compared value is
            // `nil`; otherwise the value must be read.
            return nullIsNil && allNil ? false : nil
        }
        // Unequal bytes prove unequal values, except for text that is not ASCII.
        if type == RecordFormat.ValueType.string.rawValue {
            var reader = ByteReader(bytes, offset: offset + 1)
            guard let length = try? reader.varint(), let text = try? reader.bytes(Int(clamping: length)),
                text.allSatisfy({ $0 < 0x80 })
            else { return nil }
        }
        return false
    }

    private static func isCanonical(_ type: RecordFormat.ValueType, _ payload: ArraySlice<UInt8>) -> Bool {
        switch type {
        case .null, .false, .true, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64, .uuid: true
        case .string: payload.allSatisfy { $0 < 0x80 }
        default: false
        }
    }
}

/// One compared integer or `Bool` in its stored form: its type byte, its payload as a little-endian number, and
/// the payload's size. A value compared with one of these is a type byte and a load.
struct StoredScalar: Sendable {
    let type: UInt8
    let payload: UInt64
    let size: Int

    /// Whether the value at `offset` is this one; `nil` when it is stored in another form, or does not fit.
    @inline(__always)
    func matches(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool? {
        guard offset < bytes.count, bytes[offset] == type, bytes.count - offset > size else { return nil }
        let at = offset + 1
        let stored: UInt64
        switch size {
        case 0: stored = 0
        case 1: stored = UInt64(bytes[at])
        case 2: stored = UInt64(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt16.self)))
        case 4: stored = UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        case 8: stored = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
        default: return nil
        }
        return stored == payload
    }
}
