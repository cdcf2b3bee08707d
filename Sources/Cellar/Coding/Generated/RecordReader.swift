import Foundation

/// Reads a record for generated code: one value at a time from the record's bytes, every read bounds-checked.
///
/// It reads what `RecordDecoder` reads and accepts what it accepts (an integer stored in any width that fits, a
/// `Float` where a `Double` is asked for), so the two answer alike on any record, damaged ones included. Values
/// of types without generated code go through `RecordDecoder` at the reader's position.
public struct RecordReader {
    // A reader lives only inside the decoding call that made it, whose caller holds both: unmanaged, they cost no
    // reference counting per record (an `unowned(unsafe)` reference is still retained to call a method on it).
    private let decoderReference: Unmanaged<RecordDecoder>
    private let dictionaryReference: Unmanaged<KeyDictionary>
    var decoder: RecordDecoder { decoderReference.takeUnretainedValue() }
    var dictionary: KeyDictionary { dictionaryReference.takeUnretainedValue() }
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline var offset: Int
    /// Containers entered, to refuse a damaged record nested deeper than readers go instead of overflowing.
    var depth = 0

    /// A reader of `bytes` from `offset`. The caller keeps `decoder` and `dictionary` alive while it reads.
    init(decoder: RecordDecoder, dictionary: KeyDictionary, bytes: UnsafeRawBufferPointer, offset: Int) {
        decoderReference = .passUnretained(decoder)
        dictionaryReference = .passUnretained(dictionary)
        self.bytes = bytes
        self.offset = offset
    }

    // MARK: Keyed containers

