import Foundation
import LMDB
import Synchronization

/// One open store file, shared by every `Store` opened on its folder in this process (LMDB forbids opening a
/// file twice in one process).
final class StoreCore: Sendable {
    let environment: Environment
    let directory: URL
    /// `directory.path`, kept because `URL.path` costs more than a write's index upkeep.
    let path: String
    /// The data file's device and inode: the file itself, which a restore or a store deleted and made again at the
    /// same path replaces.
    let fileIdentity: String
    let meta: Database
    /// `_changes`: each write transaction's change log, keyed by the version it created.
    let changeLog: Database
    /// `_sync` and `_outbox`, once the store syncs (`SyncStorage`).
    let syncDatabases: Lock<SyncDatabases?>
    /// Models by stored name, shared across `Store` values opened on this folder with different configurations.
    private let modelsByName: Lock<[String: ModelInfo]>
    /// The stored schema generation this process last saw; a commit by another process that raised it makes this
    /// process's models stale.
    let schemaGeneration = Atomic<UInt64>(0)
    /// The newest transaction whose schema generation was checked, so that reads check only after a new commit.
    let checkedTransaction = Atomic<UInt64>(0)
    /// Wakes observers after each commit of this process, and polls for other processes' commits while they wait.
    let commits: CommitSignal
    /// Serialises `write` calls made with `await`, off the caller's thread.
    let writerQueue: DispatchQueue
    /// The key of this core in the registry of open files.
    private let registryKey: String

    static let formatKey = Array("format".utf8)
    static let versionKey = Array("version".utf8)
    /// The store's format, which follows its records' (the one change so far): 2 since records end with a checksum.
    /// A store of format 1 opens as before (its records are read without a checksum and sealed as they are
    /// rewritten) and is marked 2 when it is opened for writing; an earlier Cellar, which cannot read sealed records,
    /// then refuses it in words.
    static let formatVersion: UInt8 = RecordFormat.version
    /// Up to this size, opening walks every page of the file (about 25 ms at the limit); beyond it, only the pages an
    /// opening reads, and `verifyIntegrity()` walks the rest when asked.
    static let fullPageCheckLimit = 32 << 20

    private init(environment: Environment, directory: URL, databases: CoreDatabases, registryKey: String) {
        self.environment = environment
        self.directory = directory
        self.path = directory.path
        self.meta = databases.meta
        self.changeLog = databases.changeLog
        self.syncDatabases = Lock(databases.sync)
        self.registryKey = registryKey
        var file = stat()
        fileIdentity =
            stat(directory.appendingPathComponent("data.mdb").path, &file) == 0
            ? "\(file.st_dev):\(file.st_ino)" : directory.path
        self.modelsByName = Lock([:])
        self.commits = CommitSignal(after: environment.info.lastTransactionID)
        self.writerQueue = DispatchQueue(label: "Cellar writer \(directory.path)", qos: .userInitiated)
        writerQueue.setSpecific(key: Self.writerQueueKey, value: ())
        readOtherProcessesCommits()
    }

    /// Lets `commits` read what other processes commit, watching `data.mdb` for their writes unless
    /// `watchingTheFile` is `false`: then only the poll looks (the tests of the poll alone ask for that before anyone
    /// observes).
    func readOtherProcessesCommits(watchingTheFile: Bool = true) {
        let file = watchingTheFile ? directory.appendingPathComponent("data.mdb").path : nil
        // Held weakly: while a look reads, the store (and so its open environment) is alive.
        commits.readCommits(watching: file) { [weak self] after in self?.committed(after: after) ?? (0, []) }
    }

    /// Marks the writer queue, so code (and tests) can tell whether they run on it.
    static let writerQueueKey = DispatchSpecificKey<Void>()

    deinit {
        // The environment closes under the registry's lock, and only if no core opened since uses it: so an
        // opening on another thread either reuses this environment or finds it closed, never a second one.
        Self.registry.withLock { entries in
            guard let entry = entries[registryKey], entry.environment === environment, entry.core == nil else {
                return
            }
            entries[registryKey] = nil
            environment.close()
            if entry.removeOnClose { try? FileManager.default.removeItem(at: directory) }
        }
    }

