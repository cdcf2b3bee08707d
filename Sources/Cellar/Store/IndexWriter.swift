import LMDB

/// Adds and removes one record's index entries. Used by every write and when an index is built at open, so the
/// entries are the same whichever way they were made.
struct IndexWriter {
    let model: String
    let maxKeySize: Int
    /// The store's folder, for error messages.
    let path: String

    /// The index key of `value`, checked against LMDB's key limit.
    func key<M: Model>(_ index: Index<M>, of value: M) throws(StoreError) -> [UInt8] {
        let key: [UInt8]
        do {
            key = try index.key(value)
        } catch KeyEncoding.Failure.notANumber {
            throw .invalidKey(model: model, reason: "NaN has no place in the order of index \(index.name)")
        } catch KeyEncoding.Failure.unsupported(let reason) {
            throw .invalidKey(model: model, reason: reason)
        } catch {
            throw .invalidKey(model: model, reason: "\(error)")
        }
        guard key.count <= maxKeySize else { throw .keyTooLong(model: model, length: key.count, limit: maxKeySize) }
        return key
    }

    func add<M: Model>(
        _ index: Index<M>, of value: M, primaryKey: [UInt8], to database: Database, in txn: WriteTransaction
    ) throws(StoreError) {
        try add(index, key: key(index, of: value), primaryKey: primaryKey, to: database, in: txn)
    }

    func add<M: Model>(
        _ index: Index<M>, key: [UInt8], primaryKey: [UInt8], to database: Database, in txn: WriteTransaction
    ) throws(StoreError) {
        do {
            try txn.put(database, key: key, value: primaryKey, flags: index.isUnique ? .noOverwrite : [])
        } catch .keyExists {
            // The same record may already own the value (an update that left it unchanged); anyone else may not.
            let owner: UnsafeRawBufferPointer?
            do { owner = try txn.get(database, key: key) } catch {
                throw StoreError(error, path: path, operation: "read an index entry")
            }
            guard let owner, owner.elementsEqual(primaryKey) else {
                throw .uniqueConstraintViolated(model: model, index: index.name, value: KeyEncoding.describe(key))
            }
        } catch {
            throw StoreError(error, path: path, operation: "write an index entry")
        }
    }

    func remove<M: Model>(
        _ index: Index<M>, key: [UInt8], primaryKey: [UInt8], from database: Database, in txn: WriteTransaction
    ) throws(StoreError) {
        do {
            if index.isUnique {
                // Only the entry that points at this record is its to remove.
                if let owner = try txn.get(database, key: key), owner.elementsEqual(primaryKey) {
                    try txn.delete(database, key: key)
                }
            } else {
                _ = try key.withUnsafeBytes { rawKey in
                    primaryKey.withUnsafeBytes { rawValue in
                        Result { () throws(LMDBError) in try txn.delete(database, key: rawKey, value: rawValue) }
                    }
                }.get()
            }
        } catch {
            throw StoreError(error, path: path, operation: "remove an index entry")
        }
    }
}
