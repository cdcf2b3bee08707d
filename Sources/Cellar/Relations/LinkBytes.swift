import LMDB

/// Dropping links from a stored record by editing its bytes: what deleting a record does to each record that
/// linked to it (`targetDeleteRule: .removeLink`), without decoding and encoding every one of them.
///
/// The edited record is, byte for byte, the one encoding the decoded record with those links dropped would write:
/// a list loses the elements (its length and count, and the record's length, shrink to fit) and a to-one link
/// becomes the null that both coders write for `nil`. The edit is made only where that holds and nothing else
/// moves with the links:
/// - the model's record fields are tied to its properties (`StoredFields`: generated record code, or the first record
///   a plain model wrote or opening read, when its fields are its stored properties), so the link's field is known;
/// - every index of the model is on stored properties other than that link: an index on a computed property may
///   read the links, and its entry would have to be worked out from the decoded record;
/// - the targets' ids are `Int64`, `Int`, `String` or `UUID`, whose keys are read here from their bytes as
///   `KeyEncoding` makes them from the values (an id type of one's own may decode its bytes to another value);
/// - every target to drop is found in the record.
///
/// Anything else, and any record whose bytes this cannot vouch for, is decoded, edited and encoded as before.
///
/// The decoded value is what the decoded path gives. The bytes are what the model's encoding writes when it is the
/// one Swift synthesizes (or `@Record`'s): a plain `Codable` model that decodes as synthesized but encodes in its own
/// way (a derived field, a `nil` left out rather than null) keeps its other fields as they were stored, and fields
/// the model no longer declares stay too, where encoding the decoded record would drop them.
enum LinkBytes {
    /// Where one of a model's links is kept in its records.
    struct Field: Sendable {
        /// The record field's stored name.
        let name: String
        /// Whether it holds a list of links rather than one optional link.
        let isList: Bool
    }

    /// For each of `M`'s links, in the schema's order, the field it is kept in when it can be edited in bytes;
    /// `nil` for a link that cannot. Worked out once per model and process.
    static func fields<M: Model>(of type: M.Type) -> [Field?] {
        let identity = ObjectIdentifier(M.self)
        if let known = learnt.withLock({ $0[identity] }) { return known }
        let fields = editableFields(of: M.self)
        // Kept only once the model's fields are known: a plain model's are learnt from its first record.
        if StoredFields.keys(of: M.self) != nil { learnt.withLock { $0[identity] = fields } }
        return fields
    }

    private static let learnt = Lock<[ObjectIdentifier: [Field?]]>([:])

    private static func editableFields<M: Model>(of type: M.Type) -> [Field?] {
        let links = M.schema.links
        let none = [Field?](repeating: nil, count: links.count)
        guard let keys = StoredFields.keys(of: M.self) else { return none }
        // The offsets of the indexed properties; one that is not a stored property's leaves no link editable.
        var indexed: Set<Int> = []
        let whole: PartialKeyPath<M> = \M.self
        for index in M.schema.indexes {
            for path in index.keyPaths {
                // `\.self` is at offset 0, but its key holds every property, the links too.
                guard path != whole, let offset = MemoryLayout<M>.offset(of: path) else { return none }
                indexed.insert(offset)
            }
        }
        return links.map { link in
            guard let offset = MemoryLayout<M>.offset(of: link.keyPath), !indexed.contains(offset),
                let number = link.storedField(), number < keys.names.count
            else { return nil }
            return Field(name: keys.names[number], isList: link.isList)
        }
    }

