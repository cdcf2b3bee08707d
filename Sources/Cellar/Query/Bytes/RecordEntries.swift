/// The top-level entries of one stored record, for finding a field's value without decoding the record.
///
/// Every step is bounds-checked against the record's own container; whatever it cannot vouch for (damage, a
/// tag the loaded key dictionary does not have yet, a field stored twice) it reports as undecided, and the record
/// is decoded, which gives the answer or the error.
struct RecordEntries {
    let bytes: UnsafeRawBufferPointer
    /// Where the entries start and end.
    let start: Int
    let end: Int
    /// The first key past the key dictionary's tags: a record with a key at or past it (an even one) was written
    /// with a newer dictionary.
    let keyLimit: UInt64
    // A record is checked inside the query that holds both: unowned, they cost no reference counting per record.
    unowned(unsafe) let decoder: RecordDecoder
    unowned(unsafe) let dictionary: KeyDictionary

    /// The entries of a record's `body` (`RecordFormat.body(of:)`), when it holds a keyed container; `keyLimit` is
    /// `dictionary`'s (`keyLimit(of:)`).
    @inline(__always)
    init?(_ body: UnsafeRawBufferPointer, decoder: RecordDecoder, dictionary: KeyDictionary, keyLimit: UInt64) {
        guard let (start, end) = Self.container(of: body) else { return nil }
        (bytes, self.start, self.end, self.keyLimit) = (body, start, end, keyLimit)
        self.decoder = decoder
        self.dictionary = dictionary
    }

    /// Where the entries of a record's `body` (its format byte and value, without the checksum) start and end, when
    /// it holds a keyed container.
    @inline(__always)
    static func container(of body: UnsafeRawBufferPointer) -> (start: Int, end: Int)? {
        let header = 2 + RecordFormat.containerHeaderSize
        guard body.count >= header, body[0] == RecordFormat.version || body[0] == RecordFormat.uncheckedVersion,
            body[1] == RecordFormat.ValueType.keyed.rawValue
        else { return nil }
        let length = UInt32(littleEndian: body.loadUnaligned(fromByteOffset: 2, as: UInt32.self))
        guard Int(length) <= body.count - header else { return nil }
        return (header, header + Int(length))
    }

    /// The first key past `dictionary`'s tags.
    static func keyLimit(of dictionary: KeyDictionary) -> UInt64 { UInt64(dictionary.names.count) << 1 }

    /// Where a field's value is.
    enum Location {
        case value(at: Int)
        case absent
        case undecided
    }

    /// The value of the entry whose key is `code` (a tag shifted left, as entries store it). The whole container
    /// is walked: a field found twice, or an entry that does not fit, leaves the answer to the decoder.
    ///
    /// The loop keeps what it reads in locals, and what is rare (a key of two bytes or more, an inline key, a value
    /// whose size takes more than its type byte and one length byte) goes out of line, so that an entry of the
    /// common kind costs a dozen instructions.
    @inline(__always)
    func locate(_ code: UInt64) -> Location {
        Self.locate(code, in: bytes, from: start, to: end, keyLimit: keyLimit)
    }

    /// `locate(_:)` in the entries from `start` to `end` (`container(of:)`) of `bytes`, with the key limit of the
    /// loaded dictionary.
    @inline(__always)
    static func locate(
        _ code: UInt64, in bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, keyLimit: UInt64
    ) -> Location {
        // (`container(of:)` made sure that `end <= bytes.count`; every load below is at an offset the loop keeps
        // under `end`.)
        guard let base = bytes.baseAddress else { return .undecided }
        var offset = start
        var found = -1
        while offset < end {
            var key = UInt64(base.load(fromByteOffset: offset, as: UInt8.self))
            if key < 0x80, key & 1 == 0 {
                offset &+= 1
            } else {
                guard let (long, next) = Self.key(in: bytes, at: offset, end: end) else { return .undecided }
                (key, offset) = (long, next)
            }
            if key & 1 == 0, key == code {
                guard found < 0 else { return .undecided }
                found = offset
            } else if key >= keyLimit, key & 1 == 0 {
                // A name added by a newer writer: it may be this field's; decoding reloads the dictionary.
                return .undecided
            }
            guard offset < end else { return .undecided }
            // The common values' sizes from a table in one constant; text's from its one-byte length.
            let type = base.load(fromByteOffset: offset, as: UInt8.self)
            var size = type < 16 ? Int(truncatingIfNeeded: fixedSizes >> (UInt64(type) &* 4)) & 0xF : 0
            if size == 0 {
                if type == RecordFormat.ValueType.string.rawValue, end &- offset > 1,
                    case let length = base.load(fromByteOffset: offset &+ 1, as: UInt8.self), length < 0x80
                {
                    size = 2 &+ Int(length)
                } else {
                    guard let other = valueSize(in: bytes, at: offset, end: end) else { return .undecided }
                    size = other
                }
            }
            guard size <= end &- offset else { return .undecided }
            offset &+= size
        }
        return found < 0 ? .absent : .value(at: found)
    }

    /// The size of a value of each type below 16 that has a fixed size (type byte included), four bits a type from
    /// type 0 up; 0 for text and bytes, whose size is read from the value. A constant, so that a record's walk loads
    /// nothing to size an entry; a test checks it against `RecordFormat.valueSize`, the format's one definition.
    static let fixedSizes: UInt64 = 0x9009_5953_2953_2111

    /// An entry's key that is not one byte of a dictionary tag: a longer varint, or an inline key (odd), whose text or
    /// integer it moves past. The key and the offset after it; `nil` when it does not fit.
    @inline(never)
    private static func key(in bytes: UnsafeRawBufferPointer, at offset: Int, end: Int) -> (UInt64, Int)? {
        var reader = ByteReader(bytes, offset: offset, end: end)
        guard let key = try? reader.varint() else { return nil }
        if key & 1 == 1 {
            if key & 3 == 1 {
                guard (try? reader.skip(Int(clamping: key >> 2))) != nil else { return nil }
            } else {
                guard (try? reader.varint()) != nil else { return nil }
            }
        }
        return (key, reader.offset)
    }

    /// `RecordFormat.valueSize`, out of the walk's loop.
    @inline(never)
    private static func valueSize(in bytes: UnsafeRawBufferPointer, at offset: Int, end: Int) -> Int? {
        RecordFormat.valueSize(checkedIn: bytes, at: offset, end: end)
    }

    /// A reader of the value at `offset`.
    func reader(at offset: Int) -> RecordReader {
        RecordReader(decoder: decoder, dictionary: dictionary, bytes: bytes, offset: offset)
    }
}
