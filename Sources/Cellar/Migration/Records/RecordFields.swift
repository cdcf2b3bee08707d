/// The top-level fields of a stored record, as migrations edit them without the model's Swift type: one copy of the
/// record's bytes, each field a range of it until it is set anew. Renaming, removing or adding a field touches only
/// that field; the others are copied through as they were.
struct RecordFields {
    /// How an entry names its field: a tag of the model's key dictionary, or an inline name (dictionaries only).
    enum Key: Equatable {
        case tag(UInt32)
        case inline(String)
        case integer(Int)
    }

    /// A field's encoded value, type byte first: where it lies in the stored record, or new bytes.
    enum Value {
        case stored(Range<Int>)
        case new([UInt8])
    }

    struct Field {
        var key: Key
        var value: Value
    }

    /// The record's bytes as read.
    private let original: [UInt8]
    var fields: [Field]

    /// Bytes that are not a keyed record; `damage` says more when the format byte or the checksum is wrong.
    struct Damaged: Error, CustomStringConvertible {
        var damage: RecordFormat.Damage?

        var description: String {
            damage?.description ?? "the record's bytes are damaged (not a keyed record of the record format)"
        }
    }

    init() {
        original = []
        fields = []
    }

    /// Parses a record: the format byte, then a keyed container. Damaged bytes throw, never read past the end.
    init(record: UnsafeRawBufferPointer) throws(Damaged) {
        let bytes: UnsafeRawBufferPointer
        do { bytes = try RecordFormat.body(of: record) } catch { throw Damaged(damage: error) }
        original = Array(bytes)
        // Parsed from the caller's bytes: the same as `original`, without a closure that would lose the error type.
        fields = try Self.entries(ofKeyedAt: 1, in: bytes)
    }

