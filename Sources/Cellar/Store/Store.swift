import Foundation
import LMDB

/// A store of `Model` values in one LMDB file.
///
/// ```swift
/// let store = try Store(at: url, configuration: .init(models: [Dog.self]))
/// try store.write { tx in try tx.insert(Dog(name: "Taro", age: 3)) }
/// let dogs = try store.objects(Dog.self).results()
/// ```
///
/// A `Store` is `Sendable`: share one across threads and tasks. Opening the same folder again in the same process
/// shares the open file. The file closes when the last `Store` for it is released.
public final class Store: Sendable {
    let core: StoreCore
    private let models: [ObjectIdentifier: ModelInfo]
    /// The same models by stored name, for links, which name their models.
    private let modelsByName: [String: ModelInfo]
    /// For each model's stored name, the declared links that lead to it.
    private let linksByTarget: [String: [LinkInfo]]
    /// The configuration the store was opened with.
    public let configuration: Configuration

    /// Opens the store in the folder at `directory`, creating the folder and the store when missing.
    ///
    /// - Throws: `StoreError.schemaVersionTooLow` when the store was written with a higher schema version;
    ///   `.incompatibleFile` or `.corruptedFile` when the folder holds something else; `.io` when the folder
    ///   cannot be created or opened.
    public convenience init(at directory: URL, configuration: Configuration) throws(StoreError) {
        try self.init(directory: directory, configuration: configuration, removeOnClose: false)
    }

    private convenience init(directory: URL, configuration: Configuration, removeOnClose: Bool) throws(StoreError) {
        self.init(
            opened: try Self.open(directory, configuration: configuration, removeOnClose: removeOnClose),
            configuration: configuration)
    }

    /// A `Store` for a file `open` opened and the models it registered.
    init(opened: (core: StoreCore, models: [ObjectIdentifier: ModelInfo]), configuration: Configuration) {
        let (core, models) = opened
        self.core = core
        self.configuration = configuration
        self.models = models
        self.modelsByName = Dictionary(uniqueKeysWithValues: models.values.map { ($0.name, $0) })
        self.linksByTarget = Dictionary(
            grouping: models.values.flatMap(\.links).sorted { $0.label < $1.label }, by: \.targetName)
    }

    /// A store in a new temporary folder, removed when the store is released: for tests and previews.
    public static func inMemory(_ configuration: Configuration) throws(StoreError) -> Store {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cellar-\(UUID().uuidString)", isDirectory: true)
        return try Store(directory: directory, configuration: configuration, removeOnClose: true)
    }

    /// The folder holding the store's files.
    public var directory: URL { core.directory }

    /// The newest committed version.
    public var version: StoreVersion { StoreVersion(rawValue: core.environment.info.lastTransactionID) }

    func info<M: Model>(for type: M.Type) throws(StoreError) -> ModelInfo {
        guard let info = models[ObjectIdentifier(type)] else { throw .modelNotRegistered(model: "\(M.self)") }
        return info
    }

    /// The model a link leads to; registered, as opening checked.
    func info(linkedBy link: LinkInfo) throws(StoreError) -> ModelInfo {
        try info(named: link.targetName)
    }

    func info(named name: String) throws(StoreError) -> ModelInfo {
        guard let info = modelsByName[name] else { throw .modelNotRegistered(model: name) }
        return info
    }

    /// The models this store's configuration registered.
    var registeredModels: Dictionary<String, ModelInfo>.Values { modelsByName.values }

    /// The declared links that lead to records of `info`'s model.
    func incomingLinks(to info: ModelInfo) -> [LinkInfo] { linksByTarget[info.name] ?? [] }

    // MARK: Transactions

    /// Runs `body` on one committed version of the store, for several reads that must agree.
    ///
    /// - Throws: what `body` throws, or a `StoreError`.
    public func read<R>(_ body: (Snapshot) throws -> R) throws -> R {
        do {
            return try core.environment.read { txn in
                if txn.id != core.checkedTransaction.load(ordering: .relaxed) { try core.checkSchemaGeneration(txn) }
                let snapshot = Snapshot(store: self, transaction: txn)
                defer { snapshot.end() }
                return try body(snapshot)
            }
        } catch let error as LMDBError {
            throw core.error(error, "read")
        }
    }

