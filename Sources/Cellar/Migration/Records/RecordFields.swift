/// The top-level fields of a stored record, each kept as its encoded bytes: what migrations edit without the model's
/// Swift type. Renaming, removing or adding a field touches only the bytes of that field.
struct RecordFields {
    /// How an entry names its field: a tag of the model's key dictionary, or an inline name (dictionaries only).
    enum Key: Equatable {
        case tag(UInt32)
        case inline(String)
        case integer(Int)
    }

    struct Field {
        var key: Key
        /// The encoded value, type byte first.
        var value: [UInt8]
    }

    var fields: [Field]

    struct Damaged: Error {}

    init() { fields = [] }

    /// Parses a record: the format byte, then a keyed container. Damaged bytes throw, never read past the end.
    init(record bytes: UnsafeRawBufferPointer) throws(Damaged) {
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
                fields.append(Field(key: key, value: Array(bytes[start..<entries.offset])))
            }
            self.fields = fields
        } catch {
            throw Damaged()
        }
    }

    /// The record's bytes.
    var serialized: [UInt8] {
        var entries: [UInt8] = []
        for field in fields {
            switch field.key {
            case .tag(let tag): Varint.append(UInt64(tag) << 1, to: &entries)
            case .inline(let name):
                Varint.append(UInt64(name.utf8.count) << 2 | 1, to: &entries)
                entries.append(contentsOf: name.utf8)
            case .integer(let value):
                Varint.append(3, to: &entries)
                let zigzag = UInt64(bitPattern: Int64(value) << 1 ^ Int64(value) >> 63)
                Varint.append(zigzag, to: &entries)
            }
            entries.append(contentsOf: field.value)
        }
        var bytes: [UInt8] = [RecordFormat.version, RecordFormat.ValueType.keyed.rawValue]
        bytes.reserveCapacity(entries.count + 10)
        withUnsafeBytes(of: UInt32(entries.count).littleEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(fields.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: entries)
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
