import Foundation

/// A record read without its Swift type: the tree the record format describes, with key names resolved from the
/// model's key dictionary. Migrations and inspection tools read records this way.
package enum RecordValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    /// An `Int128` or `UInt128`.
    case int128(Int128)
    case uint128(UInt128)
    case float(Float)
    case double(Double)
    case string(String)
    case bytes(Data)
    case date(Date)
    case uuid(UUID)
    case url(String)
    case decimal(String)
    /// Entries in the order they were written. Keys are names, or `"[n]"` for integer keys.
    case keyed([(key: String, value: RecordValue)])
    case unkeyed([RecordValue])

    /// Bytes that are not a record of the format, or that name keys the dictionary does not have.
    struct Malformed: Error, CustomStringConvertible {
        /// What is wrong, when it is known: a checksum that does not match, a format byte this version does not read.
        var damage: RecordFormat.Damage?

        var description: String {
            damage?.description ?? "the record's bytes do not make a value of the record format"
        }
    }

    /// Reads a whole record. Throws `Malformed` for bytes that are not a record, or that name keys
    /// `dictionary` does not have.
    init(record: UnsafeRawBufferPointer, dictionary: KeyDictionary) throws {
        let bytes: UnsafeRawBufferPointer
        do { bytes = try RecordFormat.body(of: record) } catch { throw Malformed(damage: error) }
        var reader = ByteReader(bytes, offset: 1)
        self = try Self.read(&reader, dictionary: dictionary, depth: 0)
        guard reader.isAtEnd else { throw Malformed() }
    }

    /// The value under `key` of a keyed value.
    package subscript(key: String) -> RecordValue? {
        guard case .keyed(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }

    private static func read(_ reader: inout ByteReader, dictionary: KeyDictionary, depth: Int) throws -> RecordValue {
        guard depth < RecordFormat.maximumDepth, let type = RecordFormat.ValueType(byte: try reader.byte()) else {
            throw Malformed()
        }
        switch type {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int8: return .int(Int64(Int8(bitPattern: try reader.byte())))
        case .int16: return .int(Int64(try reader.fixed(Int16.self)))
        case .int32: return .int(Int64(try reader.fixed(Int32.self)))
        case .int64: return .int(try reader.fixed(Int64.self))
        case .uint8: return .uint(UInt64(try reader.byte()))
        case .uint16: return .uint(UInt64(try reader.fixed(UInt16.self)))
        case .uint32: return .uint(UInt64(try reader.fixed(UInt32.self)))
        case .uint64: return .uint(try reader.fixed(UInt64.self))
        case .int128: return .int128(try reader.fixed(Int128.self))
        case .uint128: return .uint128(try reader.fixed(UInt128.self))
        case .float: return .float(Float(bitPattern: try reader.fixed(UInt32.self)))
        case .double: return .double(Double(bitPattern: try reader.fixed(UInt64.self)))
        case .date:
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.fixed(UInt64.self))))
        case .uuid: return .uuid(UUID(uuid: try reader.bytes(16).loadUnaligned(as: uuid_t.self)))
        case .bytes: return .bytes(Data(try reader.bytes(Int(clamping: try reader.varint()))))
        case .string, .url, .decimal:
            let raw = try reader.bytes(Int(clamping: try reader.varint()))
            guard let text = String(validating: raw, as: UTF8.self) else { throw Malformed() }
            return type == .string ? .string(text) : type == .url ? .url(text) : .decimal(text)
        case .keyed, .unkeyed:
            let length = Int(try reader.fixed(UInt32.self))
            let count = Int(try reader.fixed(UInt32.self))
            guard length <= reader.end - reader.offset, count <= length else { throw Malformed() }
            var inner = ByteReader(reader.base, offset: reader.offset, end: reader.offset + length)
            try reader.skip(length)
            if type == .unkeyed {
                var values: [RecordValue] = []
                for _ in 0..<count { values.append(try read(&inner, dictionary: dictionary, depth: depth + 1)) }
                guard inner.isAtEnd else { throw Malformed() }
                return .unkeyed(values)
            }
            var entries: [(key: String, value: RecordValue)] = []
            for _ in 0..<count {
                let key = try readKey(&inner, dictionary: dictionary)
                entries.append((key, try read(&inner, dictionary: dictionary, depth: depth + 1)))
            }
            guard inner.isAtEnd else { throw Malformed() }
            return .keyed(entries)
        }
    }

    private static func readKey(_ reader: inout ByteReader, dictionary: KeyDictionary) throws -> String {
        let code = try reader.varint()
        if code & 1 == 0 {
            let tag = Int(clamping: code >> 1)
            guard tag < dictionary.names.count else { throw Malformed() }
            return dictionary.names[tag]
        }
        if code & 3 == 1 {
            guard let name = String(validating: try reader.bytes(Int(clamping: code >> 2)), as: UTF8.self) else {
                throw Malformed()
            }
            return name
        }
        let zigzag = try reader.varint()
        return "[\(Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1))))]"
    }

    package static func == (lhs: RecordValue, rhs: RecordValue) -> Bool {
        switch (lhs, rhs) {
        case (.keyed(let l), .keyed(let r)):
            return l.count == r.count && zip(l, r).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.null, .null): return true
        case (.bool(let l), .bool(let r)): return l == r
        case (.int(let l), .int(let r)): return l == r
        case (.uint(let l), .uint(let r)): return l == r
        case (.float(let l), .float(let r)): return l.bitPattern == r.bitPattern
        case (.double(let l), .double(let r)): return l.bitPattern == r.bitPattern
        case (.string(let l), .string(let r)), (.url(let l), .url(let r)), (.decimal(let l), .decimal(let r)):
            return l == r
        case (.bytes(let l), .bytes(let r)): return l == r
        case (.date(let l), .date(let r)): return l == r
        case (.uuid(let l), .uuid(let r)): return l == r
        case (.unkeyed(let l), .unkeyed(let r)): return l == r
        default: return false
        }
    }
}