    /// Enters the keyed container at the reader's position.
    public mutating func beginFields(of keys: RecordKeys) throws -> RecordFieldCursor {
        let table = decoderReference._withUnsafeGuaranteedRef { $0.fieldTable(for: keys, in: dictionaryReference) }
        // A whole keyed container, as every sound record holds: its header read in place.
        let entries = offset + 1 + RecordFormat.containerHeaderSize
        if entries <= bytes.count, bytes[offset] == RecordFormat.ValueType.keyed.rawValue,
            depth + 1 < RecordFormat.maximumDepth
        {
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self)))
            let count = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 5, as: UInt32.self)))
            if length <= bytes.count - entries, count <= length {
                offset = entries
                depth += 1
                return RecordFieldCursor(table: table, start: entries, end: entries + length)
            }
        }
        let type = try valueType()
        let start = offset + 1 + RecordFormat.containerHeaderSize
        let end: Int
        if type == .null {
            // A value that wrote nothing reads back as an empty container, as `RecordDecoder` reads it.
            end = offset + 1
            offset = end
        } else {
            guard type == .keyed else { throw mismatch(expected: .keyed, found: type) }
            let length = Int(try fixed(UInt32.self, at: offset + 1))
            let count = Int(try fixed(UInt32.self, at: offset + 5))
            guard length <= bytes.count - start, count <= length else { throw truncated() }
            end = start + length
            offset = start
        }
        depth += 1
        guard depth < RecordFormat.maximumDepth else { throw corrupted("the record is nested too deeply") }
        return RecordFieldCursor(table: table, start: offset, end: end)
    }

    /// Leaves the keyed container `beginFields` entered.
    public mutating func endFields(_ fields: RecordFieldCursor) {
        offset = fields.end
        depth -= 1
    }

    /// Reads a field whose type has generated or built-in record code; the error `Codable` gives when the record
    /// has none. Inlinable, as every helper generated code calls, so that it is specialized where the type is
    /// compiled: unspecialized, each call would look up generic metadata.
    @inlinable @inline(__always)
    public mutating func value<T: RecordStorable>(
        _ type: T.Type = T.self, field: Int, of fields: inout RecordFieldCursor
    )
        throws -> T
    {
        try storedValue(T.self, field: field, of: &fields)
    }

    /// Reads an optional field; `nil` when the record has none, as `Codable`'s `decodeIfPresent` reads it.
    @inlinable @inline(__always)
    public mutating func value<W: RecordStorable>(
        _ type: W?.Type = W?.self, field: Int, of fields: inout RecordFieldCursor
    )
        throws -> W?
    {
        try storedValue(W?.self, field: field, of: &fields)
    }

    @inlinable @inline(__always)
    mutating func storedValue<T: RecordStorable>(_ type: T.Type, field: Int, of fields: inout RecordFieldCursor)
        throws -> T
    {
        guard try seek(field, in: &fields) else { throw fields.missing(field) }
        do {
            let value = try T.read(from: &self)
            fields.next = offset
            return value
        } catch {
            throw fields.annotate(error, field: field)
        }
    }

    @inlinable @inline(__always)
    mutating func storedValue<W: RecordStorable>(_ type: W?.Type, field: Int, of fields: inout RecordFieldCursor)
        throws -> W?
    {
        guard try seek(field, in: &fields) else { return nil }
        do {
            let value = try W?.read(from: &self)
            fields.next = offset
            return value
        } catch {
            throw fields.annotate(error, field: field)
        }
    }

    // MARK: Fields read in place
    // The most common field types have overloads that generated code picks over the generic reads: when the field
    // is the entry expected next (records are written in field order) and stored in its type's own form, its value
    // is read where it lies, with no call; anything else takes the generic read, which accepts every form the
    // decoder accepts and reports every failure.

    /// Reads an `Int` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Int.Type = Int.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Int
    {
        try self.field(Int.self, field, of: &fields) { $0.integerInPlace(Int.self, field: $1, of: &$2) }
    }

    /// Reads an optional `Int` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Int?.Type = Int?.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Int?
    {
        try optionalField(Int.self, field, of: &fields) { $0.integerInPlace(Int.self, field: $1, of: &$2) }
    }

    /// Reads an `Int64` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Int64.Type = Int64.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Int64
    {
        try self.field(Int64.self, field, of: &fields) { $0.integerInPlace(Int64.self, field: $1, of: &$2) }
    }

    /// Reads an optional `Int64` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Int64?.Type = Int64?.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Int64?
    {
        try optionalField(Int64.self, field, of: &fields) { $0.integerInPlace(Int64.self, field: $1, of: &$2) }
    }

    /// Reads an `Int32` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Int32.Type = Int32.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Int32
    {
        try self.field(Int32.self, field, of: &fields) { $0.integerInPlace(Int32.self, field: $1, of: &$2) }
    }

    /// Reads an optional `Int32` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Int32?.Type = Int32?.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Int32?
    {
        try optionalField(Int32.self, field, of: &fields) { $0.integerInPlace(Int32.self, field: $1, of: &$2) }
    }

    /// Reads a `UInt64` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: UInt64.Type = UInt64.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> UInt64
    {
        try self.field(UInt64.self, field, of: &fields) { $0.integerInPlace(UInt64.self, field: $1, of: &$2) }
    }

    /// Reads an optional `UInt64` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: UInt64?.Type = UInt64?.self, field: Int, of fields: inout RecordFieldCursor)
        throws -> UInt64?
    {
        try optionalField(UInt64.self, field, of: &fields) { $0.integerInPlace(UInt64.self, field: $1, of: &$2) }
    }

    /// Reads a `Double` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Double.Type = Double.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Double
    {
        try self.field(Double.self, field, of: &fields) { $0.doubleInPlace($1, of: &$2) }
    }

    /// Reads an optional `Double` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Double?.Type = Double?.self, field: Int, of fields: inout RecordFieldCursor)
        throws -> Double?
    {
        try optionalField(Double.self, field, of: &fields) { $0.doubleInPlace($1, of: &$2) }
    }

    /// Reads a `Bool` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Bool.Type = Bool.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Bool
    {
        try self.field(Bool.self, field, of: &fields) { $0.boolInPlace($1, of: &$2) }
    }

    /// Reads an optional `Bool` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: Bool?.Type = Bool?.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> Bool?
    {
        try optionalField(Bool.self, field, of: &fields) { $0.boolInPlace($1, of: &$2) }
    }

    /// Reads a `String` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: String.Type = String.self, field: Int, of fields: inout RecordFieldCursor) throws
        -> String
    {
        try self.field(String.self, field, of: &fields) { $0.textInPlace($1, of: &$2) }
    }

    /// Reads an optional `String` field.
    @inlinable @inline(__always)
    public mutating func value(_ type: String?.Type = String?.self, field: Int, of fields: inout RecordFieldCursor)
        throws -> String?
    {
        try optionalField(String.self, field, of: &fields) { $0.textInPlace($1, of: &$2) }
    }

    /// `inPlace`'s value of `field`, or the generic read's when it has none.
    @inlinable @inline(__always)
    mutating func field<T: RecordStorable>(
        _ type: T.Type, _ field: Int, of fields: inout RecordFieldCursor,
        inPlace: (inout RecordReader, Int, inout RecordFieldCursor) -> T?
    ) throws -> T {
        if let value = inPlace(&self, field, &fields) { return value }
        return try outlinedValue(T.self, field: field, of: &fields)
    }

    /// `nil` for a stored null, else `inPlace`'s value of `field`, or the generic read's when it has none.
    @inlinable @inline(__always)
    mutating func optionalField<T: RecordStorable>(
        _ type: T.Type, _ field: Int, of fields: inout RecordFieldCursor,
        inPlace: (inout RecordReader, Int, inout RecordFieldCursor) -> T?
    ) throws -> T? {
        if expectedEntry(field, type: .null, size: 0, of: &fields) != nil { return nil }
        if let value = inPlace(&self, field, &fields) { return value }
        return try outlinedValue(T?.self, field: field, of: &fields)
    }

    /// An integer stored in its type's own width, where the entry expected next lies.
    @inlinable @inline(__always)
    mutating func integerInPlace<T: FixedWidthInteger>(
        _ type: T.Type, field: Int, of fields: inout RecordFieldCursor
    ) -> T? {
        let size = MemoryLayout<T>.size
        guard let payload = expectedEntry(field, stored: RecordFormat.storedType(of: T.self), size: size, of: &fields)
        else { return nil }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: payload, as: T.self))
    }

    /// A `Double` where the entry expected next lies.
    @inlinable @inline(__always)
    mutating func doubleInPlace(_ field: Int, of fields: inout RecordFieldCursor) -> Double? {
        guard let payload = expectedEntry(field, type: .double, size: 8, of: &fields) else { return nil }
        return Double(bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: payload, as: UInt64.self)))
    }

    /// A `Bool` where the entry expected next lies.
    @inlinable @inline(__always)
    mutating func boolInPlace(_ field: Int, of fields: inout RecordFieldCursor) -> Bool? {
        if expectedEntry(field, type: .true, size: 0, of: &fields) != nil { return true }
        if expectedEntry(field, type: .false, size: 0, of: &fields) != nil { return false }
        return nil
    }

    /// The text of `field` when it is the entry expected next and ASCII shorter than 128 bytes.
    @inlinable @inline(__always)
    mutating func textInPlace(_ field: Int, of fields: inout RecordFieldCursor) -> String? {
        let at = fields.next
        guard fields.end - at >= 3, UInt16(bytes[at]) == fields.keyByte(field),
            bytes[at + 1] == RecordFormat.ValueType.string.rawValue, bytes[at + 2] < 0x80
        else { return nil }
        let start = at + 3
        let end = start + Int(bytes[at + 2])
        guard end <= fields.end, let text = Self.asciiText(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) else {
            return nil
        }
        (offset, fields.next) = (end, end)
        return text
    }

    /// The generic read, kept out of line so that the in-place read around it stays small enough to inline.
    @inlinable @inline(never)
    mutating func outlinedValue<T: RecordStorable>(_ type: T.Type, field: Int, of fields: inout RecordFieldCursor)
        throws -> T
    {
        try storedValue(T.self, field: field, of: &fields)
    }

    /// The generic read of an optional, kept out of line.
    @inlinable @inline(never)
    mutating func outlinedValue<W: RecordStorable>(_ type: W?.Type, field: Int, of fields: inout RecordFieldCursor)
        throws -> W?
    {
        try storedValue(W?.self, field: field, of: &fields)
    }

    /// Where the payload of `field` starts when it is the entry expected next, whole, with a one-byte key and
    /// type byte `type`; the reader and the cursor then stand past it. `nil` otherwise, with nothing moved.
    @inlinable @inline(__always)
    mutating func expectedEntry(
        _ field: Int, type: RecordFormat.ValueType, size: Int, of fields: inout RecordFieldCursor
    ) -> Int? {
        expectedEntry(field, stored: type.rawValue, size: size, of: &fields)
    }

    @inlinable @inline(__always)
    mutating func expectedEntry(_ field: Int, stored type: UInt8, size: Int, of fields: inout RecordFieldCursor)
        -> Int?
    {
        // (`beginFields` made sure that the container ends inside the bytes: `fields.end <= bytes.count`.)
        let at = fields.next
        guard fields.end - at >= 2 + size, UInt16(bytes[at]) == fields.keyByte(field), bytes[at + 1] == type else {
            return nil
        }
        (offset, fields.next) = (at + 2 + size, at + 2 + size)
        return at + 2
    }

    /// The text of ASCII bytes; `nil` when some byte is not ASCII.
    @usableFromInline
    static func asciiText(_ bytes: UnsafeRawBufferPointer) -> String? {
        ByteReader.isASCII(bytes) ? ByteReader.asciiText(bytes) : nil
    }

    /// Reads a field of any other `Decodable` type through `RecordDecoder`.
    public mutating func value<T: Decodable>(_ type: T.Type = T.self, field: Int, of fields: inout RecordFieldCursor)
        throws -> T
    {
        guard try seek(field, in: &fields) else { throw fields.missing(field) }
        do {
            let value = try self.value(T.self)
            fields.next = offset
            return value
        } catch {
            throw fields.annotate(error, field: field)
        }
    }

    /// Reads an optional field of any other `Decodable` type; `nil` when the record has none.
    public mutating func value<W: Decodable>(_ type: W?.Type = W?.self, field: Int, of fields: inout RecordFieldCursor)
        throws -> W?
    {
        guard try seek(field, in: &fields) else { return nil }
        do {
            let value = try self.value(W?.self)
            fields.next = offset
            return value
        } catch {
            throw fields.annotate(error, field: field)
        }
    }

    /// Moves the reader to `field`'s value and says whether the record has one. The entry after the last one
    /// read is tried first: records are written in field order, so that is almost always the one. Entries of
    /// names the type does not have (written by another version of it) are passed over.
    @inlinable @inline(__always)
    mutating func seek(_ field: Int, in fields: inout RecordFieldCursor) throws -> Bool {
        // The expected entry, when its one-byte key names the field: a comparison, where a search would read keys
        // and look tags up.
        let expected = fields.next
        if expected < fields.end,
            UInt16(bytes[expected]) == fields.keyByte(field)
        {
            offset = expected + 1
            return true
        }
        return try search(field, in: &fields)
    }

    /// Moves the reader to `field`'s value wherever it is among the entries.
    @usableFromInline
    mutating func search(_ field: Int, in fields: inout RecordFieldCursor) throws -> Bool {
        // The expected entry first, then on to the end, then from the start up to it: each entry is looked at once.
        let expected = fields.next
        if expected < fields.end {
            offset = expected
            if try entryField(fields.table) == field { return true }
            try skipValue()
            while offset < fields.end {
                if try entryField(fields.table) == field { return true }
                try skipValue()
            }
        }
        offset = fields.start
        while offset < expected {
            if try entryField(fields.table) == field { return true }
            try skipValue()
        }
        return false
    }

    /// Reads the key of the entry at the reader's position: the field it names, or -1.
    @inline(__always)
    private mutating func entryField(_ table: FieldTable) throws -> Int {
        let first = bytes[offset]
        let code: UInt64
        if first < 0x80 {
            // One byte: a tag below 64, as every field of a model with fewer than 64 names has.
            code = UInt64(first)
            offset += 1
        } else {
            code = try varint()
        }
        if code & 1 == 0 {
            let tag = code >> 1
            // A tag this dictionary lacks: another writer added the name. The caller reloads the dictionary.
            guard tag < UInt64(table.fields.count) else { throw RecordDecoder.UnknownKeyTag() }
            return Int(table.fields[Int(tag)])
        } else if code & 3 == 1 {
            try skip(Int(clamping: code >> 2))
        } else {
            _ = try varint()
        }
        return -1
    }

    // MARK: Values
    // Each read accepts what `RecordDecoder` accepts for the same type, and moves past the value.

    /// Reads a value of a type with generated or built-in record code.
    @inlinable @inline(__always)
    public mutating func value<T: RecordStorable>(_ type: T.Type) throws -> T {
        try T.read(from: &self)
    }

    /// Reads a value of any other `Decodable` type through `RecordDecoder`.
    public mutating func value<T: Decodable>(_ type: T.Type) throws -> T {
        let start = offset
        try skipValue()
        return try decoder.decode(T.self, from: bytes, at: start, dictionary: dictionary)
    }

    /// Reads a whole model through `Codable`: the reading of every model without generated code.
    func decodeThroughCodable<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.decode(T.self, from: bytes, at: offset, dictionary: dictionary)
    }

    /// Whether the value at the reader's position is `nil`; moves past it when it is.
    @inlinable
    public mutating func readNil() throws -> Bool {
        guard offset < bytes.count else { throw Self.truncatedValue() }
        guard bytes[offset] == RecordFormat.ValueType.null.rawValue else { return false }
        offset += 1
        return true
    }

    /// Reads a `Bool`.
    @inlinable
    public mutating func readBool() throws -> Bool {
        if offset < bytes.count {
            switch bytes[offset] {
            case RecordFormat.ValueType.true.rawValue:
                offset += 1
                return true
            case RecordFormat.ValueType.false.rawValue:
                offset += 1
                return false
            default: break
            }
        }
        return try readBoolOrThrow()
    }

    @usableFromInline
    mutating func readBoolOrThrow() throws -> Bool {
        switch try valueType() {
        case .true:
            offset += 1
            return true
        case .false:
            offset += 1
            return false
        case let found: throw mismatch(expected: .true, found: found)
        }
    }

    /// Any stored integer width converts to any other when the value fits, as in `RecordDecoder`. Inlined where
    /// the field is read: a value stored in its own type's width, as it almost always is, costs a comparison and a
    /// load.
    @inlinable @inline(__always)
    public mutating func readInteger<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        if offset < bytes.count, bytes[offset] == RecordFormat.storedType(of: T.self), bytes.count - offset > size {
            let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: T.self))
            offset += 1 + size
            return value
        }
        return try readIntegerOfAnyWidth(T.self)
    }

    /// An integer stored in another width than its type's, or damage.
    @usableFromInline
    mutating func readIntegerOfAnyWidth<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let found = try valueType()
        let at = offset + 1
        let value: T?
        let size: Int
        switch found {
        case .int64:
            (value, size) = (T(exactly: try fixed(Int64.self, at: at)), 8)
        case .int8:
            (value, size) = (T(exactly: Int8(bitPattern: try fixed(UInt8.self, at: at))), 1)
        case .int16: (value, size) = (T(exactly: try fixed(Int16.self, at: at)), 2)
        case .int32: (value, size) = (T(exactly: try fixed(Int32.self, at: at)), 4)
        case .uint8: (value, size) = (T(exactly: try fixed(UInt8.self, at: at)), 1)
        case .uint16: (value, size) = (T(exactly: try fixed(UInt16.self, at: at)), 2)
        case .uint32: (value, size) = (T(exactly: try fixed(UInt32.self, at: at)), 4)
        case .uint64: (value, size) = (T(exactly: try fixed(UInt64.self, at: at)), 8)
        default: throw mismatch(expected: .int64, found: found)
        }
        guard let value else { throw corrupted("the stored number does not fit in \(T.self)") }
        offset = at + size
        return value
    }

    /// Reads a `Double`; a stored `Float` widens.
    @inlinable
    public mutating func readDouble() throws -> Double {
        if offset < bytes.count, bytes[offset] == RecordFormat.ValueType.double.rawValue, bytes.count - offset > 8 {
            let value = Double(
                bitPattern: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self)))
            offset += 9
            return value
        }
        return try readDoubleOrFloat()
    }

    @usableFromInline
    mutating func readDoubleOrFloat() throws -> Double {
        switch try valueType() {
        case .double:
            defer { offset += 9 }
            return Double(bitPattern: try fixed(UInt64.self, at: offset + 1))
        case .float:
            defer { offset += 5 }
            return Double(Float(bitPattern: try fixed(UInt32.self, at: offset + 1)))
        case let found: throw mismatch(expected: .double, found: found)
        }
    }

    /// Reads a `Float`; a stored `Double` narrows when it is exact (or NaN), and is refused otherwise.
    public mutating func readFloat() throws -> Float {
        switch try valueType() {
        case .float:
            defer { offset += 5 }
            return Float(bitPattern: try fixed(UInt32.self, at: offset + 1))
        case .double:
            let value = Double(bitPattern: try fixed(UInt64.self, at: offset + 1))
            guard let narrowed = Float(exactly: value) ?? (value.isNaN ? Float.nan : nil) else {
                throw corrupted("the stored number \(value) does not fit in Float")
            }
            offset += 9
            return narrowed
        case let found: throw mismatch(expected: .float, found: found)
        }
    }

    /// Reads a `String`, validating UTF-8 unless it is ASCII.
    public mutating func readString() throws -> String {
        try text(.string)
    }

    /// Reads `Data`.
    public mutating func readData() throws -> Data {
        Data(try payload(.bytes))
    }

    /// Reads a `Date`.
    public mutating func readDate() throws -> Date {
        let found = try valueType()
        guard found == .date else { throw mismatch(expected: .date, found: found) }
        defer { offset += 9 }
        return Date(timeIntervalSinceReferenceDate: Double(bitPattern: try fixed(UInt64.self, at: offset + 1)))
    }

    /// Reads a `UUID`.
    public mutating func readUUID() throws -> UUID {
        let found = try valueType()
        guard found == .uuid else { throw mismatch(expected: .uuid, found: found) }
        guard bytes.count - (offset + 1) >= 16 else { throw truncated() }
        defer { offset += 17 }
        return UUID(uuid: bytes.loadUnaligned(fromByteOffset: offset + 1, as: uuid_t.self))
    }

    /// Reads a `URL` from its absolute string.
    public mutating func readURL() throws -> URL {
        let text = try text(.url)
        guard let url = URL(string: text) else { throw corrupted("\(quoted(text)) is not a valid URL") }
        return url
    }

    /// Reads a `Decimal` from its exact decimal text.
    public mutating func readDecimal() throws -> Decimal {
        let text = try text(.decimal)
        if text == "NaN" { return .nan }
        guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
            throw corrupted("\(quoted(text)) is not a valid Decimal")
        }
        return decimal
    }

    /// Reads an unkeyed container (an array or a set) element by element.
    public mutating func readElements(_ body: (inout RecordReader, _ count: Int) throws -> Void) throws {
        let found = try valueType()
        guard found == .unkeyed else { throw mismatch(expected: .unkeyed, found: found) }
        let length = Int(try fixed(UInt32.self, at: offset + 1))
        let count = Int(try fixed(UInt32.self, at: offset + 5))
        let start = offset + 1 + RecordFormat.containerHeaderSize
        guard length <= bytes.count - start, count <= length else { throw truncated() }
        depth += 1
        guard depth < RecordFormat.maximumDepth else { throw corrupted("the record is nested too deeply") }
        offset = start
        try body(&self, count)
        guard offset <= start + length else { throw corrupted("a value runs past the end of its container") }
        offset = start + length
        depth -= 1
    }

    // MARK: Bytes

    @inline(__always)
    private func valueType() throws -> RecordFormat.ValueType {
        guard offset < bytes.count else { throw truncated() }
        guard let type = RecordFormat.ValueType(byte: bytes[offset]) else {
            throw corrupted("the record has an unknown value type")
        }
        return type
    }

    @inline(__always)
    private func fixed<I: FixedWidthInteger>(_: I.Type, at position: Int) throws -> I {
        guard bytes.count - position >= MemoryLayout<I>.size else { throw truncated() }
        return I(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: I.self))
    }

    @inline(__always)
    private mutating func varint() throws -> UInt64 {
        var reader = ByteReader(bytes, offset: offset)
        do {
            let value = try reader.varint()
            offset = reader.offset
            return value
        } catch {
            throw truncated()
        }
    }

    private mutating func skip(_ count: Int) throws {
        guard count >= 0, bytes.count - offset >= count else { throw truncated() }
        offset += count
    }

    private mutating func skipValue() throws {
        guard let size = RecordFormat.valueSize(in: bytes, at: offset, end: bytes.count) else { throw truncated() }
        offset += size
    }

    @inline(__always)
    private mutating func payload(_ expected: RecordFormat.ValueType) throws -> UnsafeRawBufferPointer {
        // A length below 128, one byte, as almost every stored text and data has.
        let start = offset + 2
        if start <= bytes.count, bytes[offset] == expected.rawValue, bytes[offset + 1] < 0x80 {
            let length = Int(bytes[offset + 1])
            if bytes.count - start >= length {
                offset = start + length
                return UnsafeRawBufferPointer(rebasing: bytes[start..<start + length])
            }
        }
        return try payloadOfAnyLength(expected)
    }

    private mutating func payloadOfAnyLength(_ expected: RecordFormat.ValueType) throws -> UnsafeRawBufferPointer {
        let found = try valueType()
        guard found == expected else { throw mismatch(expected: expected, found: found) }
        var reader = ByteReader(bytes, offset: offset + 1)
        do {
            let raw = try reader.bytes(Int(clamping: try reader.varint()))
            offset = reader.offset
            return raw
        } catch {
            throw truncated()
        }
    }

    private mutating func text(_ expected: RecordFormat.ValueType) throws -> String {
        guard let text = ByteReader.text(try payload(expected)) else {
            throw corrupted("the stored text is not valid UTF-8")
        }
        return text
    }

    // MARK: Errors (the coding path is added by each container on the way out)

    private func truncated() -> DecodingError { Self.truncatedValue() }

    @usableFromInline
    static func truncatedValue() -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "the record ends inside a value"))
    }

    private func corrupted(_ message: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: message))
    }

    private func mismatch(expected: RecordFormat.ValueType, found: RecordFormat.ValueType) -> DecodingError {
        let context = DecodingError.Context(codingPath: [], debugDescription: "expected \(expected), found \(found)")
        return found == .null ? .valueNotFound(Any.self, context) : .typeMismatch(Any.self, context)
    }
}