    /// The one place where failures of the layer below become `StoreError`s: runs `body`, passing `StoreError`s
    /// through and describing `LMDBError`s with this store's path and limits.
    @discardableResult
    func run<R>(_ operation: String, _ body: () throws -> R) throws(StoreError) -> R {
        do {
            return try body()
        } catch {
            throw .from(error, path: path, operation: operation, readerLimit: environment.info.maxReaders)
        }
    }

    func error(_ error: LMDBError, _ operation: String) -> StoreError {
        StoreError(error, path: path, operation: operation, readerLimit: environment.info.maxReaders)
    }

    // MARK: Opening

    /// One open environment per folder. The core is held weakly, so the file closes with the last `Store`; the
    /// environment strongly, so that a core being released and a new one being opened share it.
    private static let registry = Lock<[String: RegistryEntry]>([:])

    private struct RegistryEntry: @unchecked Sendable {
        weak var core: StoreCore?
        let environment: Environment
        let databases: CoreDatabases
        let removeOnClose: Bool
    }

    /// The databases every store has besides its models'.
    struct CoreDatabases {
        let meta: Database
        let changeLog: Database
        let sync: SyncDatabases?

        /// Opens sync's databases when the store has them.
        static func syncDatabases(in txn: ReadTransaction) throws -> SyncDatabases? {
            guard let records = try txn.openDatabase(named: SyncStorage.recordsDatabase),
                let outbox = try txn.openDatabase(named: SyncStorage.outboxDatabase)
            else { return nil }
            return SyncDatabases(records: records, outbox: outbox)
        }
    }

