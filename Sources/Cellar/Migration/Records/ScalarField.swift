/// The values a migration step reads and writes most (text, integers, numbers, booleans), read and written
/// directly in the record format, without a decoder or an encoder: the same bytes `RecordEncoder` writes and the
/// same values `RecordDecoder` reads for them. Anything else, or a stored value of another kind, goes through the
/// coders, which convert it or say why they cannot.
enum ScalarField {
    /// The value at `offset` as `T`, when `T` is `String`, `Int`, `Int64`, `Double` or `Bool` and the value is
    /// stored as one; `nil` otherwise, for the decoder to read.
    static func value<T>(_: T.Type, in bytes: UnsafeRawBufferPointer, at offset: Int) -> T? {
        guard offset >= 0, offset < bytes.count else { return nil }
        let type = bytes[offset]
        var reader = ByteReader(bytes, offset: offset + 1)
        if T.self == String.self, type == RecordFormat.ValueType.string.rawValue {
            guard let length = try? reader.varint(), let text = try? reader.bytes(Int(clamping: length)),
                let string = ByteReader.text(text)
            else { return nil }
            return unsafeBitCast(string, to: T.self)
        }
        if T.self == Int64.self || T.self == Int.self, type == RecordFormat.ValueType.int64.rawValue {
            guard let number = try? reader.fixed(Int64.self) else { return nil }
            if T.self == Int64.self { return unsafeBitCast(number, to: T.self) }
            return Int(exactly: number).map { unsafeBitCast($0, to: T.self) }
        }
        if T.self == Double.self, type == RecordFormat.ValueType.double.rawValue {
            guard let bits = try? reader.fixed(UInt64.self) else { return nil }
            return unsafeBitCast(Double(bitPattern: bits), to: T.self)
        }
        if T.self == Bool.self,
            type == RecordFormat.ValueType.true.rawValue || type == RecordFormat.ValueType.false.rawValue
        {
            return unsafeBitCast(type == RecordFormat.ValueType.true.rawValue, to: T.self)
        }
        return nil
    }

    /// `value` in the record format, when it is a `String`, `Int`, `Int64`, `Double` or `Bool`; `nil` otherwise,
    /// for the encoder to write.
    static func encoded<T>(_ value: T) -> [UInt8]? {
        var bytes: [UInt8] = []
        func fixed(_ type: RecordFormat.ValueType, _ bits: UInt64) -> [UInt8] {
            bytes.reserveCapacity(9)
            bytes.append(type.rawValue)
            withUnsafeBytes(of: bits.littleEndian) { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
            return bytes
        }
        if T.self == String.self {
            var text = unsafeBitCast(value, to: String.self)
            return text.withUTF8 { utf8 in
                bytes.reserveCapacity(utf8.count + 6)
                bytes.append(RecordFormat.ValueType.string.rawValue)
                Varint.append(UInt64(utf8.count), to: &bytes)
                bytes.append(contentsOf: utf8)
                return bytes
            }
        }
        if T.self == Int64.self { return fixed(.int64, UInt64(bitPattern: unsafeBitCast(value, to: Int64.self))) }
        if T.self == Int.self { return fixed(.int64, UInt64(bitPattern: Int64(unsafeBitCast(value, to: Int.self)))) }
        if T.self == Double.self { return fixed(.double, unsafeBitCast(value, to: Double.self).bitPattern) }
        if T.self == Bool.self {
            let type: RecordFormat.ValueType = unsafeBitCast(value, to: Bool.self) ? .true : .false
            return [type.rawValue]
        }
        return nil
    }
}
