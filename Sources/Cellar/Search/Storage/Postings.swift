/// One document's occurrences of a term: its number in the index, and each occurrence's property (the index's
/// column) and position there.
struct Posting: Equatable {
    var document: UInt64
    /// `column << 32 | position`, ascending.
    var occurrences: [UInt64]

    static func occurrence(column: Int, position: Int) -> UInt64 { UInt64(column) << 32 | UInt64(UInt32(position)) }
}

/// The postings of a term, kept in blocks of about `targetBytes`: the key is the term, `0x00` and the first
/// document's number (8 bytes, big-endian); the value is a varint count, the last document's distance from the
/// first, then each posting: its document's distance from the one before (the first: 0), then for each column it
/// occurs in a varint `count << 5 | column << 1 | more` and the positions' distances from the one before (`more` says
/// whether another column follows).
///
/// Beside the blocks, the key made of the term and `0x00` alone holds the number of documents that contain the term (a
/// varint), for ranking. Documents are numbered in the order they were indexed, so a new document's postings go at
/// the end of each of its terms' last block.
enum PostingBlock {
    /// The size a block grows to before a new one starts; a single posting larger than that has a block of its own.
    /// Three blocks of a short word fill a page of 4 KiB: LMDB keeps a value of up to about 2 KiB on its key's page.
    static let targetBytes = 1_300
    /// The most properties one full-text index covers: a column is four bits.
    static let maxColumns = 16

    static func termKey(_ term: [UInt8]) -> [UInt8] { term + [0] }

    static func blockKey(_ term: [UInt8], first document: UInt64) -> [UInt8] {
        var key = term
        key.append(0)
        appendBigEndian(document, to: &key)
        return key
    }

    static func appendBigEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    static func readBigEndian(_ bytes: some Collection<UInt8>) -> UInt64? {
        guard bytes.count == 8 else { return nil }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The term and first document of a block's key; `nil` for the key of a term's document count, or a damaged key.
    static func parse(key: UnsafeRawBufferPointer) -> (term: UnsafeRawBufferPointer, first: UInt64)? {
        guard key.count >= 10, key[key.count - 9] == 0,
            let first = readBigEndian(UnsafeRawBufferPointer(rebasing: key[(key.count - 8)...]))
        else { return nil }
        return (UnsafeRawBufferPointer(rebasing: key[..<(key.count - 9)]), first)
    }

    /// A block of `postings` (ascending, at least one).
    static func encode(_ postings: ArraySlice<Posting>) -> [UInt8] {
        var body: [UInt8] = []
        var previous = postings.first?.document ?? 0
        for posting in postings {
            appendPosting(posting, after: previous, to: &body)
            previous = posting.document
        }
        var block: [UInt8] = []
        Varint.append(UInt64(postings.count), to: &block)
        Varint.append(previous - (postings.first?.document ?? 0), to: &block)
        block.append(contentsOf: body)
        return block
    }

    static func appendPosting(_ posting: Posting, after previous: UInt64, to bytes: inout [UInt8]) {
        Varint.append(posting.document - previous, to: &bytes)
        appendOccurrences(posting.occurrences[...], to: &bytes)
    }

    /// A posting's occurrences: for each column they are in, a varint `count << 5 | column << 1 | more` (`more`: 1
    /// when another column's group follows) and the positions' distances from the one before.
    static func appendOccurrences(_ occurrences: ArraySlice<UInt64>, to bytes: inout [UInt8]) {
        var index = occurrences.startIndex
        while index < occurrences.endIndex {
            let column = occurrences[index] >> 32
            var end = index
            while end < occurrences.endIndex, occurrences[end] >> 32 == column { end += 1 }
            let more: UInt64 = end < occurrences.endIndex ? 1 : 0
            Varint.append(UInt64(end - index) << 5 | column << 1 | more, to: &bytes)
            var last: UInt64 = 0
            for occurrence in occurrences[index..<end] {
                let position = occurrence & 0xFFFF_FFFF
                Varint.append(position - last, to: &bytes)
                last = position
            }
            index = end
        }
    }

    /// The postings of a block whose first document is `first`; `nil` when the bytes are not a block. (Read as a
    /// search reads it, by `PostingList.appendBlock`: one reader of the format.)
    static func decode(_ block: UnsafeRawBufferPointer, first: UInt64) -> [Posting]? {
        var list = PostingList()
        guard list.appendBlock(block, first: first, columns: .max) else { return nil }
        return list.documents.indices.map {
            Posting(document: list.documents[$0], occurrences: Array(list.occurrences(at: $0)))
        }
    }

    /// The count and last document of a block, read from its head; `nil` when damaged.
    static func head(_ block: UnsafeRawBufferPointer, first: UInt64) -> (count: UInt64, last: UInt64, bodyStart: Int)? {
        var reader = Varint.Reader(block)
        guard let count = reader.next(), let span = reader.next(), count <= UInt64(block.count) else { return nil }
        let (last, overflow) = first.addingReportingOverflow(span)
        return overflow ? nil : (count, last, reader.offset)
    }
}

extension Varint {
    static func encode(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return bytes
    }

    /// Reads varints one after the other, never past the buffer's end: `nil` at the end or on a varint too long.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var isAtEnd: Bool { offset >= bytes.count }

        mutating func next() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while offset < bytes.count {
                let byte = bytes[offset]
                offset += 1
                guard shift < 64 else { return nil }
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
    }
}