    func withSnapshot<R>(_ body: (Snapshot) throws(StoreError) -> R) throws(StoreError) -> R {
        try core.run("read") { try read { snapshot in try body(snapshot) } }
    }

    /// Runs `body` in one write transaction and commits it. If `body` throws, nothing it did is written.
    ///
    /// Writers wait for each other, across threads and processes. When the file must grow, the transaction is
    /// rolled back, the map grown and `body` run again: keep effects outside the store out of `body`.
    /// In async code prefer `try await write`, which does not block a thread of the cooperative pool.
    ///
    /// - Throws: what `body` throws, or a `StoreError`.
    @discardableResult
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        var committed: WriteTransaction?
        let result: R
        do {
            result = try core.environment.write { txn in
                try core.checkSchemaGeneration(txn)
                let transaction = WriteTransaction(store: self, transaction: txn)
                defer { transaction.end() }
                let value = try body(transaction)
                try transaction.flush()
                committed = transaction
                return value
            }
        } catch let error as LMDBError {
            throw core.error(error, "write")
        }
        if let committed {
            committed.publishCommitted()
            if let version = committed.committedVersion {
                core.commits.notify(version: version, models: committed.changedModels)
            }
        }
        return result
    }

    /// Runs `body` in one write transaction on the store's writer queue, not on the caller's thread, and commits
    /// it. If `body` throws, nothing it did is written.
    ///
    /// - Throws: what `body` throws, or a `StoreError`.
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            core.writerQueue.async {
                continuation.resume(with: Result { try self.write(body) })
            }
        }
    }

    // MARK: Reading outside a transaction

    /// The record of type `type` with primary key `id` in the newest version, or `nil`.
    public func object<M: Model>(_ type: M.Type, id: M.ID) throws(StoreError) -> M? {
        try withSnapshot { (snapshot) throws(StoreError) in try snapshot.object(type, id: id) }
    }

    /// How many records of `type` exist in the newest version.
    public func count<M: Model>(_ type: M.Type) throws(StoreError) -> Int {
        try withSnapshot { (snapshot) throws(StoreError) in try snapshot.count(type) }
    }

    /// A query over the records of `type`; without conditions or a sort, in primary-key order. Each run reads the
    /// newest committed version.
    public func objects<M: Model>(_ type: M.Type) -> Query<M> {
        Query(source: .store(self))
    }

    // MARK: Files

    /// Writes a compacted copy of the store (free pages left out) into the folder at `directory`, which must
    /// not hold a store yet; it is created when missing.
    public func compact(to directory: URL) throws(StoreError) { try core.compact(to: directory) }

    /// Deletes the store in the folder at `directory`: its data and lock files, and the folder when nothing else
    /// is left in it. Deleting a store that does not exist does nothing.
    ///
    /// - Throws: `StoreError.storeInUse` when a `Store` for the folder is open in this process or another one: deleting
    ///   a file another process has mapped would split the store in two.
    public static func delete(at directory: URL) throws(StoreError) {
        guard !StoreCore.isOpen(directory) else { throw .storeInUse(path: directory.path, process: nil) }
        let process: Int32?
        do {
            process = try Environment.openingProcess(path: directory.path)
        } catch .alreadyOpen {
            // Open in this process under another path: the folder was renamed or moved while its store was open.
            throw .storeInUse(path: directory.path, process: nil)
        } catch {
            // Unsure whether another process maps the file: deleting it could split the store in two.
            throw StoreError(
                error, path: directory.path, operation: "see whether another process has the store open in",
                readerLimit: 0)
        }
        if let process { throw .storeInUse(path: directory.path, process: process) }
        let files = FileManager.default
        for name in ["data.mdb", "lock.mdb"] {
            let file = directory.appendingPathComponent(name)
            guard files.fileExists(atPath: file.path) else { continue }
            do { try files.removeItem(at: file) } catch {
                throw .io(errno: EACCES, operation: "delete", path: file.path)
            }
        }
        if let rest = try? files.contentsOfDirectory(atPath: directory.path), rest.isEmpty {
            try? files.removeItem(at: directory)
        }
    }
}
