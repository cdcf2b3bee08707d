extension Condition {
    /// The text at `path` matches the full-text search `query`: `.matches(\.body, "dog park")` finds the notes whose
    /// body holds both words; `"dog park"` in quotes, the phrase; `par*`, words starting with "par"; `AND`, `OR`,
    /// `NOT` and parentheses combine them (see SQLite's FTS5, whose syntax this is, and the README's search section).
    /// Words are found whatever their case and accents.
    ///
    /// A full-text index covering the property (`.fullText(\.title, \.body)`) answers it from its postings, and a
    /// query with no sort of its own gives the best matches first (BM25, the properties weighted as the index says).
    /// Without such an index the text of each record the query reads is checked, and nothing is ranked.
    public static func matches(_ path: KeyPath<M, String> & Sendable, _ query: String) -> Condition {
        search(path, query) { [reader = PropertyReader(path)] in reader.read($0) }
    }

    /// The optional text at `path` matches the full-text search `query`; `nil` matches nothing.
    public static func matches(_ path: KeyPath<M, String?> & Sendable, _ query: String) -> Condition {
        search(path, query) { [reader = PropertyReader(path)] in reader.read($0) }
    }

    /// Any property of the model's full-text index matches the search `query` (the first full-text index the
    /// `Schema` declares): `.matches("dog park")` finds "dog" in the title and "park" in the body. Without a full-text
    /// index the query fails with `StoreError.invalidSchema`.
    public static func matches(_ query: String) -> Condition {
        let search = SearchQuery(query)
        return Condition(
            path: nil, description: "text matches \(query.debugDescription)", ranges: nil, rank: .max, search: search
        ) { value in
            guard let index = M.schema.fullTextIndexes.first else { return false }
            return search.matches(DocumentTerms(texts: index.texts(of: value)), columns: index.columns(for: nil))
        }
    }

    private static func search<V>(
        _ path: KeyPath<M, V> & Sendable, _ query: String, text: @escaping @Sendable (M) -> String?
    ) -> Condition {
        let search = SearchQuery(query)
        return Condition(
            path: path, description: "\(name(path)) matches \(query.debugDescription)", ranges: nil, rank: .max,
            search: search
        ) { value in
            guard let text = text(value) else { return false }
            return search.matches(DocumentTerms(texts: [text]), columns: 1)
        }
    }
}

extension QueryField where V == String {
    /// The text matches the full-text search `query` (`$0.body.matches("dog park")`): see
    /// `Condition.matches(_:_:)`.
    public func matches(_ query: String) -> Condition<M> { .matches(keyPath, query) }
}

extension QueryField where V == String? {
    /// The optional text matches the full-text search `query`; `nil` matches nothing.
    public func matches(_ query: String) -> Condition<M> { .matches(keyPath, query) }
}
