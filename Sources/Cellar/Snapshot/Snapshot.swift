import LMDB

/// One committed version of the store, for several reads that must agree with each other.
///
/// A snapshot lives only inside `Store.read`'s closure; values decoded from it are copies and may go anywhere.
/// Its reads (`object`, `count`, `objects`) come from `ReadScope`. Keep the closure short: while it runs, LMDB keeps
/// the pages of this version.
public final class Snapshot: ReadScope {
    private var transaction: ReadTransaction?

    init(store: Store, transaction: ReadTransaction) {
        self.transaction = transaction
        super.init(store: store)
    }

    func end() { transaction = nil }

    override var lmdb: ReadTransaction {
        get throws(StoreError) {
            guard let transaction else { throw .transactionEnded }
            return transaction
        }
    }

    override func reloadDictionary(for info: ModelInfo) throws(StoreError) -> KeyDictionary {
        let stored = try storedDictionary(for: info)
        info.publish(stored)
        return stored
    }
}