    /// The entries of the keyed container whose type byte is at `offset`, with their values as ranges of `bytes`.
    static func entries(ofKeyedAt offset: Int, in bytes: UnsafeRawBufferPointer) throws(Damaged) -> [Field] {
        do {
            var reader = try containerReader(at: offset, type: .keyed, in: bytes)
            let count = Int(try reader.fixed(UInt32.self))
            guard count <= reader.end - reader.offset else { throw Damaged() }
            var fields: [Field] = []
            fields.reserveCapacity(count)
            for _ in 0..<count {
                let code = try reader.varint()
                let key: Key
                if code & 1 == 0 {
                    key = .tag(UInt32(truncatingIfNeeded: code >> 1))
                } else if code & 3 == 1 {
                    guard let name = String(validating: try reader.bytes(Int(clamping: code >> 2)), as: UTF8.self)
                    else { throw Damaged() }
                    key = .inline(name)
                } else {
                    let zigzag = try reader.varint()
                    key = .integer(Int(truncatingIfNeeded: Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))))
                }
                let start = reader.offset
                try reader.skipValue()
                fields.append(Field(key: key, value: .stored(start..<reader.offset)))
            }
            return fields
        } catch {
            throw Damaged()
        }
    }

    /// The elements of the unkeyed container whose type byte is at `offset`, as ranges of `bytes`.
    static func elements(ofUnkeyedAt offset: Int, in bytes: UnsafeRawBufferPointer) throws(Damaged) -> [Range<Int>] {
        do {
            var reader = try containerReader(at: offset, type: .unkeyed, in: bytes)
            let count = Int(try reader.fixed(UInt32.self))
            guard count <= reader.end - reader.offset else { throw Damaged() }
            var elements: [Range<Int>] = []
            elements.reserveCapacity(count)
            for _ in 0..<count {
                let start = reader.offset
                try reader.skipValue()
                elements.append(start..<reader.offset)
            }
            return elements
        } catch {
            throw Damaged()
        }
    }

    /// A reader bounded to the payload of the container at `offset`, positioned at its count.
    private static func containerReader(
        at offset: Int, type: RecordFormat.ValueType, in bytes: UnsafeRawBufferPointer
    ) throws -> ByteReader {
        var reader = ByteReader(bytes, offset: offset)
        guard try reader.byte() == type.rawValue else { throw Damaged() }
        let length = Int(try reader.fixed(UInt32.self))
        guard length <= reader.end - reader.offset - 4 else { throw Damaged() }
        return ByteReader(bytes, offset: reader.offset, end: reader.offset + 4 + length)
    }

    /// Hands `body` the bytes holding the value at `position` and the offset of its type byte there.
    func withValue<R>(at position: Int, _ body: (UnsafeRawBufferPointer, Int) throws -> R) rethrows -> R {
        switch fields[position].value {
        case .stored(let range): try original.withUnsafeBytes { try body($0, range.lowerBound) }
        case .new(let bytes): try bytes.withUnsafeBytes { try body($0, 0) }
        }
    }

    /// The type byte of the value at `position`.
    func valueType(at position: Int) -> UInt8? {
        switch fields[position].value {
        case .stored(let range): original[range.lowerBound]
        case .new(let bytes): bytes.first
        }
    }

    /// The record's bytes, sealed with their checksum.
    var serialized: [UInt8] {
        var bytes: [UInt8] = []
        serialize(into: &bytes)
        return bytes
    }

    /// Replaces `bytes` with the record's bytes, keeping its storage.
    func serialize(into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        bytes.reserveCapacity(original.count + 64)
        bytes.append(RecordFormat.version)
        original.withUnsafeBytes { Self.appendKeyed(fields, from: $0, to: &bytes) }
        RecordFormat.seal(&bytes)
    }

    /// Appends a keyed container of `fields`, whose stored values are ranges of `source`.
    static func appendKeyed(_ fields: [Field], from source: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        let header = appendHeader(.keyed, to: &bytes)
        for field in fields {
            switch field.key {
            case .tag(let tag): Varint.append(UInt64(tag) << 1, to: &bytes)
            case .inline(let name):
                Varint.append(UInt64(name.utf8.count) << 2 | 1, to: &bytes)
                bytes.append(contentsOf: name.utf8)
            case .integer(let value):
                Varint.append(3, to: &bytes)
                Varint.append(UInt64(bitPattern: Int64(value) << 1 ^ Int64(value) >> 63), to: &bytes)
            }
            switch field.value {
            case .stored(let range): bytes.append(contentsOf: source[range])
            case .new(let value): bytes.append(contentsOf: value)
            }
        }
        closeHeader(at: header, count: fields.count, in: &bytes)
    }

    /// Appends an unkeyed container of `elements`.
    static func appendUnkeyed(_ elements: [[UInt8]], to bytes: inout [UInt8]) {
        let header = appendHeader(.unkeyed, to: &bytes)
        for element in elements { bytes.append(contentsOf: element) }
        closeHeader(at: header, count: elements.count, in: &bytes)
    }

    private static func appendHeader(_ type: RecordFormat.ValueType, to bytes: inout [UInt8]) -> Int {
        bytes.append(type.rawValue)
        bytes.append(contentsOf: repeatElement(0, count: RecordFormat.containerHeaderSize))
        return bytes.count - RecordFormat.containerHeaderSize
    }

    private static func closeHeader(at header: Int, count: Int, in bytes: inout [UInt8]) {
        let payload = bytes.count - header - RecordFormat.containerHeaderSize
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(truncatingIfNeeded: payload).littleEndian, toByteOffset: header, as: UInt32.self)
            raw.storeBytes(
                of: UInt32(truncatingIfNeeded: count).littleEndian, toByteOffset: header + 4, as: UInt32.self)
        }
    }

    /// The value at `offset` of `bytes` without the field at `path` in every object it reaches, `shape` telling
    /// objects, lists and dictionaries apart; `nil` when nothing was removed.
    static func removing(
        _ path: ArraySlice<String>, fromValueAt offset: Int, in bytes: UnsafeRawBufferPointer, shape: ValueShape,
        dictionary: KeyDictionary
    ) throws(Damaged) -> [UInt8]? {
        guard let name = path.first, offset < bytes.count, bytes[offset] != RecordFormat.ValueType.null.rawValue
        else { return nil }
        var output: [UInt8] = []
        switch shape {
        case .object(let properties):
            var fields = try entries(ofKeyedAt: offset, in: bytes)
            let keyName = { (field: Field) -> String? in
                if case .tag(let tag) = field.key, Int(tag) < dictionary.names.count {
                    return dictionary.names[Int(tag)]
                }
                return nil
            }
            guard let position = fields.firstIndex(where: { keyName($0) == name }) else { return nil }
            if path.count == 1 {
                fields.remove(at: position)
            } else {
                guard case .stored(let range) = fields[position].value,
                    let inner = properties.first(where: { $0.name == name }),
                    let edited = try removing(
                        path.dropFirst(), fromValueAt: range.lowerBound, in: bytes, shape: inner.shape,
                        dictionary: dictionary)
                else { return nil }
                fields[position].value = .new(edited)
            }
            appendKeyed(fields, from: bytes, to: &output)
        case .list(let element):
            var changed = false
            var rewritten: [[UInt8]] = []
            for range in try elements(ofUnkeyedAt: offset, in: bytes) {
                if let edited = try removing(
                    path, fromValueAt: range.lowerBound, in: bytes, shape: element, dictionary: dictionary)
                {
                    rewritten.append(edited)
                    changed = true
                } else {
                    rewritten.append(Array(bytes[range]))
                }
            }
            guard changed else { return nil }
            appendUnkeyed(rewritten, to: &output)
        case .dictionary(let value):
            var fields = try entries(ofKeyedAt: offset, in: bytes)
            var changed = false
            for position in fields.indices {
                guard case .stored(let range) = fields[position].value,
                    let edited = try removing(
                        path, fromValueAt: range.lowerBound, in: bytes, shape: value, dictionary: dictionary)
                else { continue }
                fields[position].value = .new(edited)
                changed = true
            }
            guard changed else { return nil }
            appendKeyed(fields, from: bytes, to: &output)
        default:
            return nil
        }
        return output
    }

    /// The position of the field named `name` in `dictionary`.
    func index(of name: String, in dictionary: KeyDictionary) -> Int? {
        fields.firstIndex { field in
            switch field.key {
            case .tag(let tag): Int(tag) < dictionary.names.count && dictionary.names[Int(tag)] == name
            case .inline(let inline): inline == name
            case .integer: false
            }
        }
    }

    /// The field names, in stored order.
    func names(in dictionary: KeyDictionary) -> [String] {
        fields.compactMap { field in
            switch field.key {
            case .tag(let tag): Int(tag) < dictionary.names.count ? dictionary.names[Int(tag)] : nil
            case .inline(let name): name
            case .integer(let value): String(value)
            }
        }
    }
}