/// A keyed container generated code is reading: its bounds, how the record's tags map to the type's fields, and
/// where the entry after the last one read starts.
public struct RecordFieldCursor {
    // The key dictionary keeps every table it made for as long as it lives, and the reader's caller keeps the
    // dictionary: unmanaged, a cursor costs no reference counting per record.
    @usableFromInline let tableReference: Unmanaged<FieldTable>
    var table: FieldTable { tableReference.takeUnretainedValue() }
    @usableFromInline let start: Int
    @usableFromInline let end: Int
    @usableFromInline var next: Int
    /// The table's key bytes, read in place.
    @usableFromInline let keyBytes: UnsafePointer<UInt16>
    @usableFromInline let fieldCount: Int

    init(table: Unmanaged<FieldTable>, start: Int, end: Int) {
        self.tableReference = table
        self.start = start
        self.end = end
        self.next = start
        (keyBytes, fieldCount) = table._withUnsafeGuaranteedRef { (UnsafePointer($0.keyBytes), $0.keys.names.count) }
    }

    /// The one-byte key of `field`'s entries, or a value no byte has.
    @inlinable @inline(__always)
    func keyByte(_ field: Int) -> UInt16 {
        UInt(bitPattern: field) < UInt(bitPattern: fieldCount) ? keyBytes[field] : .max
    }