    /// The folder's path with every symbolic link, `.` and `..` resolved by `realpath`, so that two paths to one
    /// folder share an environment (LMDB must not open one file twice in a process); `nil` with `errno` set when the
    /// folder cannot be reached. Only a folder that exists has a key: an opening for writing creates it first, and a
    /// read-only one must find it.
    private static func registryKey(_ directory: URL) -> String? {
        guard let resolved = realpath(directory.path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The open core for `directory`, or a newly opened one.
    ///
    /// - Throws: `StoreError.configurationConflict` when the folder is open in this process with settings that
    ///   differ from `configuration`'s.
    static func open(
        directory: URL, configuration: Configuration, removeOnClose: Bool = false
    ) throws(StoreError) -> StoreCore {
        try openReportingShared(directory: directory, configuration: configuration, removeOnClose: removeOnClose).core
    }

    /// The open core for `directory`, and whether another `Store` of this process was using it already.
    static func openReportingShared(
        directory: URL, configuration: Configuration, removeOnClose: Bool = false
    ) throws(StoreError) -> (core: StoreCore, isShared: Bool) {
        if !configuration.readOnly { try FileSystem.createDirectories(at: directory) }
        guard let key = registryKey(directory) else {
            throw .io(errno: errno, operation: "find the store's folder", path: directory.path)
        }
        return try registry.withLock { (entries) throws(StoreError) -> (StoreCore, Bool) in
            if let entry = entries[key] {
                try configuration.checkCompatible(withOpen: entry.environment.options, path: directory.path)
                if let core = entry.core { return (core, true) }
                let core = StoreCore(
                    environment: entry.environment, directory: directory, databases: entry.databases, registryKey: key)
                entries[key] = RegistryEntry(
                    core: core, environment: entry.environment, databases: entry.databases,
                    removeOnClose: entry.removeOnClose)
                return (core, false)
            }
            let (environment, databases) = try openEnvironment(at: directory, configuration: configuration)
            let core = StoreCore(environment: environment, directory: directory, databases: databases, registryKey: key)
            entries[key] = RegistryEntry(
                core: core, environment: environment, databases: databases, removeOnClose: removeOnClose)
            return (core, false)
        }
    }

    /// Closes the file now, for a core no `Store` has been given yet (opening is about to delete the store).
    func closeUnshared() {
        Self.registry.withLock { entries in
            guard entries[registryKey]?.core === self else { return }
            entries[registryKey] = nil
            environment.close()
        }
    }

    static func isOpen(_ directory: URL) -> Bool {
        guard let key = registryKey(directory) else { return false }
        return registry.withLock { $0[key] != nil }
    }

    /// Opens the environment and checks that it is a Cellar store (or empty, and then makes it one), in one
    /// write transaction: a file that is not a store is refused before anything is written to it. A read-only store
    /// must be one already.
    private static func openEnvironment(
        at directory: URL, configuration: Configuration
    ) throws(StoreError) -> (Environment, CoreDatabases) {
        let path = directory.path
        if configuration.readOnly {
            switch FileSystem.entry(at: path) {
            case .folder: break
            case .file: throw .incompatibleFile(path: path, reason: FileSystem.fileIsNotAFolder(path, creates: false))
            case .unreachable(let code): throw .io(errno: code, operation: "find the store's folder", path: path)
            }
            if case .unreachable(let code) = FileSystem.entry(at: directory.appendingPathComponent("data.mdb").path) {
                throw .io(errno: code, operation: "find a store (data.mdb) to open read-only in", path: path)
            }
        }
        let environment: Environment
        do {
            environment = try Environment(path: path, options: configuration.environmentOptions)
        } catch {
            throw StoreError(
                error, path: path, operation: "open the store", readerLimit: configuration.maxReaders)
        }
        let databases: CoreDatabases
        do {
            // Pages are checked before LMDB reads them: all of them in a small file (a walk reads about a gigabyte
            // a second), otherwise those an opening and its first write read.
            let checkEverything = try environment.dataFileLength <= fullPageCheckLimit
            let pages = try environment.checkPages(databases: checkEverything ? nil : ["_meta"])
            guard pages.isSound else {
                throw StoreError.corruptedFile(path: path, reason: pages.summary)
            }
            if configuration.readOnly {
                databases = try environment.readOpeningDatabases { txn in
                    guard let meta = try txn.openDatabase(named: "_meta"),
                        try storedFormat(meta, in: txn, path: path) != nil
                    else {
                        try refuseForeignEnvironment(in: txn, path: path)
                        throw StoreError.incompatibleFile(path: path, reason: "it is an empty LMDB environment")
                    }
                    guard let changeLog = try txn.openDatabase(named: "_changes") else {
                        throw StoreError.incompatibleFile(
                            path: path,
                            reason: "it was written by an earlier version of Cellar; open it once for writing")
                    }
                    return CoreDatabases(
                        meta: meta, changeLog: changeLog, sync: try CoreDatabases.syncDatabases(in: txn))
                }
            } else {
                databases = try environment.write { txn in
                    if try txn.openDatabase(named: "_meta") == nil { try refuseForeignEnvironment(in: txn, path: path) }
                    let meta = try txn.createDatabase(named: "_meta")
                    if try storedFormat(meta, in: txn, path: path).map({ $0 < formatVersion }) ?? true {
                        try txn.put(meta, key: formatKey, value: [formatVersion])
                    }
                    let changeLog = try txn.createDatabase(named: "_changes")
                    try dropChangeLogFromAnotherLife(changeLog, in: txn)
                    return CoreDatabases(
                        meta: meta, changeLog: changeLog, sync: try CoreDatabases.syncDatabases(in: txn))
                }
            }
        } catch {
            environment.close()
            throw .from(error, path: path, operation: "open the store", readerLimit: configuration.maxReaders)
        }
        return (environment, databases)
    }

    /// Throws `incompatibleFile` when the environment, which has no `_meta` database, holds another program's data.
    private static func refuseForeignEnvironment(in txn: ReadTransaction, path: String) throws {
        if let main = try txn.openDatabase(named: nil), case let entries = try txn.statistics(main).entries, entries > 0
        {
            throw StoreError.incompatibleFile(
                path: path,
                reason: "it is an LMDB environment of another program (\(entries) entries in its main "
                    + "database and no Cellar format marker)")
        }
    }

    /// The format `meta`'s marker names; `nil` for an empty `_meta` (a store not made yet).
    ///
    /// - Throws: `incompatibleFile` for a marker of a newer format, or a `_meta` with entries and no marker.
    private static func storedFormat(_ meta: Database, in txn: ReadTransaction, path: String) throws -> UInt8? {
        if let format = try txn.get(meta, key: formatKey) {
            guard format.count == 1, format[0] <= formatVersion else {
                throw StoreError.incompatibleFile(path: path, reason: "it was written by a newer version of Cellar")
            }
            return format[0]
        }
        guard try txn.statistics(meta).entries == 0 else {
            throw StoreError.incompatibleFile(path: path, reason: "its _meta database has no Cellar format marker")
        }
        return nil
    }

    /// Reconciles the stored schema with `configuration` (migrating when asked) and opens each model's databases, in
    /// one write transaction: a failure anywhere leaves the file as it was. A read-only store is only compared with
    /// the configuration, in a read transaction.
    func register(_ configuration: Configuration) throws(StoreError) -> [ObjectIdentifier: ModelInfo] {
        let (opened, generation) = try run("open the store") {
            if configuration.readOnly {
                return try environment.readOpeningDatabases { txn in
                    try checkUnchanged(configuration, in: txn)
                    return (
                        try register(configuration.models, rebuild: [], in: txn, writing: nil),
                        try storedGeneration(in: txn)
                    )
                }
            }
            return try environment.write { txn in
                let reconciliation = try reconcile(configuration, in: txn)
                do {
                    let infos = try register(
                        configuration.models, rebuild: reconciliation.rebuild, in: txn, writing: txn)
                    return (infos, try storedGeneration(in: txn))
                } catch let error as StoreError {
                    // A record the migration left unreadable, or a unique value it made twice, fails the migration.
                    guard let version = reconciliation.migratedTo else { throw error }
                    throw StoreError.migrationFailed(version: version, reason: Self.afterSteps(error))
                }
            }
        }
        schemaGeneration.store(generation, ordering: .relaxed)
        // Handles opened in a transaction are valid only once it has committed: share them only now.
        return modelsByName.withLock { models in
            opened.mapValues { info in
                if let known = models[info.name] { return known }
                models[info.name] = info
                return info
            }
        }
    }

    /// Opens the databases of `models`: through `writing`, creating and building what is missing, or, for a read-only
    /// store, only those that exist.
    private func register(
        _ models: [any Model.Type], rebuild: Set<String>, in txn: ReadTransaction, writing: LMDB.WriteTransaction?
    ) throws -> [ObjectIdentifier: ModelInfo] {
        var infos: [ObjectIdentifier: ModelInfo] = [:]
        var names: Set<String> = []
        let registered = Set(models.map { ObjectIdentifier($0) })
        for type in models {
            let info = try register(type, registered: registered, rebuild: rebuild, in: txn, writing: writing)
            guard names.insert(info.name).inserted else { throw StoreError.duplicateModelName(model: info.name) }
            infos[ObjectIdentifier(type)] = info
        }
        return infos
    }

    /// Throws `readOnly` when opening the read-only store with `configuration` would change it: a schema change of
    /// any kind, or another schema version.
    private func checkUnchanged(_ configuration: Configuration, in txn: ReadTransaction) throws {
        let opening = try openingPlan(for: configuration, in: txn)
        if let stored = opening.storedVersion, stored > configuration.schemaVersion {
            throw StoreError.schemaVersionTooLow(stored: stored, requested: configuration.schemaVersion)
        }
        if !opening.changes.isEmpty {
            throw StoreError.readOnly(
                path: path,
                reason: "opening it with these models would change its schema: "
                    + opening.changes.map(\.description).joined(separator: " "))
        }
        if opening.storedVersion != configuration.schemaVersion {
            throw StoreError.readOnly(
                path: path,
                reason: "its schema version is \(opening.storedVersion.map(String.init) ?? "not set yet"), and this "
                    + "configuration's is \(configuration.schemaVersion)")
        }
    }

    /// Whether no configuration has registered models on this file in this process yet.
    var modelsByNameIsEmpty: Bool { modelsByName.withLock { $0.isEmpty } }

    private func register<M: Model>(
        _ type: M.Type, registered: Set<ObjectIdentifier>, rebuild: Set<String>, in txn: ReadTransaction,
        writing: LMDB.WriteTransaction?
    ) throws -> ModelInfo {
        let registration = try M.registration()
        try registration.checkLinks(registered: registered)
        let name = registration.name
        let signature = registration.signature
        if let known = modelsByName.withLock({ $0[name] }) {
            // Two configurations open at once must agree on what a model's databases hold.
            guard known.signature == signature, known.numbersIDs == registration.numbersIDs else {
                throw StoreError.configurationConflict(
                    path: path,
                    reason: "\(name) is open with indexes and links [\(known.signature.joined(separator: ", "))]"
                        + (known.numbersIDs ? " and auto-increment ids" : "")
                        + ", and this configuration declares [\(signature.joined(separator: ", "))]"
                        + (registration.numbersIDs ? " and auto-increment ids" : ""))
            }
            // Delete rules read and rewrite the records that hold links with the type registered first: two types
            // for one model that holds links would rewrite each other's records. (Two versions of a model without
            // links may be open at once: each reads and writes its own records.)
            guard known.type == ObjectIdentifier(M.self) || known.links.isEmpty else {
                throw StoreError.configurationConflict(
                    path: path,
                    reason: "\(name), which holds links, is open in this process as another Swift type than "
                        + "\(M.self); open the store with one type for each stored model that holds links, or release "
                        + "the other Stores first")
            }
            return known
        }
        let dictionary = try storedDictionary(name, in: txn)
        let records: Database
        let indexes: [Database]
        let backlinks: [Database]
        let fullText: [Database]
        if let writing {
            records = try writing.createDatabase(named: DatabaseName.records(name))
            (indexes, backlinks, fullText) = try openDerivedDatabases(
                of: M.self, registration, records: records, dictionary: dictionary, rebuild: rebuild.contains(name),
                in: writing)
        } else {
            (records, indexes, backlinks, fullText) = try existingDatabases(of: registration, in: txn)
            try checkFullTextDefinitions(
                of: M.self, Self.pairs(fullText, names: registration.fullTextDatabases), in: txn)
        }
        // The links themselves (their key paths and rules) are read from the schema only for a model that has any.
        let links = backlinks.isEmpty ? [] : M.schema.links
        return ModelInfo(
            name: name, records: records, indexes: indexes,
            links: zip(links, backlinks).enumerated().map { position, pair in
                LinkInfo(pair.0, model: name, position: position, database: pair.1)
            },
            fullText: Self.pairs(fullText, names: registration.fullTextDatabases),
            signature: signature, numbersIDs: registration.numbersIDs, operations: ModelOperations(M.self),
            type: ObjectIdentifier(M.self), dictionary: dictionary)
    }

    /// The databases of a model in a read-only store, which has every one of them: its schema matched the stored one.
    private func existingDatabases(
        of registration: ModelRegistration, in txn: ReadTransaction
    ) throws -> (records: Database, indexes: [Database], links: [Database], fullText: [Database]) {
        func existing(_ name: String) throws -> Database {
            guard let database = try txn.openDatabase(named: name) else {
                throw StoreError.corruptedFile(
                    path: path, reason: "its schema lists the database \(name), which the file does not hold")
            }
            return database
        }
        return (
            try existing(DatabaseName.records(registration.name)),
            try registration.indexDatabases.map(existing),
            try registration.linkDatabases.map(existing),
            try registration.fullTextDatabases.map(existing)
        )
    }

    /// Throws `readOnly` when a full-text index of the read-only store was built with another definition than this
    /// version of Cellar makes for it (another tokenizer): searching it would read words it does not hold, and
    /// building it again is a write.
    private func checkFullTextDefinitions<M: Model>(
        of type: M.Type, _ pairs: [FullTextDatabases], in txn: ReadTransaction
    ) throws {
        for (index, pair) in zip(M.schema.fullTextIndexes, pairs) {
            let stored = try txn.get(pair.documents, key: FullTextStorage.definitionKey)
            guard let stored, stored.elementsEqual(index.definition) else {
                throw StoreError.readOnly(
                    path: path,
                    reason: "its full-text index \(pair.name) was built by another version of Cellar (another "
                        + "tokenizer), and building it again is a write; open the store once for writing")
            }
        }
    }

    /// The databases of full-text indexes, opened two by two (postings, documents), as the model's info keeps them.
    private static func pairs(_ databases: [Database], names: [String]) -> [FullTextDatabases] {
        stride(from: 0, to: databases.count - 1, by: 2).map {
            FullTextDatabases(name: names[$0], postings: databases[$0], documents: databases[$0 + 1])
        }
    }

    /// Opens the schema's index and backlink databases, building any that are new from the records already stored,
    /// and deletes the databases of indexes and links the schema no longer declares. The list of a model's derived
    /// databases is kept in `_meta` under `indexes/<Model>`.
    private func openDerivedDatabases<M: Model>(
        of type: M.Type, _ registration: ModelRegistration, records: Database, dictionary: KeyDictionary,
        rebuild: Bool, in txn: LMDB.WriteTransaction
    ) throws -> (indexes: [Database], links: [Database], fullText: [Database]) {
        let model = registration.name
        let listKey = Array("indexes/\(model)".utf8)
        let declared = registration.indexDatabases + registration.linkDatabases + registration.fullTextDatabases
        let declaredList = Array(declared.joined(separator: "\n").utf8)
        let storedList = try txn.get(meta, key: listKey)
        // The list as stored is nearly always the declared one: compared as bytes, it needs no parsing.
        let stored =
            storedList?.equals(declaredList) == true
            ? declared
            : storedList.map { String(decoding: $0, as: UTF8.self).split(separator: "\n").map(String.init) } ?? []
        for name in stored where !declared.contains(name) {
            if let removed = try txn.openDatabase(named: name) { try txn.drop(removed) }
        }
        var databases: [Database] = []
        var isNew: [Bool] = []
        let keyedCount = registration.indexDatabases.count + registration.linkDatabases.count
        for (number, name) in declared.enumerated() {
            let exists = try txn.openDatabase(named: name) != nil
            isNew.append(rebuild || !exists || !stored.contains(name))
            // Index and backlink databases hold several records under one key; a full-text index's, one value a key.
            let database = try txn.createDatabase(named: name, flags: number < keyedCount ? .duplicateSort : [])
            if isNew.last == true { try txn.empty(database) }
            databases.append(database)
        }
        // A full-text index whose postings or documents are new, or stored with another definition (tokenizer,
        // properties), is built again whole, both emptied.
        var fullTextIsNew: [Bool] = []
        let definitions = M.schema.fullTextIndexes.map(\.definition)
        for (number, pair) in stride(from: keyedCount, to: declared.count - 1, by: 2).enumerated() {
            var new = isNew[pair] || isNew[pair + 1]
            let stored = try txn.get(databases[pair + 1], key: FullTextStorage.definitionKey)
            if !new, stored.map({ !$0.elementsEqual(definitions[number]) }) ?? true { new = true }
            if new {
                try txn.empty(databases[pair])
                try txn.empty(databases[pair + 1])
                try txn.put(databases[pair + 1], key: FullTextStorage.definitionKey, value: definitions[number])
            }
            fullTextIsNew.append(new)
        }
        let indexCount = registration.indexDatabases.count
        let indexes = Array(databases[..<indexCount])
        let links = Array(databases[indexCount..<keyedCount])
        let fullText = Array(databases[keyedCount...])
        // A rebuild with no derived databases still decodes every record: that is what checks a migration.
        if isNew.contains(true) || fullTextIsNew.contains(true) || rebuild {
            let schema = M.schema
            let searchable = Self.pairs(fullText, names: registration.fullTextDatabases)
            try build(
                model: model, records: records, dictionary: dictionary, in: txn,
                indexes: zip(schema.indexes, zip(indexes, isNew)).filter { $0.1.1 }.map { ($0.0, $0.1.0) },
                links: zip(schema.links, zip(links, isNew[indexCount...])).filter { $0.1.1 }.map { ($0.0, $0.1.0) },
                fullText: zip(schema.fullTextIndexes, zip(searchable, fullTextIsNew)).filter { $0.1.1 }.map {
                    ($0.0, $0.1.0)
                })
        }
        if stored != declared { try txn.put(meta, key: listKey, value: declaredList) }
        return (indexes, links, fullText)
    }

    /// Fills new (empty) index and backlink databases from the stored records, their entries gathered while the
    /// records are walked and written in key order (`IndexLoad`).
    private func build<M: Model>(
        model: String, records: Database, dictionary: KeyDictionary, in txn: LMDB.WriteTransaction,
        indexes: [(Index<M>, Database)], links: [(Relationship<M>, Database)],
        fullText: [(FullTextIndex<M>, FullTextDatabases)] = []
    ) throws {
        let decoder = RecordDecoder()
        let searchable = fullText.map { ($0.0, FullTextBuffer(storage: FullTextStorage(databases: $0.1, core: self))) }
        let writer = IndexWriter(model: model, core: self)
        // An index declared twice (`.index(\.age)` twice, or two indexes given one name) has one database: it is
        // filled once, as the writes keep it.
        var filled: Set<Database> = []
        let indexes = indexes.filter { filled.insert($0.1).inserted }
        var indexLoads = indexes.map { IndexLoad(unique: $0.0.isUnique ? $0.0.name : nil) }
        var linkLoads = links.map { _ in IndexLoad(unique: nil) }
        // The entries are made as the writes make them, into one reused key: no array of entries, and no
        // `Index<M>`, whose type metadata each call would look up, per record.
        let makers = indexes.map { IndexEntryMaker($0.0) }
        let indexDatabases = indexes.map(\.1)
        var key: [UInt8] = []
        // The record's key, copied out of the page: writing a part of the entries into other databases mid-walk
        // must not leave it pointing at a page LMDB has since reused.
        var primaryKey: [UInt8] = []
        try txn.walk(records) { entry in
            let value: M
            do {
                value = try decoder.decodeRecord(M.self, from: entry.value, dictionary: dictionary)
            } catch let error as DecodingError {
                throw StoreError(error, model: model, id: KeyEncoding.describe(entry.key))
            }
            primaryKey.removeAll(keepingCapacity: true)
            primaryKey.append(contentsOf: entry.key)
            for position in makers.indices {
                let mustBeUnique = try withUnsafePointer(to: value) { record throws(StoreError) in
                    try writer.entry(makers[position], of: UnsafeRawPointer(record), into: &key)
                }
                if makers[position].isMultiEntry {
                    for element in IndexKeys.split(key) { indexLoads[position].add(element, primaryKey: primaryKey) }
                } else {
                    indexLoads[position].add(key, primaryKey: primaryKey, mustBeUnique: mustBeUnique)
                }
                if indexLoads[position].isFull {
                    try indexLoads[position].write(to: indexDatabases[position], writer: writer, in: txn)
                }
            }
            // Counted by hand: `enumerated()` over this array, generic over the model, is not specialized and
            // looks up type metadata at every step.
            var position = 0
            for (link, database) in links {
                for target in try link.targetKeys(value) { linkLoads[position].add(target, primaryKey: primaryKey) }
                if linkLoads[position].isFull { try linkLoads[position].write(to: database, writer: writer, in: txn) }
                position += 1
            }
            for (index, buffer) in searchable {
                try buffer.add(primaryKey: primaryKey, texts: index.texts(of: value), in: txn)
            }
            return true
        }
        for (position, database) in indexes.map(\.1).enumerated() {
            try indexLoads[position].write(to: database, writer: writer, in: txn)
        }
        for (position, database) in links.map(\.1).enumerated() {
            try linkLoads[position].write(to: database, writer: writer, in: txn)
        }
        for (_, buffer) in searchable { try buffer.write(in: txn) }
    }
}

extension StoreCore {
    /// Writes a compacted copy of the file (free pages left out) into `directory`, created when missing, which must
    /// not hold a store yet.
    func compact(to directory: URL) throws(StoreError) {
        try FileSystem.createDirectories(at: directory)
        guard !FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) else {
            throw .io(errno: EEXIST, operation: "write a compacted copy into", path: directory.path)
        }
        try run("write a compacted copy of the store into \(directory.path) from") {
            try environment.copy(to: directory.path, compacting: true)
        }
    }
}

extension StoreCore {
    /// What a migration left wrong, in a migration's words: the error is part of a sentence, and its advice is for
    /// the step, not for an app outside a migration (which `decodingFailed` alone gives).
    static func afterSteps(_ error: StoreError) -> String {
        if case .decodingFailed(let model, let id, let field, let reason) = error {
            let reason = reason.hasSuffix(".") ? String(reason.dropLast()) : reason
            return
                "after its steps ran, the stored \(model) with id \(id) could not be decoded at '\(field)' (\(reason)): "
                + "set '\(field)' in a step for every \(model) record that lacks it, or declare a default for it"
        }
        var words = error.description
        if words.hasSuffix(".") { words.removeLast() }
        if let first = words.first, words.dropFirst().first?.isLowercase ?? true {
            words = first.lowercased() + words.dropFirst()
        }
        return "after its steps ran, " + words
    }
}
