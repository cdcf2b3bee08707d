/// The names of a store's LMDB databases: made here, and read everywhere else from the stored schema.
enum DatabaseName {
    /// A model's records: `r/Dog`.
    static func records(_ model: String) -> String { "r/" + model }
    /// An index of a model: `i/Dog.age`, or `u/Person.email` for a unique one.
    static func index(_ model: String, _ index: String, unique: Bool) -> String {
        (unique ? "u/" : "i/") + model + "." + index
    }
    /// The backlinks of a model's link: `b/Person.dogs`, target key → keys of the records linking to it.
    static func backlinks(_ model: String, _ link: String) -> String { "b/" + model + "." + link }
    /// The postings of a full-text index: `t/Note.title+body`, each word → the documents that hold it.
    static func fullTextPostings(_ model: String, _ index: String) -> String { "t/" + model + "." + index }
    /// The documents of a full-text index: `d/Note.title+body`, their numbers, lengths and records.
    static func fullTextDocuments(_ model: String, _ index: String) -> String { "d/" + model + "." + index }
}

/// One index as the stored schema describes it: enough to name, rebuild and check it without the model's type.
struct StoredIndex: Hashable, Sendable, Codable {
    /// The index's name (`age`, `lastName+firstName`, `name~c`, `tags[]`).
    var name: String
    var database: String
    /// The property path of each component, in order (`[["lastName"], ["firstName"]]`).
    var paths: [[String]]
    var isUnique: Bool
    /// Whether the index holds an entry per element of a list.
    var isMultiEntry: Bool
    /// For an index of folded text: `c` (case), `d` (diacritics) or `cd`.
    var folding: String?
    /// For a full-text index: its documents' database, weights and tokenizer.
    var fullText: StoredFullText? = nil

    /// The index as change messages name it: `age`, `unique email`, `full-text title+body`.
    var label: String { (isUnique ? "unique " : fullText != nil ? "full-text " : "") + name }
}

/// One link as the stored schema describes it: its target and rules, so that deletes follow it and verifiers
/// check it whatever models a configuration names.
struct StoredLink: Hashable, Sendable, Codable {
    /// The link property's path (`dogs`).
    var property: String
    /// The stored name of the target model.
    var target: String
    /// The backlink database.
    var database: String
    var deleteRule: String
    var targetDeleteRule: String
    var isExclusive: Bool
    var ownsTargets: Bool
    var allowsDangling: Bool

    /// The link and its rules as a `Schema` declares them, for change messages and `cellar info`:
    /// `dogs → Dog (deleteRule: .cascade, targetDeleteRule: .removeLink, exclusive: true)`.
    var label: String {
        let flags = [("exclusive", isExclusive), ("ownsTargets", ownsTargets), ("allowsDangling", allowsDangling)]
        let rules =
            ["deleteRule: .\(deleteRule)", "targetDeleteRule: .\(targetDeleteRule)"]
            + flags.filter(\.1).map { "\($0.0): true" }
        return "\(property) → \(target) (\(rules.joined(separator: ", ")))"
    }

    /// Reads a link of a schema stored before links were described field by field, from its words.
    init?(legacy words: String, model: String) {
        let parts = words.split(separator: " ").map(String.init)
        guard parts.count >= 5, parts[1] == "→" else { return nil }
        self.init(
            property: parts[0], target: parts[2], database: DatabaseName.backlinks(model, parts[0]),
            deleteRule: parts[3], targetDeleteRule: parts[4], isExclusive: parts.contains("exclusive"),
            ownsTargets: parts.contains("owns"), allowsDangling: parts.contains("dangling"))
    }

    init(
        property: String, target: String, database: String, deleteRule: String, targetDeleteRule: String,
        isExclusive: Bool, ownsTargets: Bool, allowsDangling: Bool
    ) {
        self.property = property
        self.target = target
        self.database = database
        self.deleteRule = deleteRule
        self.targetDeleteRule = targetDeleteRule
        self.isExclusive = isExclusive
        self.ownsTargets = ownsTargets
        self.allowsDangling = allowsDangling
    }
}

extension StoredIndex {
    /// Reads an index of a schema stored before indexes were described field by field, from its label.
    init(legacy label: String, model: String) {
        let isUnique = label.hasPrefix("unique ")
        let name = isUnique ? String(label.dropFirst("unique ".count)) : label
        var stem = Substring(name)
        var folding: String?
        if let tilde = stem.lastIndex(of: "~") {
            folding = String(stem[stem.index(after: tilde)...])
            stem = stem[..<tilde]
        }
        let isMultiEntry = stem.hasSuffix("[]")
        if isMultiEntry { stem = stem.dropLast(2) }
        self.init(
            name: name, database: DatabaseName.index(model, name, unique: isUnique),
            paths: stem.split(separator: "+").map { $0.split(separator: ".").map(String.init) }, isUnique: isUnique,
            isMultiEntry: isMultiEntry, folding: folding)
    }
}

extension StoredLink {
    /// The keys of the records a record links to through this link, read without the model's type from the record's
    /// values and the link property's stored shape; `nil` when that shape is not a link or a list of links.
    func targetKeys(in record: RecordValue, shape: ValueShape?) throws -> [[UInt8]]? {
        let path = property.split(separator: ".").map(String.init)
        // A link's stored form is its target's id, whose key is the target's primary key.
        func key(of id: RecordValue) throws -> [UInt8] {
            var key: [UInt8] = []
            try id.appendKey(to: &key)
            return key
        }
        switch shape {
        case .link(target):
            guard let id = record.value(at: path), id != .null else { return [] }
            return [try key(of: id)]
        case .list(.link(target)):
            guard case .unkeyed(let ids) = record.value(at: path) ?? .unkeyed([]) else {
                throw KeyEncoding.Failure.unsupported("the link list is not a list")
            }
            return try ids.map(key(of:))
        default: return nil
        }
    }
}