    /// The error for a required field the record lacks.
    @usableFromInline
    func missing(_ field: Int) -> DecodingError {
        let key = RecordCodingKey(table.keys.names[field])
        return DecodingError.keyNotFound(
            key, .init(codingPath: [], debugDescription: "the record has no value for \"\(key.stringValue)\""))
    }

    /// `error` with `field` in front of its coding path.
    @usableFromInline
    func annotate(_ error: any Error, field: Int) -> any Error {
        guard let decoding = error as? DecodingError else { return error }
        let key = RecordCodingKey(table.keys.names[field])
        func prefixed(_ context: DecodingError.Context) -> DecodingError.Context {
            .init(codingPath: [key] + context.codingPath, debugDescription: context.debugDescription)
        }
        switch decoding {
        case .typeMismatch(let type, let context): return DecodingError.typeMismatch(type, prefixed(context))
        case .valueNotFound(let type, let context): return DecodingError.valueNotFound(type, prefixed(context))
        case .keyNotFound(let missing, let context): return DecodingError.keyNotFound(missing, prefixed(context))
        case .dataCorrupted(let context): return DecodingError.dataCorrupted(prefixed(context))
        @unknown default: return error
        }
    }
}

/// A coding key by name, for the paths of errors from generated code.
struct RecordCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Which field of a type each tag of a key dictionary names.
///
/// Unchecked `Sendable`: it never changes after `init`, and its key bytes are storage it owns.
@usableFromInline
final class FieldTable: @unchecked Sendable {
    let keys: RecordKeys
    /// For each tag, the number of the field it names, or -1.
    let fields: [Int32]
    /// For each field, its entries' key when that is one byte (a tag below 64), or a value no byte has. In storage
    /// of its own, so that a cursor reads it with no array in between.
    let keyBytes: UnsafeMutablePointer<UInt16>

    init(keys: RecordKeys, dictionary: KeyDictionary) {
        self.keys = keys
        fields = dictionary.names.map { keys.numbers[$0].map(Int32.init) ?? -1 }
        keyBytes = .allocate(capacity: Swift.max(keys.names.count, 1))
        for (field, name) in keys.names.enumerated() {
            let tag = dictionary.tags[name]
            (keyBytes + field).initialize(to: tag.map { $0 < 64 ? UInt16($0 << 1) : .max } ?? .max)
        }
    }

    deinit { keyBytes.deallocate() }
}
