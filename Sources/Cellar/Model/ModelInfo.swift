import LMDB
import Synchronization

/// What a store keeps about one model: its databases and its key dictionary.
final class ModelInfo: Sendable {
    let name: String
    let records: Database
    /// The databases of the schema's indexes, in the schema's order.
    let indexes: [Database]
    /// The schema's links, in the schema's order, each with its backlink database.
    let links: [LinkInfo]
    /// The databases of the schema's full-text indexes, in the schema's order.
    let fullText: [FullTextDatabases]
    /// The names of the index databases and the links with their rules, to tell whether two configurations agree
    /// on the model.
    let signature: [String]
    /// Whether the schema numbers ids from a sequence (read once: a default schema is rebuilt on each access).
    let numbersIDs: Bool
    /// What the relationship code does with this model's records without knowing its type.
    let operations: ModelOperations
    /// The Swift type registered for the model: the one `operations` decodes records as.
    let type: ObjectIdentifier
    private let committedDictionary: Lock<KeyDictionary>
    /// Set once the first write of the model through this store was looked at: a `@Record` model's record compared
    /// with the one `Codable` writes, a plain model's tied to its stored properties (`CodableFields`). The check
    /// costs one load on every other write.
    let firstWriteChecked: Atomic<Bool>

    init(
        name: String, records: Database, indexes: [Database], links: [LinkInfo], fullText: [FullTextDatabases] = [],
        signature: [String],
        numbersIDs: Bool, operations: ModelOperations, type: ObjectIdentifier,
        dictionary: KeyDictionary
    ) {
        self.type = type
        self.firstWriteChecked = Atomic(false)
        self.name = name
        self.records = records
        self.indexes = indexes
        self.links = links
        self.fullText = fullText
        self.signature = signature
        self.numbersIDs = numbersIDs
        self.operations = operations
        self.committedDictionary = Lock(dictionary)
    }

    var dictionaryKey: [UInt8] { Self.dictionaryKey(of: name) }
    /// Where `_meta` keeps the key dictionary of the model stored as `name`.
    static func dictionaryKey(of name: String) -> [UInt8] { Array("keys/\(name)".utf8) }
    var sequenceKey: [UInt8] { Array("seq/\(name)".utf8) }

    /// Whether reading the stored record before a write is needed, to find the index and backlink entries it moves.
    var hasDerivedData: Bool { !indexes.isEmpty || !links.isEmpty || !fullText.isEmpty }

    /// The newest committed key dictionary this process knows.
    var dictionary: KeyDictionary { committedDictionary.withLock { $0 } }

    /// Adopts a committed dictionary when it knows more names than the current one.
    func publish(_ newer: KeyDictionary) {
        committedDictionary.withLock { if newer.names.count > $0.names.count { $0 = newer } }
    }
}

/// The two databases of one full-text index (`FullTextStorage`).
struct FullTextDatabases: Sendable {
    /// The postings database's name (`t/Note.title+body`), for messages.
    let name: String
    let postings: Database
    let documents: Database
}

/// A stored link from a model the configuration does not name, found in the stored schema: a delete of one of its
/// targets cannot follow its rules, and is refused while it links.
struct ForeignLink: Sendable {
    let link: StoredLink
    /// The stored name of the model whose records hold the link.
    let model: String
    let database: Database
}

/// One declared link of a model, as a store holds it: its backlink database and its rules, without the model's type.
final class LinkInfo: Sendable {
    /// The stored name of the model whose records hold the link.
    let model: String
    let name: String
    /// The link's position in its schema's `links`.
    let position: Int
    /// `b/<model>.<name>`: target key → keys of the records linking to it.
    let database: Database
    let deleteRule: DeleteRule
    let targetDeleteRule: TargetDeleteRule
    let isExclusive: Bool
    let ownsTargets: Bool
    let allowsDangling: Bool
    let targetType: ObjectIdentifier
    let targetName: String

    init<M: Model>(_ link: Relationship<M>, model: String, position: Int, database: Database) {
        self.model = model
        self.name = link.name
        self.position = position
        self.database = database
        self.deleteRule = link.deleteRule
        self.targetDeleteRule = link.targetDeleteRule
        self.isExclusive = link.isExclusive
        self.ownsTargets = link.ownsTargets
        self.allowsDangling = link.allowsDangling
        self.targetType = ObjectIdentifier(link.targetType)
        self.targetName = link.targetName
    }

    /// `Person.dogs`, for messages.
    var label: String { model + "." + name }
    var databaseName: String { DatabaseName.backlinks(model, name) }
}
