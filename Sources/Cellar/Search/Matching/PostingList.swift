/// The documents a term or phrase occurs in, ascending, with its occurrences in each (`column << 32 | position`,
/// ascending): flat arrays, not an array per document, since a common word's list holds most of a store.
struct PostingList {
    var documents: [UInt64] = []
    /// Where each document's occurrences start in `occurrences`; one more than `documents`, the last its end.
    var starts: [Int] = [0]
    var occurrences: [UInt64] = []

    var count: Int { documents.count }

    func occurrences(at index: Int) -> ArraySlice<UInt64> { occurrences[starts[index]..<starts[index + 1]] }

    mutating func append(document: UInt64, occurrences new: some Sequence<UInt64>) {
        documents.append(document)
        occurrences.append(contentsOf: new)
        starts.append(occurrences.count)
    }

    /// Appends the postings of a block whose first document is `first`, keeping the occurrences in `columns` (a
    /// bit per column) and leaving out documents with none there. Returns `false` when the bytes are not a block.
    mutating func appendBlock(_ block: UnsafeRawBufferPointer, first: UInt64, columns: UInt32) -> Bool {
        var reader = Varint.Reader(block)
        guard let count = reader.next(), reader.next() != nil, count <= UInt64(block.count) else { return false }
        var document = first
        for _ in 0..<count {
            guard let delta = reader.next() else { return false }
            let (sum, overflow) = document.addingReportingOverflow(delta)
            guard !overflow else { return false }
            document = sum
            let before = occurrences.count
            var more = true
            while more {
                guard let head = reader.next() else { return false }
                let column = head >> 1 & 0xF
                let positions = head >> 5
                more = head & 1 == 1
                guard positions > 0, positions <= UInt64(block.count) else { return false }
                let kept = columns & (1 << UInt32(column)) != 0
                var position: UInt64 = 0
                for _ in 0..<positions {
                    guard let step = reader.next(), step <= 0xFFFF_FFFF - position else { return false }
                    position += step
                    if kept { occurrences.append(column << 32 | position) }
                }
            }
            if occurrences.count > before {
                // Documents come in ascending order within a term: a block that says otherwise is damaged.
                if let last = documents.last, last >= document { return false }
                documents.append(document)
                starts.append(occurrences.count)
            }
        }
        return true
    }

    /// The union of several terms' lists (the terms a prefix matches): each document once, its occurrences merged.
    static func union(_ lists: [PostingList]) -> PostingList {
        guard lists.count > 1 else { return lists.first ?? PostingList() }
        var entries: [(document: UInt64, list: Int, index: Int)] = []
        for (number, list) in lists.enumerated() {
            for index in list.documents.indices { entries.append((list.documents[index], number, index)) }
        }
        entries.sort { $0.document < $1.document }
        var merged = PostingList()
        var position = 0
        while position < entries.count {
            let document = entries[position].document
            var occurrences: [UInt64] = []
            while position < entries.count, entries[position].document == document {
                let entry = entries[position]
                occurrences.append(contentsOf: lists[entry.list].occurrences(at: entry.index))
                position += 1
            }
            occurrences.sort()
            merged.append(document: document, occurrences: occurrences)
        }
        return merged
    }

    /// The documents where the terms follow each other at `offsets` from the first (the lists in the phrase's order),
    /// with the phrase's starts as occurrences.
    static func phrase(_ lists: [PostingList], offsets: [Int]) -> PostingList {
        guard lists.count > 1, let first = lists.first else { return lists.first ?? PostingList() }
        var cursors = Array(repeating: 0, count: lists.count)
        var result = PostingList()
        documents: for index in first.documents.indices {
            let document = first.documents[index]
            for other in 1..<lists.count {
                let list = lists[other]
                while cursors[other] < list.count, list.documents[cursors[other]] < document { cursors[other] += 1 }
                guard cursors[other] < list.count, list.documents[cursors[other]] == document else {
                    continue documents
                }
            }
            let starts = PhraseMatch.starts(
                first: first.occurrences(at: index),
                others: (1..<lists.count).map { lists[$0].occurrences(at: cursors[$0]) }, offsets: offsets)
            if !starts.isEmpty { result.append(document: document, occurrences: starts) }
        }
        return result
    }
}

/// Where a phrase starts among its terms' occurrences in one document.
enum PhraseMatch {
    /// The occurrences of the first term that the others follow at `offsets` (`offsets[0]` is the first's, 0), in
    /// the same column.
    static func starts(first: ArraySlice<UInt64>, others: [ArraySlice<UInt64>], offsets: [Int]) -> [UInt64] {
        var found: [UInt64] = []
        for start in first {
            var holds = true
            for (number, other) in others.enumerated() {
                let wanted = start + UInt64(offsets[number + 1])
                // Still in the start's column: a position never reaches 2^32.
                guard wanted >> 32 == start >> 32, contains(other, wanted) else {
                    holds = false
                    break
                }
            }
            if holds { found.append(start) }
        }
        return found
    }

    /// Binary search of an ascending slice.
    static func contains(_ values: ArraySlice<UInt64>, _ value: UInt64) -> Bool {
        var low = values.startIndex
        var high = values.endIndex
        while low < high {
            let middle = (low + high) / 2
            if values[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < values.endIndex && values[low] == value
    }
}
