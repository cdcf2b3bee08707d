import LMDB

/// One committed version of the store, for several reads that must agree with each other.
///
/// A snapshot lives only inside `Store.read`'s closure; values decoded from it are copies and may go anywhere.
/// Keep the closure short: while it runs, LMDB keeps the pages of this version.
public final class Snapshot {
    public let store: Store
    private var transaction: ReadTransaction?

    init(store: Store, transaction: ReadTransaction) {
        self.store = store
        self.transaction = transaction
    }

    func end() { transaction = nil }

    /// The version this snapshot shows.
    public var version: StoreVersion {
        get throws(StoreError) { StoreVersion(rawValue: try lmdb.id) }
    }

    /// The record of type `type` with primary key `id`, or `nil`.
    public func object<M: Model>(_ type: M.Type, id: M.ID) throws(StoreError) -> M? {
        try fetch(type, id: id)
    }

    /// How many records of `type` exist (read from the database's header, without a scan).
    public func count<M: Model>(_ type: M.Type) throws(StoreError) -> Int {
        try recordCount(store.info(for: type))
    }

    /// A query over the records of `type` in this snapshot. It runs when asked for results, while the
    /// snapshot's closure is still running, on the snapshot's thread.
    public func objects<M: Model>(_ type: M.Type) -> Query<M> {
        Query(source: .scope(scope))
    }

    private(set) lazy var scope = ScopeToken(self)
    private(set) lazy var recordDecoder = RecordDecoder()
    var keyScratch: [UInt8] = []
}

extension Snapshot: RecordContext {
    var lmdb: ReadTransaction {
        get throws(StoreError) {
            guard let transaction else { throw .transactionEnded }
            return transaction
        }
    }

    func dictionary(for info: ModelInfo) -> KeyDictionary { info.dictionary }

    func reloadDictionary(for info: ModelInfo) throws(StoreError) -> KeyDictionary {
        let stored = try storedDictionary(for: info)
        info.publish(stored)
        return stored
    }
}
