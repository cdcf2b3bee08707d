import LMDB

/// One index of a model, as a write transaction uses it: its name, and how to make a record's entry from a pointer
/// to the record, so that planning a write needs no generic code.
struct IndexEntryMaker {
    let name: String
    let isUnique: Bool
    /// Whether `appendKey` writes the keys of a list's elements (`IndexKeys`), one entry each.
    let isMultiEntry: Bool
    /// Appends the key of the record at a pointer to a buffer; whether a component is `nil`.
    let appendKey: (UnsafeRawPointer, inout [UInt8]) throws -> Bool

    /// The parts of `index`, not the index: calling into `Index<M>` would look up its type metadata each time.
    init<M: Model>(_ index: Index<M>) {
        let appendKey = index.appendKey
        self.init(name: index.name, isUnique: index.isUnique, isMultiEntry: index.isMultiEntry) { record, key in
            try appendKey(record.assumingMemoryBound(to: M.self).pointee, &key)
        }
    }

    init(
        name: String, isUnique: Bool, isMultiEntry: Bool,
        appendKey: @escaping (UnsafeRawPointer, inout [UInt8]) throws -> Bool
    ) {
        self.name = name
        self.isUnique = isUnique
        self.isMultiEntry = isMultiEntry
        self.appendKey = appendKey
    }

    /// The entry of the record at `record`, in a new key.
    func make(_ record: UnsafeRawPointer) throws -> (key: [UInt8], mustBeUnique: Bool) {
        var key: [UInt8] = []
        let mustBeUnique = try make(record, into: &key)
        return (key, mustBeUnique)
    }

    /// Replaces `key` with the entry of the record at `record`, keeping its storage; whether it must be unique.
    func make(_ record: UnsafeRawPointer, into key: inout [UInt8]) throws -> Bool {
        key.removeAll(keepingCapacity: true)
        let hasNil = try appendKey(record, &key)
        return isUnique && !hasNil
    }
}

/// Adds and removes one record's index entries. Used by every write and when an index is built at open, so the
/// entries are the same whichever way they were made.
struct IndexWriter {
    let model: String
    /// The open file, for LMDB's key limit and for error messages.
    let core: StoreCore

    /// The index entries of `value`: one, or one per distinct element of a multi-entry index; each key checked
    /// against LMDB's key limit.
    func entries<M: Model>(_ index: Index<M>, of value: M) throws(StoreError) -> [(key: [UInt8], mustBeUnique: Bool)] {
        let entries = try told(index.name) { try index.entries(of: value) }
        for entry in entries { try checkLength(entry.key, index: index.name) }
        return entries
    }

    /// The index entry of the record at `value`, made without its type.
    func entry(_ index: IndexEntryMaker, of value: UnsafeRawPointer) throws(StoreError) -> (
        key: [UInt8], mustBeUnique: Bool
    ) {
        try checked(index.name, isMultiEntry: index.isMultiEntry) { try index.make(value) }
    }

    /// The entry of the record at `value` in `key`, whose storage it reuses; whether it must be unique.
    func entry(_ index: IndexEntryMaker, of value: UnsafeRawPointer, into key: inout [UInt8]) throws(StoreError)
        -> Bool
    {
        let mustBeUnique = try told(index.name) { try index.make(value, into: &key) }
        try checkLengths(key, index: index.name, isMultiEntry: index.isMultiEntry)
        return mustBeUnique
    }

    /// An entry `make` builds, its errors told as store errors and its key checked against LMDB's key limit.
    private func checked(
        _ name: String, isMultiEntry: Bool, _ make: () throws -> (key: [UInt8], mustBeUnique: Bool)
    ) throws(StoreError) -> (key: [UInt8], mustBeUnique: Bool) {
        let entry = try told(name, make)
        try checkLengths(entry.key, index: name, isMultiEntry: isMultiEntry)
        return entry
    }

    /// Checks a key against LMDB's key limit; for a multi-entry index, each element's key in the buffer.
    private func checkLengths(_ key: [UInt8], index: String, isMultiEntry: Bool) throws(StoreError) {
        guard isMultiEntry else { return try checkLength(key, index: index) }
        for element in IndexKeys.split(key) { try checkLength(Array(element), index: index) }
    }

    /// Throws `keyTooLong` naming the index's properties (`name`, `lastName+firstName`) when `key` is over the limit.
    private func checkLength(_ key: [UInt8], index: String) throws(StoreError) {
        let maxKeySize = core.environment.maxKeySize
        guard key.count <= maxKeySize else {
            throw .keyTooLong(model: model, property: index, length: key.count, limit: maxKeySize)
        }
    }

    /// What `make` returns, its errors told as store errors.
    private func told<R>(_ name: String, _ make: () throws -> R) throws(StoreError) -> R {
        do {
            return try make()
        } catch KeyEncoding.Failure.notANumber {
            throw .invalidKey(model: model, reason: "NaN has no place in the order of index \(name)")
        } catch KeyEncoding.Failure.unsupported(let reason) {
            throw .invalidKey(model: model, reason: reason)
        } catch {
            throw .invalidKey(model: model, reason: "\(error)")
        }
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
    func add(_ key: [UInt8], primaryKey: [UInt8], to database: Database, in txn: LMDB.WriteTransaction)
        throws(StoreError)
    {
        do { try txn.put(database, key: key, value: primaryKey) } catch {
            throw core.error(error, "write an index entry")
        }
    }

    func remove(_ key: [UInt8], primaryKey: [UInt8], from database: Database, in txn: LMDB.WriteTransaction)
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
