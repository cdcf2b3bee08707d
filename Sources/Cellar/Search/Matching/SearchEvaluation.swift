import Foundation

/// The terms of one record's indexed texts, with their occurrences: how a record is checked against a search without
/// the index (a record another condition found, a change an observer looks at), with the same answer the index gives.
struct DocumentTerms {
    var occurrences: [[UInt8]: [UInt64]] = [:]
    /// The count of terms: the document's length for ranking.
    var length = 0

    /// The terms of `texts`, one per column of the index (`nil`: the property is not set).
    init(texts: [String?]) {
        for (column, text) in texts.enumerated() {
            guard let text else { continue }
            TextTokenizer.forEachToken(in: text) { token in
                occurrences[token.term, default: []].append(
                    Posting.occurrence(column: column, position: token.position))
                length += 1
            }
        }
    }

    /// The occurrences of `term` in `columns` (a bit per column), ascending.
    func occurrences(of term: SearchQuery.Term, columns: UInt32) -> [UInt64] {
        var found: [UInt64]
        if term.isPrefix {
            found = []
            for (stored, places) in occurrences where stored.starts(with: term.bytes) { found += places }
            found.sort()
        } else {
            found = occurrences[term.bytes] ?? []
        }
        return found.filter { columns & (1 << UInt32($0 >> 32)) != 0 }
    }

    /// Where `phrase` starts in `columns`.
    func starts(of phrase: SearchQuery.Phrase, columns: UInt32) -> [UInt64] {
        let lists = phrase.terms.map { occurrences(of: $0, columns: columns) }
        guard let first = lists.first else { return [] }
        guard lists.count > 1 else { return first }
        return PhraseMatch.starts(
            first: first[...], others: lists.dropFirst().map { $0[...] }, offsets: phrase.terms.map(\.offset))
    }
}

extension SearchQuery {
    /// Whether the document's terms in `columns` satisfy the query.
    func matches(_ document: DocumentTerms, columns: UInt32) -> Bool {
        guard let root else { return false }
        return Self.holds(root, document, columns)
    }

    private static func holds(_ node: Node, _ document: DocumentTerms, _ columns: UInt32) -> Bool {
        switch node {
        case .phrase(let phrase): !document.starts(of: phrase, columns: columns).isEmpty
        case .and(let nodes): nodes.allSatisfy { holds($0, document, columns) }
        case .or(let nodes): nodes.contains { holds($0, document, columns) }
        case .not(let kept, let excluded): holds(kept, document, columns) && !holds(excluded, document, columns)
        }
    }

    /// The documents the query matches, given each phrase's list in the order of `phrases`: intersections for `AND`,
    /// unions for `OR`, differences for `NOT`.
    func documents(_ lists: [PostingList]) -> [UInt64] {
        guard let root else { return [] }
        var next = 0
        return Self.documents(root, lists, &next)
    }

    private static func documents(_ node: Node, _ lists: [PostingList], _ next: inout Int) -> [UInt64] {
        switch node {
        case .phrase:
            defer { next += 1 }
            return lists[next].documents
        case .and(let nodes):
            var result: [UInt64]?
            for node in nodes {
                let found = documents(node, lists, &next)
                result = result.map { intersection($0, found) } ?? found
            }
            return result ?? []
        case .or(let nodes):
            var result: [UInt64] = []
            for node in nodes { result = union(result, documents(node, lists, &next)) }
            return result
        case .not(let kept, let excluded):
            let found = documents(kept, lists, &next)
            return difference(found, documents(excluded, lists, &next))
        }
    }

    static func intersection(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var result: [UInt64] = []
        var (i, j) = (0, 0)
        while i < a.count, j < b.count {
            if a[i] < b[j] {
                i += 1
            } else if a[i] > b[j] {
                j += 1
            } else {
                result.append(a[i])
                i += 1
                j += 1
            }
        }
        return result
    }

    static func union(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        if a.isEmpty { return b }
        if b.isEmpty { return a }
        var result: [UInt64] = []
        result.reserveCapacity(a.count + b.count)
        var (i, j) = (0, 0)
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i] < b[j]) {
                result.append(a[i])
                i += 1
            } else if i == a.count || b[j] < a[i] {
                result.append(b[j])
                j += 1
            } else {
                result.append(a[i])
                i += 1
                j += 1
            }
        }
        return result
    }

    static func difference(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        guard !b.isEmpty else { return a }
        var result: [UInt64] = []
        var j = 0
        for value in a {
            while j < b.count, b[j] < value { j += 1 }
            if j == b.count || b[j] != value { result.append(value) }
        }
        return result
    }
}

/// Okapi BM25 as SQLite's FTS5 computes it (k1 = 1.2, b = 0.75): the sum over the query's phrases of their inverse
/// document frequency times their weighted frequency in the document, damped by the document's length. A phrase in
/// almost every document counts a millionth, not less than nothing. Higher is better (FTS5's `bm25()` is the same
/// number negated).
struct BM25 {
    static let k1 = 1.2
    static let b = 0.75

    /// Each phrase's inverse document frequency.
    let weights: [Double]
    let averageLength: Double

    /// For `documentCount` documents of `totalLength` terms, with each phrase found in `frequencies` of them.
    init(documentCount: UInt64, totalLength: UInt64, frequencies: [Int]) {
        let count = Double(documentCount)
        averageLength = documentCount == 0 ? 1 : max(Double(totalLength) / count, 1)
        weights = frequencies.map { found in
            let idf = log((count - Double(found) + 0.5) / (Double(found) + 0.5))
            return idf > 0 ? idf : 1e-6
        }
    }

    /// A phrase's frequency in a document: its occurrences (`column << 32 | position`), each counted as its column
    /// weighs (1 for a column without a weight).
    static func frequency(of occurrences: some Sequence<UInt64>, columnWeights: [Double]) -> Double {
        var frequency = 0.0
        for occurrence in occurrences {
            let column = Int(occurrence >> 32)
            frequency += column < columnWeights.count ? columnWeights[column] : 1
        }
        return frequency
    }

    /// The score of a document of `length` terms where phrase `i` occurs `frequencies[i]` times (each occurrence
    /// weighted by its column: `frequency(of:columnWeights:)`).
    func score(length: Int, frequencies: [Double]) -> Double {
        let damping = Self.k1 * (1 - Self.b + Self.b * Double(length) / averageLength)
        var sum = 0.0
        for (number, frequency) in frequencies.enumerated() where frequency > 0 {
            sum += weights[number] * frequency * (Self.k1 + 1) / (frequency + damping)
        }
        return sum
    }
}
