/// One property of a full-text index, and its weight in ranking: `.field(\.title, weight: 2)` counts a word in the
/// title as two in the body.
public struct FullTextField<M: Model>: Sendable {
    /// The property's name.
    let name: String
    let weight: Double
    // Key paths are immutable values; `PartialKeyPath` is just not declared `Sendable`.
    nonisolated(unsafe) let path: PartialKeyPath<M>
    let read: @Sendable (M) -> String?

    /// A text property, counted `weight` times in ranking.
    public static func field(_ path: KeyPath<M, String> & Sendable, weight: Double = 1) -> FullTextField {
        let reader = PropertyReader(path)
        return FullTextField(name: Index<M>.propertyName(path), weight: weight, path: path) { reader.read($0) }
    }

    /// An optional text property, counted `weight` times in ranking; `nil` holds no words.
    public static func field(_ path: KeyPath<M, String?> & Sendable, weight: Double = 1) -> FullTextField {
        let reader = PropertyReader(path)
        return FullTextField(name: Index<M>.propertyName(path), weight: weight, path: path) { reader.read($0) }
    }
}

/// A full-text index as a model's `Schema` declares it: its properties (the index's columns, in order) and their
/// weights.
struct FullTextIndex<M: Model>: Sendable {
    let name: String
    let fields: [FullTextField<M>]

    func postingsDatabase(model: String) -> String { DatabaseName.fullTextPostings(model, name) }
    func documentsDatabase(model: String) -> String { DatabaseName.fullTextDocuments(model, name) }

    /// The texts of `value`, one per column.
    func texts(of value: M) -> [String?] { fields.map { $0.read(value) } }

    /// The columns that hold the property `path` names, as bits; every column when `path` is `nil`.
    func columns(for path: PartialKeyPath<M>?) -> UInt32 {
        guard let path else { return fields.count >= 32 ? .max : (1 << UInt32(fields.count)) - 1 }
        var columns: UInt32 = 0
        for (column, field) in fields.enumerated() where field.path == path { columns |= 1 << UInt32(column) }
        return columns
    }

    var weights: [Double] { fields.map(\.weight) }

    /// What the stored postings depend on: the tokenizer and the properties, in column order. An index stored with
    /// another definition is built again at open (weights only rank, and may change freely).
    var definition: [UInt8] {
        Array((StoredFullText.tokenizer + "|" + fields.map(\.name).joined(separator: ",")).utf8)
    }

    /// The index as the stored schema describes it.
    func descriptor(model: String) -> StoredIndex {
        StoredIndex(
            name: name, database: postingsDatabase(model: model),
            paths: fields.map { $0.name.split(separator: ".").map(String.init) }, isUnique: false, isMultiEntry: false,
            folding: "cd",
            fullText: StoredFullText(
                documents: documentsDatabase(model: model), weights: weights, tokenizer: StoredFullText.tokenizer))
    }
}

/// A full-text index as the stored schema describes it, beside its postings database (`StoredIndex.database`).
struct StoredFullText: Hashable, Sendable, Codable {
    /// The database of its documents.
    var documents: String
    var weights: [Double]
    /// How its text was cut into terms: an index made another way is rebuilt.
    var tokenizer: String

    /// The tokenizer of this version: words folded for case and diacritics, pairs of characters for scripts without
    /// spaces, emoji.
    static let tokenizer = "words-cd+pairs+emoji/1, postings/1"
}

extension Index {
    /// A full-text index of text properties, searched with `.matches(\.body, "dog park")` and ranked by BM25:
    /// `.fullText(\.title, \.body)`. Its databases are `t/<Model>.<name>` (the postings of each word) and
    /// `d/<Model>.<name>` (the documents' lengths), named after the properties (`title+body`) unless `name` is given.
    public static func fullText(_ paths: (KeyPath<M, String> & Sendable)..., name: String? = nil) -> Index {
        fullText(fields: paths.map { FullTextField.field($0) }, name: name)
    }

    /// A full-text index of properties with weights, or optional ones: `.fullText(.field(\.title, weight: 2),
    /// .field(\.notes))`.
    public static func fullText(_ fields: FullTextField<M>..., name: String? = nil) -> Index {
        fullText(fields: fields, name: name)
    }

    private static func fullText(fields: [FullTextField<M>], name: String?) -> Index {
        let definition = FullTextIndex(name: name ?? fields.map(\.name).joined(separator: "+"), fields: fields)
        return Index(fullText: definition)
    }
}

/// One full-text index as a write transaction uses it: how to read a record's texts from a pointer to it, so that a
/// write needs no generic code, and the databases it keeps.
struct FullTextMaker {
    let storage: FullTextStorage
    /// The postings of the records this transaction adds, not written yet.
    let buffer: FullTextBuffer
    let texts: (UnsafeRawPointer) -> [String?]

    init<M: Model>(_ index: FullTextIndex<M>, storage: FullTextStorage) {
        self.storage = storage
        self.buffer = FullTextBuffer(storage: storage)
        self.texts = { record in index.texts(of: record.assumingMemoryBound(to: M.self).pointee) }
    }
}
