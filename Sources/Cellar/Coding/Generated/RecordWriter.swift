import Foundation

/// Writes a record for generated code, into the encoder's reused buffer: the same bytes `RecordEncoder` writes
/// for the same value through `Codable`.
public struct RecordWriter {
    let encoder: RecordEncoder
    /// Containers entered, to refuse what readers would refuse as nested too deeply.
    var depth = 0

    init(encoder: RecordEncoder) { self.encoder = encoder }

    // MARK: Keyed containers

    /// Starts the keyed container of a value of a `@Record` type.
    public mutating func beginFields(of fields: RecordKeys) throws -> RecordFieldWriter {
        try enter(fields.names)
        return RecordFieldWriter(tags: encoder.tags(for: fields), header: encoder.beginContainer(.keyed))
    }

    /// Ends the keyed container `beginFields` started.
    public mutating func endFields(_ fields: RecordFieldWriter) {
        encoder.closeContainer(header: fields.header, count: fields.count)
        depth -= 1
    }

    /// Writes a field whose type has generated or built-in record code. An optional that is `nil` is written as a
    /// null value, as `RecordEncoder` writes `encodeIfPresent(nil)`.
    @inlinable
    public mutating func write<T: RecordStorable>(_ value: T, field: Int, in fields: inout RecordFieldWriter) throws {
        writeKey(field, in: &fields)
        try value.write(to: &self)
    }

    /// Writes the key of `field`'s entry.
    public mutating func writeKey(_ field: Int, in fields: inout RecordFieldWriter) {
        encoder.putTag(fields.tags[field])
        fields.count += 1
    }

    /// Writes a field of any other `Encodable` type through `RecordEncoder`.
    public mutating func write<T: Encodable>(_ value: T, field: Int, in fields: inout RecordFieldWriter) throws {
        writeKey(field, in: &fields)
        try encoder.encodeNested(value, depth: depth)
    }

    /// Writes a whole model through `Codable`: the writing of every model without generated code.
    func encodeThroughCodable<T: Encodable>(_ value: T) throws {
        try encoder.encodeValue(value)
    }

    /// Goes one container deeper, refusing what readers would refuse as nested too deeply.
    private mutating func enter(_ value: @autoclosure () -> Any) throws {
        guard depth + 1 < RecordFormat.maximumDepth - 1 else {
            throw EncodingError.invalidValue(
                value(),
                .init(
                    codingPath: [],
                    debugDescription: "the value is nested more than \(RecordFormat.maximumDepth - 2) levels "
                        + "deep, deeper than a record may be read back"))
        }
        depth += 1
    }

    // MARK: Values
    // Each writes one value in the form `RecordEncoder` gives the same type.

    /// Writes `nil`.
    public mutating func writeNil() { encoder.putNil() }
    /// Writes a `Bool`.
    public mutating func writeBool(_ value: Bool) { encoder.putBool(value) }
    /// Writes a `String`.
    public mutating func writeString(_ value: String) { encoder.putString(value) }
    /// Writes a `Double`.
    public mutating func writeDouble(_ value: Double) { encoder.putDouble(value) }
    /// Writes a `Float`.
    public mutating func writeFloat(_ value: Float) { encoder.putFloat(value) }
    /// Writes an `Int`.
    public mutating func writeInt(_ value: Int) { encoder.putInt(value) }
    /// Writes an `Int8`.
    public mutating func writeInt8(_ value: Int8) { encoder.putInt8(value) }
    /// Writes an `Int16`.
    public mutating func writeInt16(_ value: Int16) { encoder.putInt16(value) }
    /// Writes an `Int32`.
    public mutating func writeInt32(_ value: Int32) { encoder.putInt32(value) }
    /// Writes an `Int64`.
    public mutating func writeInt64(_ value: Int64) { encoder.putInt64(value) }
    /// Writes a `UInt`.
    public mutating func writeUInt(_ value: UInt) { encoder.putUInt(value) }
    /// Writes a `UInt8`.
    public mutating func writeUInt8(_ value: UInt8) { encoder.putUInt8(value) }
    /// Writes a `UInt16`.
    public mutating func writeUInt16(_ value: UInt16) { encoder.putUInt16(value) }
    /// Writes a `UInt32`.
    public mutating func writeUInt32(_ value: UInt32) { encoder.putUInt32(value) }
    /// Writes a `UInt64`.
    public mutating func writeUInt64(_ value: UInt64) { encoder.putUInt64(value) }
    /// Writes `Data`, as bytes.
    public mutating func writeData(_ value: Data) { encoder.putBytes(.bytes, value) }
    /// Writes a `Date`.
    public mutating func writeDate(_ value: Date) { encoder.putDate(value) }
    /// Writes a `UUID`.
    public mutating func writeUUID(_ value: UUID) { encoder.putUUID(value) }
    /// Writes a `URL`, as its absolute string.
    public mutating func writeURL(_ value: URL) { encoder.putBytes(.url, value.absoluteString.utf8) }
    /// Writes a `Decimal`, as its description.
    public mutating func writeDecimal(_ value: Decimal) { encoder.putBytes(.decimal, value.description.utf8) }

    /// Writes an unkeyed container (an array or a set) of `count` elements, which `body` writes.
    public mutating func writeElements(count: Int, _ body: (inout RecordWriter) throws -> Void) throws {
        try enter(count)
        defer { depth -= 1 }
        let header = encoder.beginContainer(.unkeyed)
        try body(&self)
        encoder.closeContainer(header: header, count: UInt32(truncatingIfNeeded: count))
    }
}

/// A keyed container generated code is writing: where its header is, how many entries it has, and the tags of
/// its type's fields.
public struct RecordFieldWriter {
    let tags: [UInt32]
    let header: Int
    var count: UInt32 = 0

    init(tags: [UInt32], header: Int) {
        self.tags = tags
        self.header = header
    }
}