    /// `record` (a record's body, `RecordFormat.body(of:)`) without its links to `targets` in the field whose entry
    /// key is `code` (its tag shifted left); `nil` when the bytes cannot be vouched for, an id is of another kind, or
    /// a target is not in the field. `keyLimit` is the loaded key dictionary's (`RecordEntries.keyLimit(of:)`).
    static func removing(
        _ targets: [[UInt8]], fromFieldCoded code: UInt64, isList: Bool, in record: [UInt8], keyLimit: UInt64
    ) -> [UInt8]? {
        record.withUnsafeBytes { bytes -> [UInt8]? in
            guard let (start, end) = RecordEntries.container(of: bytes), end == bytes.count,
                case .value(let at) = RecordEntries.locate(code, in: bytes, from: start, to: end, keyLimit: keyLimit),
                let size = RecordFormat.valueSize(in: bytes, at: at, end: end)
            else { return nil }
            var key: [UInt8] = []
            key.reserveCapacity(24)
            var found = [Bool](repeating: false, count: targets.count)
            var dropped: [Range<Int>] = []
            func take(_ range: Range<Int>) -> Bool {
                guard Self.key(ofIDIn: bytes, at: range.lowerBound, size: range.count, into: &key) else { return false }
                var matched = false
                for (position, target) in targets.enumerated() where target == key {
                    found[position] = true
                    matched = true
                }
                if matched { dropped.append(range) }
                return true
            }
            let header = 1 + RecordFormat.containerHeaderSize
            if isList {
                guard bytes[at] == RecordFormat.ValueType.unkeyed.rawValue, size >= header else { return nil }
                let count = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at + 5, as: UInt32.self))
                var offset = at + header
                var seen: UInt32 = 0
                while offset < at + size {
                    guard let element = RecordFormat.valueSize(in: bytes, at: offset, end: at + size),
                        take(offset..<offset + element)
                    else { return nil }
                    offset += element
                    seen += 1
                }
                guard seen == count else { return nil }
            } else {
                guard take(at..<at + size) else { return nil }
            }
            guard found.allSatisfy({ $0 }) else { return nil }
            var edited: [UInt8] = []
            edited.reserveCapacity(bytes.count)
            var copied = 0
            for range in dropped {
                edited.append(contentsOf: bytes[copied..<range.lowerBound])
                copied = range.upperBound
            }
            if !isList { edited.append(RecordFormat.ValueType.null.rawValue) }
            edited.append(contentsOf: bytes[copied...])
            let shrunk = bytes.count - edited.count
            edited.withUnsafeMutableBytes { raw in
                func store(_ value: Int, at offset: Int) {
                    raw.storeBytes(
                        of: UInt32(truncatingIfNeeded: value).littleEndian, toByteOffset: offset, as: UInt32.self)
                }
                store(end - start - shrunk, at: 2)
                if isList {
                    let count = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at + 5, as: UInt32.self)))
                    store(size - header - shrunk, at: at + 1)
                    store(count - dropped.count, at: at + 5)
                }
            }
            return edited
        }
    }

    /// Makes `key` the primary key of the id stored at `offset` (`size` bytes, type byte included), as
    /// `KeyEncoding` makes it from an `Int64`, `Int`, `String` or `UUID` id; `false` for a value of another kind.
    static func key(ofIDIn bytes: UnsafeRawBufferPointer, at offset: Int, size: Int, into key: inout [UInt8]) -> Bool {
        key.removeAll(keepingCapacity: true)
        switch RecordFormat.ValueType(byte: bytes[offset]) {
        case .int64? where size == 9:
            KeyEncoding.appendSigned(
                Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: Int64.self)), to: &key)
        case .uuid? where size == 17:
            key.append(KeyEncoding.Tag.uuid.rawValue)
            key.append(contentsOf: bytes[offset + 1..<offset + 17])
        case .string?:
            var reader = ByteReader(bytes, offset: offset + 1, end: offset + size)
            guard let length = try? reader.varint(), let text = try? reader.bytes(Int(clamping: length)),
                reader.isAtEnd
            else { return false }
            if ByteReader.isASCII(text) {
                // ASCII is in NFC already: its key is its bytes, escaped.
                KeyEncoding.appendEscaped(text, tag: .string, to: &key)
            } else {
                guard let string = String(validating: text, as: UTF8.self) else { return false }
                KeyEncoding.appendString(string, to: &key)
            }
        default:
            return false
        }
        return true
    }
}
