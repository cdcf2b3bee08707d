import Foundation
import LMDB
import Synchronization

/// What a store keeps about one model: its databases and its key dictionary.
final class ModelInfo: Sendable {
    let name: String
    let records: Database
    /// The databases of the schema's indexes, in the schema's order.
    let indexes: [Database]
    /// Whether the schema numbers ids from a sequence (read once: a default schema is rebuilt on each access).
    let numbersIDs: Bool
    private let committedDictionary: Mutex<KeyDictionary>

    init(name: String, records: Database, indexes: [Database], numbersIDs: Bool, dictionary: KeyDictionary) {
        self.name = name
        self.records = records
        self.indexes = indexes
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

/// One open store file, shared by every `Store` opened on its folder in this process (LMDB forbids opening a
/// file twice in one process).
final class StoreCore: Sendable {
    let environment: Environment
    let directory: URL
    let meta: Database
    /// Models by stored name, shared across `Store` values opened on this folder with different configurations.
    private let modelsByName: Mutex<[String: ModelInfo]>
    /// Serialises `write` calls made with `await`, off the caller's thread.
    let writerQueue: DispatchQueue
    /// A temporary folder removed when the core closes (`Store.inMemory`).
    let removeOnClose: Bool

    static let formatKey = Array("format".utf8)
    static let versionKey = Array("version".utf8)
    static let formatVersion: UInt8 = 1

    private init(environment: Environment, directory: URL, meta: Database, removeOnClose: Bool) {
        self.environment = environment
        self.directory = directory
        self.meta = meta
        self.removeOnClose = removeOnClose
        self.modelsByName = Mutex([:])
        self.writerQueue = DispatchQueue(label: "Cellar writer \(directory.path)", qos: .userInitiated)
        writerQueue.setSpecific(key: Self.writerQueueKey, value: ())
    }

    /// Marks the writer queue, so code (and tests) can tell whether they run on it.
    static let writerQueueKey = DispatchSpecificKey<Void>()

    deinit {
        if removeOnClose { try? FileManager.default.removeItem(at: directory) }
    }

    var path: String { directory.path }

    func error(_ error: LMDBError, _ operation: String) -> StoreError {
        StoreError(error, path: path, operation: operation)
    }

    // MARK: Opening

    private static let openCores = Mutex<[String: WeakCore]>([:])

    private struct WeakCore: @unchecked Sendable {
        weak var core: StoreCore?
    }

    /// The open core for `directory`, or a newly opened one.
    static func open(
        directory: URL, configuration: Configuration, removeOnClose: Bool = false
    ) throws(StoreError) -> StoreCore {
        let key = directory.standardizedFileURL.resolvingSymlinksInPath().path
        return try openCores.withLock { (cores) throws(StoreError) -> StoreCore in
            if let core = cores[key]?.core { return core }
            let core = try StoreCore(opening: directory, configuration: configuration, removeOnClose: removeOnClose)
            cores[key] = WeakCore(core: core)
            return core
        }
    }

    static func isOpen(_ directory: URL) -> Bool {
        let key = directory.standardizedFileURL.resolvingSymlinksInPath().path
        return openCores.withLock { $0[key]?.core != nil }
    }

    private convenience init(
        opening directory: URL, configuration: Configuration, removeOnClose: Bool
    ) throws(StoreError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .io(
                errno: (error as NSError).code == NSFileWriteNoPermissionError ? EACCES : EIO,
                operation: "create the folder", path: directory.path)
        }
        let environment: Environment
        do {
            environment = try Environment(path: directory.path, options: configuration.environmentOptions)
        } catch {
            throw StoreError(error, path: directory.path, operation: "open the store")
        }
        let meta: Database
        do {
            meta = try environment.write { try $0.createDatabase(named: "_meta") }
        } catch let error as LMDBError {
            throw StoreError(error, path: directory.path, operation: "open the store")
        } catch {
            throw .lmdb(code: 0, message: "\(error)")
        }
        self.init(environment: environment, directory: directory, meta: meta, removeOnClose: removeOnClose)
    }

    /// Checks the file's format and schema version and opens each model's databases, in one write transaction.
    func register(_ configuration: Configuration) throws(StoreError) -> [ObjectIdentifier: ModelInfo] {
        do {
            let opened = try environment.write { txn in
                try checkFormat(txn, schemaVersion: configuration.schemaVersion)
                var infos: [ObjectIdentifier: ModelInfo] = [:]
                var names: Set<String> = []
                for type in configuration.models {
                    let info = try register(type, in: txn)
                    guard names.insert(info.name).inserted else {
                        throw StoreError.duplicateModelName(model: info.name)
                    }
                    infos[ObjectIdentifier(type)] = info
                }
                return infos
            }
            // Handles opened in a transaction are valid only once it has committed: share them only now.
            return modelsByName.withLock { models in
                opened.mapValues { info in
                    if let known = models[info.name] { return known }
                    models[info.name] = info
                    return info
                }
            }
        } catch let error as StoreError {
            throw error
        } catch let error as LMDBError {
            throw self.error(error, "open the store")
        } catch {
            throw .lmdb(code: 0, message: "\(error)")
        }
    }

    private func checkFormat(_ txn: WriteTransaction, schemaVersion: Int) throws {
        if let format = try txn.get(meta, key: Self.formatKey) {
            guard format.count == 1, format[0] <= Self.formatVersion else {
                throw StoreError.incompatibleFile(path: path, reason: "it was written by a newer version of Cellar")
            }
        } else {
            try txn.put(meta, key: Self.formatKey, value: [Self.formatVersion])
        }
        if let stored = try txn.get(meta, key: Self.versionKey) {
            guard stored.count == 8 else {
                throw StoreError.corruptedFile(path: path, reason: "the stored schema version is damaged")
            }
            let storedVersion = Int(Int64(littleEndian: stored.loadUnaligned(as: Int64.self)))
            guard storedVersion <= schemaVersion else {
                throw StoreError.schemaVersionTooLow(stored: storedVersion, requested: schemaVersion)
            }
            if storedVersion == schemaVersion { return }
        }
        try txn.put(
            meta, key: Self.versionKey, value: withUnsafeBytes(of: Int64(schemaVersion).littleEndian, Array.init))
    }

    private func register<M: Model>(_ type: M.Type, in txn: WriteTransaction) throws -> ModelInfo {
        let schema = M.schema
        let name = schema.name
        if let known = modelsByName.withLock({ $0[name] }) { return known }
        let records = try txn.createDatabase(named: "r/\(name)")
        var dictionary = KeyDictionary.empty
        if let stored = try txn.get(meta, key: Array("keys/\(name)".utf8)) {
            guard let parsed = KeyDictionary.deserialize(stored) else {
                throw StoreError.corruptedFile(path: path, reason: "the key dictionary of \(name) is damaged")
            }
            dictionary = parsed
        }
        let indexes = try openIndexes(of: M.self, records: records, dictionary: dictionary, in: txn)
        return ModelInfo(
            name: name, records: records, indexes: indexes, numbersIDs: schema.sequence != nil, dictionary: dictionary)
    }

    /// Opens the schema's index databases, building any that are new from the records already stored, and deletes
    /// the databases of indexes the schema no longer declares. The list of a model's index databases is kept in
    /// `_meta` under `indexes/<Model>`.
    private func openIndexes<M: Model>(
        of type: M.Type, records: Database, dictionary: KeyDictionary, in txn: WriteTransaction
    ) throws -> [Database] {
        let model = M.schema.name
        let listKey = Array("indexes/\(model)".utf8)
        let declared = M.schema.indexes.map { $0.databaseName(model: model) }
        let stored =
            try txn.get(meta, key: listKey).map { String(decoding: $0, as: UTF8.self) }
            .map { $0.split(separator: "\n").map(String.init) } ?? []
        for name in stored where !declared.contains(name) {
            if let removed = try txn.openDatabase(named: name) { try txn.drop(removed) }
        }
        var databases: [Database] = []
        var toBuild: [(Index<M>, Database)] = []
        for (index, name) in zip(M.schema.indexes, declared) {
            let isNew = try txn.openDatabase(named: name) == nil || !stored.contains(name)
            let database = try txn.createDatabase(named: name, flags: .duplicateSort)
            if isNew {
                try txn.empty(database)
                toBuild.append((index, database))
            }
            databases.append(database)
        }
        if !toBuild.isEmpty {
            let decoder = RecordDecoder()
            let writer = IndexWriter(model: model, maxKeySize: environment.maxKeySize, path: path)
            try txn.withCursor(records) { cursor in
                var entry = try cursor.first()
                while let (key, bytes) = entry {
                    let value: M
                    do {
                        value = try decoder.decode(M.self, from: bytes, dictionary: dictionary)
                    } catch let error as DecodingError {
                        throw StoreError(error, model: model, id: KeyEncoding.describe(key))
                    }
                    let primaryKey = Array(key)
                    for (index, database) in toBuild {
                        let entry = try writer.entry(index, of: value)
                        if entry.mustBeUnique {
                            try writer.checkUnique(
                                index.name, key: entry.key, primaryKey: primaryKey, in: database, txn: txn)
                        }
                        try writer.add(entry.key, primaryKey: primaryKey, to: database, in: txn)
                    }
                    entry = try cursor.next()
                }
            }
        }
        if stored != declared {
            try txn.put(meta, key: listKey, value: Array(declared.joined(separator: "\n").utf8))
        }
        return databases
    }
}
