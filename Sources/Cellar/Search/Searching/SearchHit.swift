/// One result of a search, for a search screen: the record, its score, and snippets of its text with the words
/// that matched (`Query.searchResults()`).
public struct SearchHit<M: Model>: Sendable {
    /// The record.
    public let value: M
    /// Its BM25 score: higher is a better match (SQLite's `bm25()` gives the same number negated). `0` when the
    /// query has no search a full-text index answers.
    public let score: Double
    let query: SearchQuery?

    init(value: M, score: Double, query: SearchQuery?) {
        self.value = value
        self.score = score
        self.query = query
    }

    /// A record found by the search `query` elsewhere (a `LiveResults` of the search, say), for its snippets: the
    /// words of `query` are the ones highlighted. Its `score` is `0`.
    public init(_ value: M, searching query: String) {
        self.init(value: value, score: 0, query: SearchQuery(query))
    }

    /// A window of about `words` words of the text at `path`, the one holding the most matched words, with those
    /// words' ranges.
    public func snippet(of path: KeyPath<M, String> & Sendable, words: Int = 12) -> Snippet {
        Snippet(value[keyPath: path], query: query, words: words)
    }

    /// A window of the optional text at `path` (see `snippet(of:words:)`); `nil` when it is not set.
    public func snippet(of path: KeyPath<M, String?> & Sendable, words: Int = 12) -> Snippet? {
        value[keyPath: path].map { Snippet($0, query: query, words: words) }
    }
}

/// A window of a text with the words a search matched: `text` is the window, `highlights` the matched words'
/// ranges in it. `marked()` writes it as SQLite's `snippet()` does; a SwiftUI view makes an `AttributedString` of it.
public struct Snippet: Sendable, Hashable {
    /// The window of the text.
    public let text: String
    /// The ranges of `text` that matched, in order, not overlapping.
    public let highlights: [Range<String.Index>]
    /// Whether the window starts after the text's start.
    public let isCutAtStart: Bool
    /// Whether the window ends before the text's end.
    public let isCutAtEnd: Bool

    /// The window with each matched word between `open` and `close`, and `ellipsis` where it was cut:
    /// `…walked to the [park] with the [dog]…`.
    public func marked(open: String = "[", close: String = "]", ellipsis: String = "…") -> String {
        var result = isCutAtStart ? ellipsis : ""
        var index = text.startIndex
        for range in highlights {
            result += text[index..<range.lowerBound] + open + text[range] + close
            index = range.upperBound
        }
        result += text[index...]
        return result + (isCutAtEnd ? ellipsis : "")
    }

    init(_ full: String, query: SearchQuery?, words: Int) {
        let tokens = TextTokenizer.tokens(full)
        let terms = query?.phrases.flatMap(\.terms) ?? []
        let matched = tokens.map { token in
            terms.contains { $0.isPrefix ? token.term.starts(with: $0.bytes) : token.term == $0.bytes }
        }
        let width = max(1, words)
        // The window of `width` tokens with the most matches, the earliest among equals.
        var best = 0
        var bestCount = -1
        var count = 0
        for index in tokens.indices {
            if matched[index] { count += 1 }
            if index >= width, matched[index - width] { count -= 1 }
            if index >= width - 1 || index == tokens.count - 1, count > bestCount {
                bestCount = count
                best = max(0, index - width + 1)
            }
        }
        // The matches in the middle of their window: as many words before the first as after the last.
        if let first = (best..<min(tokens.count, best + width)).first(where: { matched[$0] }),
            let last = (best..<min(tokens.count, best + width)).last(where: { matched[$0] })
        {
            let slack = width - (last - first + 1)
            best = max(0, min(tokens.count - width, first - (slack + 1) / 2))
        }
        let window = tokens.isEmpty ? 0..<0 : best..<min(tokens.count, best + width)
        let lower =
            window.lowerBound == 0 || tokens.isEmpty
            ? full.startIndex : tokens[window.lowerBound].range(in: full).lowerBound
        let upper =
            tokens.isEmpty || window.upperBound == tokens.count
            ? full.endIndex : tokens[window.upperBound - 1].range(in: full).upperBound
        let text = String(full[lower..<upper])
        // Matched words' ranges, merged where they touch (the pairs of a run overlap), moved into `text`.
        var merged: [Range<String.Index>] = []
        for index in window where matched[index] {
            let range = tokens[index].range(in: full)
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        let offset = full.utf8.distance(from: full.startIndex, to: lower)
        highlights = merged.compactMap { range in
            let start = full.utf8.distance(from: full.startIndex, to: range.lowerBound) - offset
            let end = full.utf8.distance(from: full.startIndex, to: range.upperBound) - offset
            guard let from = text.utf8.index(text.startIndex, offsetBy: start, limitedBy: text.endIndex),
                let to = text.utf8.index(text.startIndex, offsetBy: end, limitedBy: text.endIndex)
            else { return nil }
            return from..<to
        }
        self.text = text
        isCutAtStart = lower > full.startIndex
        isCutAtEnd = upper < full.endIndex
    }
}

extension Query {
    /// The matching records with their scores, in the query's order (best first unless it sorts otherwise), for a
    /// search screen: `hit.score`, `hit.snippet(of: \.body).marked()`.
    public func searchResults() throws(StoreError) -> [SearchHit<M>] {
        try run { (context) throws(StoreError) in
            let info = try context.store.info(for: M.self)
            let values = try execute(in: context, info: info)
            let scores = try searchScores(values, in: context, info: info)
            let query = firstSearch
            return values.indices.map { SearchHit(value: values[$0], score: scores?[$0] ?? 0, query: query) }
        }
    }
}
