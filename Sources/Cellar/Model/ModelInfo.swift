import LMDB
import Synchronization

/// What a store keeps about one model: its databases and its key dictionary.
final class ModelInfo: Sendable {
    let name: String
    let records: Database
    /// The databases of the schema's indexes, in the schema's order.
    let indexes: [Database]
    /// The names of those databases, to tell whether two configurations agree on the model.
    let indexNames: [String]
    /// Whether the schema numbers ids from a sequence (read once: a default schema is rebuilt on each access).
    let numbersIDs: Bool
    private let committedDictionary: Mutex<KeyDictionary>

    init(
        name: String, records: Database, indexes: [Database], indexNames: [String], numbersIDs: Bool,
        dictionary: KeyDictionary
    ) {
        self.name = name
        self.records = records
        self.indexes = indexes
        self.indexNames = indexNames
        self.numbersIDs = numbersIDs
        self.committedDictionary = Mutex(dictionary)
    }

    var dictionaryKey: [UInt8] { Array("keys/\(name)".utf8) }
    var sequenceKey: [UInt8] { Array("seq/\(name)".utf8) }

    /// The newest committed key dictionary this process knows.
    var dictionary: KeyDictionary { committedDictionary.withLock { $0 } }

    /// Adopts a committed dictionary when it knows more names than the current one.
    func publish(_ newer: KeyDictionary) {
        committedDictionary.withLock { if newer.names.count > $0.names.count { $0 = newer } }
    }
}
