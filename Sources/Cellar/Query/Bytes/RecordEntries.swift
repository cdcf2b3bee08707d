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

    /// The entries of `record`, when it is a record of the current format holding a keyed container.
    @inline(__always)
    init?(_ record: UnsafeRawBufferPointer, decoder: RecordDecoder, dictionary: KeyDictionary) {
        let header = 2 + RecordFormat.containerHeaderSize
        guard record.count >= header, record[0] == RecordFormat.version,
            record[1] == RecordFormat.ValueType.keyed.rawValue
        else { return nil }
        let length = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: 2, as: UInt32.self))
        guard Int(length) <= record.count - header else { return nil }
        bytes = record
        start = header
        end = header + Int(length)
        keyLimit = UInt64(dictionary.names.count) << 1
        self.decoder = decoder
        self.dictionary = dictionary
    }

    /// Where a field's value is.
    enum Location {
        case value(at: Int)
        case absent
        case undecided
    }

    /// The value of the entry whose key is `code` (a tag shifted left, as entries store it). The whole container
    /// is walked: a field found twice, or an entry that does not fit, leaves the answer to the decoder.
    @inline(__always)
    func locate(_ code: UInt64) -> Location {
        var offset = start
        var found = -1
        while offset < end {
            var key = UInt64(bytes[offset])
            if key < 0x80 {
                offset += 1
            } else {
                var reader = ByteReader(bytes, offset: offset, end: end)
                guard let long = try? reader.varint() else { return .undecided }
                (key, offset) = (long, reader.offset)
            }
            if key & 1 == 0 {
                if key == code {
                    guard found < 0 else { return .undecided }
                    found = offset
                } else if key >= keyLimit {
                    // A name added by a newer writer: it may be this field's; decoding reloads the dictionary.
                    return .undecided
                }
            } else if !skipInlineKey(key, at: &offset) {
                return .undecided
            }
            // (`init` made sure that `end <= bytes.count`, and the loop that `offset < end`.)
            guard offset < end, let size = RecordFormat.valueSize(checkedIn: bytes, at: offset, end: end) else {
                return .undecided
            }
            offset += size
        }
        return found < 0 ? .absent : .value(at: found)
    }

    /// Moves past the key text or integer that follows an inline key; `false` when it does not fit.
    private func skipInlineKey(_ key: UInt64, at offset: inout Int) -> Bool {
        var reader = ByteReader(bytes, offset: offset, end: end)
        if key & 3 == 1 {
            guard (try? reader.skip(Int(clamping: key >> 2))) != nil else { return false }
        } else {
            guard (try? reader.varint()) != nil else { return false }
        }
        offset = reader.offset
        return true
    }

    /// A reader of the value at `offset`.
    func reader(at offset: Int) -> RecordReader {
        RecordReader(decoder: decoder, dictionary: dictionary, bytes: bytes, offset: offset)
    }
}
