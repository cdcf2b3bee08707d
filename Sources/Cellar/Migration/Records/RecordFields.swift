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

    struct Damaged: Error {}

    init() {
        original = []
        fields = []
    }

    /// Parses a record: the format byte, then a keyed container. Damaged bytes throw, never read past the end.
    init(record bytes: UnsafeRawBufferPointer) throws(Damaged) {
        original = Array(bytes)
        // Parsed from the caller's bytes: the same as `original`, without a closure that would lose the error type.
        fields = try Self.parse(bytes)
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) throws(Damaged) -> [Field] {
        var reader = ByteReader(bytes)
        do {
            guard try reader.byte() == RecordFormat.version, try reader.byte() == RecordFormat.ValueType.keyed.rawValue
            else { throw Damaged() }
            let length = Int(try reader.fixed(UInt32.self))
            let count = Int(try reader.fixed(UInt32.self))
            guard length <= reader.end - reader.offset, count <= length else { throw Damaged() }
            var entries = ByteReader(bytes, offset: reader.offset, end: reader.offset + length)
            var fields: [Field] = []
            fields.reserveCapacity(count)
            for _ in 0..<count {
                let code = try entries.varint()
                let key: Key
                if code & 1 == 0 {
                    key = .tag(UInt32(truncatingIfNeeded: code >> 1))
                } else if code & 3 == 1 {
                    guard let name = String(validating: try entries.bytes(Int(clamping: code >> 2)), as: UTF8.self)
                    else { throw Damaged() }
                    key = .inline(name)
                } else {
                    let zigzag = try entries.varint()
                    key = .integer(Int(truncatingIfNeeded: Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))))
                }
                let start = entries.offset
                try entries.skipValue()
                fields.append(Field(key: key, value: .stored(start..<entries.offset)))
            }
            return fields
        } catch {
            throw Damaged()
        }
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

    /// The record's bytes.
    var serialized: [UInt8] {
        var bytes: [UInt8] = [RecordFormat.version, RecordFormat.ValueType.keyed.rawValue]
        bytes.reserveCapacity(original.count + 64)
        bytes.append(contentsOf: repeatElement(0, count: RecordFormat.containerHeaderSize))
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
            case .stored(let range): bytes.append(contentsOf: original[range])
            case .new(let value): bytes.append(contentsOf: value)
            }
        }
        let payload = bytes.count - 2 - RecordFormat.containerHeaderSize
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(truncatingIfNeeded: payload).littleEndian, toByteOffset: 2, as: UInt32.self)
            raw.storeBytes(of: UInt32(truncatingIfNeeded: fields.count).littleEndian, toByteOffset: 6, as: UInt32.self)
        }
        return bytes
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
