import LMDB

/// Adds and removes one record's index entries. Used by every write and when an index is built at open, so the
/// entries are the same whichever way they were made.
struct IndexWriter {
    let model: String
    /// The open file, for LMDB's key limit and for error messages.
    let core: StoreCore

    /// The index entry of `value`, its key checked against LMDB's key limit.
    func entry<M: Model>(_ index: Index<M>, of value: M) throws(StoreError) -> (key: [UInt8], mustBeUnique: Bool) {
        let entry: (key: [UInt8], mustBeUnique: Bool)
        do {
            entry = try index.entry(of: value)
        } catch KeyEncoding.Failure.notANumber {
            throw .invalidKey(model: model, reason: "NaN has no place in the order of index \(index.name)")
        } catch KeyEncoding.Failure.unsupported(let reason) {
            throw .invalidKey(model: model, reason: reason)
        } catch {
            throw .invalidKey(model: model, reason: "\(error)")
        }
        let maxKeySize = core.environment.maxKeySize
        guard entry.key.count <= maxKeySize else {
            throw .keyTooLong(model: model, length: entry.key.count, limit: maxKeySize)
        }
        return entry
    }

    /// Throws `uniqueConstraintViolated` when another record already has `key` in a unique index.
    func checkUnique(
        _ name: String, key: [UInt8], primaryKey: [UInt8], in database: Database, txn: ReadTransaction
    ) throws(StoreError) {
        let owner: UnsafeRawBufferPointer?
        do { owner = try txn.get(database, key: key) } catch { throw core.error(error, "read") }
        if let owner, !owner.elementsEqual(primaryKey) {
            throw .uniqueConstraintViolated(model: model, index: name, value: KeyEncoding.describe(key))
        }
    }

    /// Adds one entry. Index databases are DUPSORT, unique ones too, because `nil` values may repeat.
    func add(_ key: [UInt8], primaryKey: [UInt8], to database: Database, in txn: WriteTransaction) throws(StoreError) {
        do { try txn.put(database, key: key, value: primaryKey) } catch {
            throw core.error(error, "write an index entry")
        }
    }

    func remove(_ key: [UInt8], primaryKey: [UInt8], from database: Database, in txn: WriteTransaction)
        throws(StoreError)
    {
        do {
            _ = try key.withUnsafeBytes { rawKey in
                primaryKey.withUnsafeBytes { rawValue in
                    Result { () throws(LMDBError) in try txn.delete(database, key: rawKey, value: rawValue) }
                }
            }.get()
        } catch {
            throw core.error(error, "remove an index entry")
        }
    }
}
