import LMDB

/// The write transaction inside `Store.write`: every change in it commits together or not at all. (Named so beside
/// `Snapshot`, and so that it never meets SwiftUI's `Transaction`, which every view file imports.)
///
/// Its reads (`object`, `count`, `objects`, from `ReadScope`) see its own writes; `version` is the version it will
/// create when it commits. It lives only inside the closure, on the closure's thread.
public final class WriteTransaction: ReadScope {
    private var transaction: LMDB.WriteTransaction?
    /// Per-model state of this transaction: encoder, key dictionary, pending sequence value.
    private(set) var states: [ObjectIdentifier: ModelWriteState] = [:]
    /// The state used last: a transaction usually writes one model many times.
    private var lastState: ModelWriteState?
    /// What this transaction changed, written to the change log for observers.
    private(set) var changes = ChangeLog()
    /// The version this transaction creates, once its change log is written: observers are woken with it.
    var committedVersion: UInt64?
    /// Links this transaction added, whose targets must exist when it commits.
    var linksToCheck: [AddedLink] = []
    /// Targets of owning links this transaction removed: deleted at the commit when nothing links to them then.
    var unlinkedOwned: [(link: LinkInfo, target: [UInt8])] = []
    /// Set while a delete pulled from another device runs: `.deny` rules do not stop it (`deleteApplyingSync`).
    var deletesDespiteDenyRules = false
    /// Sync's state, read at the first model this transaction writes: `.some(nil)` when the store does not sync.
    var syncSession: SyncSession??
    /// The stored links into each model from models the store's configuration does not name, read from the stored
    /// schema at the first delete of the transaction (another configuration may have added some since the opening).
    private var foreignLinksByTarget: [String: [ForeignLink]]?

    init(store: Store, transaction: LMDB.WriteTransaction) {
        self.transaction = transaction
        super.init(store: store)
    }

    // MARK: Writing

    /// Inserts `value` and returns it as stored (with its new id, for an auto-increment model whose id was `0`).
    ///
    /// - Throws: `StoreError.duplicatePrimaryKey` when a record with the same id exists.
    @discardableResult
    public func insert<M: Model>(_ value: M) throws(StoreError) -> M {
        var value = value
        try insert(&value)
        return value
    }

    /// Inserts `value`, giving it the next id first when its model numbers ids and its id is `0`.
    ///
    /// - Throws: `StoreError.duplicatePrimaryKey` when a record with the same id exists.
    public func insert<M: Model>(_ value: inout M) throws(StoreError) {
        let state = try state(for: M.self)
        if state.info.numbersIDs { try assignID(&value, state: state) }
        let key = try primaryKey(value.id, of: M.self)
        // The index entries are made without the model's type, in buffers the model's state keeps, and links
        // (which need the type) are planned only when there are some.
        if !state.indexEntries.isEmpty {
            try withUnsafePointer(to: &value) { (new) throws(StoreError) in
                try makeIndexEntries(of: new, primaryKey: key, state: state)
            }
        }
        var plan = WritePlan()
        if !state.info.links.isEmpty { try planLinks(ofInserted: value, primaryKey: key, state: state, into: &plan) }
        try put(value, key: key, state: state, flags: .noOverwrite)
        try addIndexEntries(primaryKey: key, state: state)
        if !state.fullText.isEmpty {
            let txn = try writable
            for index in state.fullText {
                let texts = withUnsafePointer(to: &value) { index.texts(UnsafeRawPointer($0)) }
                try index.buffer.add(primaryKey: key, texts: texts, in: txn)
            }
        }
        try apply(plan, primaryKey: key, state: state)
        record(.inserted, key: key, state: state)
    }

    /// Inserts `value`, or replaces the stored record with the same id. Returns it as stored.
    @discardableResult
    public func upsert<M: Model>(_ value: M) throws(StoreError) -> M {
        var value = value
        try upsert(&value)
        return value
    }

    /// Inserts `value`, or replaces the stored record with the same id; an auto-increment id of `0` is assigned.
    public func upsert<M: Model>(_ value: inout M) throws(StoreError) {
        let state = try state(for: M.self)
        if state.info.numbersIDs { try assignID(&value, state: state) }
        let key = try primaryKey(value.id, of: M.self)
        let existed = try exists(key, state.info)
        let old: M? = existed ? try storedForUpkeep(M.self, key: key, state: state) : nil
        let plan = try planWrite(old: old, new: value, primaryKey: key, state: state)
        guard try put(value, key: key, state: state, unlessUnchanged: existed) else { return }
        try apply(plan, primaryKey: key, state: state)
        record(existed ? .updated : .inserted, key: key, state: state)
    }

    /// Replaces the stored record that has `value`'s id.
    ///
    /// - Throws: `StoreError.objectNotFound` when no such record exists.
    public func update<M: Model>(_ value: M) throws(StoreError) {
        let state = try state(for: M.self)
        let key = try primaryKey(value.id, of: M.self)
        guard try exists(key, state.info) else {
            throw .objectNotFound(model: state.info.name, id: KeyEncoding.describe(key))
        }
        let old = try storedForUpkeep(M.self, key: key, state: state)
        try replace(old: old, with: value, key: key, state: state)
    }

    /// Deletes the record of type `type` with primary key `id`, and follows the delete rules of the links from and
    /// to it. Returns `false` when there was none.
    ///
    /// - Throws: `StoreError.deleteDenied` when a link's rule forbids the delete; nothing is deleted then.
    @discardableResult
    public func delete<M: Model>(_ type: M.Type, id: M.ID) throws(StoreError) -> Bool {
        let state = try state(for: type)
        return try deleteRecords(M.self, keys: [try primaryKey(id, of: type)], state: state) == 1
    }

    /// Deletes the stored record with `value`'s id. Returns `false` when there was none.
    @discardableResult
    public func delete<M: Model>(_ value: M) throws(StoreError) -> Bool {
        try delete(M.self, id: value.id)
    }

    /// Deletes the records of type `type` with these ids, following the links' delete rules once for all of them,
    /// and returns how many existed. Either all are deleted or, when a rule denies one, none.
    @discardableResult
    public func delete<M: Model, IDs: Sequence<M.ID>>(_ type: M.Type, ids: IDs) throws(StoreError) -> Int {
        let state = try state(for: type)
        var keys: [[UInt8]] = []
        for id in ids { keys.append(try primaryKey(id, of: type)) }
        return try deleteRecords(M.self, keys: keys, state: state)
    }

    /// Deletes every record of `type`, following the links' delete rules, and returns how many there were. The id
    /// sequence is kept: new records still get ids never used before.
    @discardableResult
    public func deleteAll<M: Model>(_ type: M.Type) throws(StoreError) -> Int {
        let state = try state(for: type)
        var keys: [[UInt8]] = []
        let txn = try lmdb
        try store.core.run("delete") {
            try txn.walk(state.info.records) { entry in
                keys.append(Array(entry.key))
                return true
            }
        }
        return try deleteRecords(M.self, keys: keys, state: state)
    }

    /// Deletes every record `query` matches (Realm's `realm.delete(results)`) through the one delete path, indexes,
    /// links and delete rules included, and returns how many. The query runs in this transaction and sees its writes;
    /// its sort, offset and limit choose the records as they would choose results. When an index or the ids alone
    /// decide the query, the records' keys come from them: no record is read but those deleted.
    ///
    /// - Throws: `StoreError.deleteDenied` when a link's rule forbids deleting one of them; nothing is deleted then.
    @discardableResult
    public func delete<M: Model>(_ query: Query<M>) throws(StoreError) -> Int {
        let state = try state(for: M.self)
        return try deleteRecords(M.self, keys: try query.primaryKeys(in: self), state: state)
    }

    /// Deletes the records of a frozen `results` that still exist, and returns how many did.
    @discardableResult
    public func delete<M: Model>(_ results: Results<M>) throws(StoreError) -> Int {
        try delete(M.self, ids: results.map(\.id))
    }

    /// The one path every public delete takes: straight to `removeRecord` when no link leads from or to the model
    /// (declared in this configuration, or stored by a model it does not name), through a planned deletion that
    /// follows the delete rules otherwise.
    private func deleteRecords<M: Model>(_ type: M.Type, keys: [[UInt8]], state: ModelWriteState) throws(StoreError)
        -> Int
    {
        guard state.info.links.isEmpty, store.incomingLinks(to: state.info).isEmpty,
            try foreignLinks(to: state.info).isEmpty
        else {
            let plan = try planDeletion(of: keys.map { (state.info, $0) })
            try execute(plan)
            return Set(keys.map(KeyBytes.init)).filter { plan.contains(model: state.info.name, key: $0.bytes) }.count
        }
        var deleted = 0
        for key in keys where try removeRecord(M.self, key: key, state: state) { deleted += 1 }
        return deleted
    }

    /// Deletes one record with its index and backlink entries; the delete rules were followed by the caller.
    @discardableResult
    func removeRecord<M: Model>(_ type: M.Type, key: [UInt8], state: ModelWriteState) throws(StoreError) -> Bool {
        let txn = try writable
        let old: M?
        var damaged = false
        do {
            old = try storedForUpkeep(M.self, key: key, state: state)
        } catch .decodingFailed {
            // A record that no longer decodes can still be deleted: its index entries are found by their value.
            old = nil
            damaged = true
        }
        let deleted: Bool
        do { deleted = try txn.delete(state.info.records, key: key) } catch { throw lmdbError(error, "delete") }
        guard deleted else { return false }
        if damaged {
            try removeDerivedEntries(pointingTo: key, state: state)
            for index in state.fullText {
                try index.buffer.write(in: txn)
                try index.storage.remove(primaryKey: key, texts: nil, in: txn)
            }
        } else {
            let plan = try planWrite(old: old, new: nil, primaryKey: key, state: state, followOwnership: false)
            try apply(plan, primaryKey: key, state: state)
        }
        record(.deleted, key: key, state: state)
        return true
    }

    /// Replaces the stored `old` with `new`: the path of `update` and of the rewrites that drop links to deleted
    /// records.
    ///
    /// A caller that knows exactly how the links changed passes `linkChanges` (and follows ownership itself): the
    /// old and new lists are then not compared.
    func replace<M: Model>(
        old: M?, with new: M, key: [UInt8], state: ModelWriteState, linkChanges: [LinkChange]? = nil
    ) throws(StoreError) {
        let plan = try planWrite(
            old: old, new: new, primaryKey: key, state: state, linkChanges: linkChanges)
        guard try put(new, key: key, state: state, unlessUnchanged: true) else { return }
        try apply(plan, primaryKey: key, state: state)
        record(.updated, key: key, state: state)
    }

    /// Removes every index and backlink entry that names `primaryKey`, reading each database whole: the way to
    /// clean up after a record whose values cannot be decoded to find its entries.
    private func removeDerivedEntries(pointingTo primaryKey: [UInt8], state: ModelWriteState) throws(StoreError) {
        let txn = try writable
        let writer = indexWriter(state)
        for database in state.info.indexes + state.info.links.map(\.database) {
            var found: [[UInt8]] = []
            try store.core.run("read an index") {
                try txn.walk(database) { entry in
                    if entry.value.elementsEqual(primaryKey) { found.append(Array(entry.key)) }
                    return true
                }
            }
            for key in found { try writer.remove(key, primaryKey: primaryKey, from: database, in: txn) }
        }
    }

    /// The stored record at `key`, when the model has index or backlink entries that must be found again.
    func storedForUpkeep<M: Model>(_ type: M.Type, key: [UInt8], state: ModelWriteState) throws(StoreError) -> M? {
        guard state.info.hasDerivedData else { return nil }
        let txn = try lmdb
        let bytes: UnsafeRawBufferPointer?
        do { bytes = try txn.get(state.info.records, key: key) } catch { throw lmdbError(error, "read") }
        guard let bytes else { return nil }
        return try decode(M.self, bytes, key: key, info: state.info)
    }

    /// What a write moves besides the record: index entries, backlink entries, and the owned targets it orphans.
    /// Worked out, with every check, before anything is written: a refused write leaves the transaction as it
    /// was, even when the caller catches the error and goes on.
    struct WritePlan {
        var indexChanges: [IndexChange] = []
        /// Each full-text index's texts before and after the write (`nil`: no record), where they differ.
        var fullTextChanges: [(position: Int, old: [String?]?, new: [String?]?)] = []
        var linkChanges: [LinkChange] = []
        /// Targets of owning links the write removes: collected at the commit when no link is left to them.
        var unlinkedOwned: [(link: LinkInfo, target: [UInt8])] = []
    }

    /// The index entries a write moves: for each index whose key changes, the entry to remove and the one to add.
    struct IndexChange {
        let position: Int
        let remove: [UInt8]?
        let add: [UInt8]?
    }

    /// Works out how a record's index and backlink entries change from `old` to `new` (either may be absent).
    /// `followOwnership` is `false` inside a planned deletion, which has found the orphans already; `linkChanges`,
    /// when given, are the backlink entries to move, known to the caller.
    func planWrite<M: Model>(
        old oldValue: M?, new newValue: M?, primaryKey: [UInt8], state: ModelWriteState, followOwnership: Bool = true,
        linkChanges: [LinkChange]? = nil
    ) throws(StoreError) -> WritePlan {
        var plan = WritePlan()
        guard state.info.hasDerivedData else { return plan }
        if !state.indexEntries.isEmpty {
            plan.indexChanges = try withPointers(to: oldValue, newValue) { (old, new) throws(StoreError) in
                try planIndexes(old: old, new: new, primaryKey: primaryKey, state: state)
            }
        }
        if !state.fullText.isEmpty {
            plan.fullTextChanges = try withPointers(to: oldValue, newValue) { (old, new) throws(StoreError) in
                state.fullText.indices.compactMap { position in
                    let index = state.fullText[position]
                    let (before, after) = (old.map(index.texts), new.map(index.texts))
                    return before == after ? nil : (position, before, after)
                }
            }
        }
        if let linkChanges {
            plan.linkChanges = linkChanges
        } else if !state.info.links.isEmpty {
            try planLinks(
                old: oldValue, new: newValue, primaryKey: primaryKey, state: state, followOwnership: followOwnership,
                into: &plan)
        }
        return plan
    }

    /// The index entries a write moves from the record at `old` to the one at `new` (either may be absent),
    /// worked out without the model's type: generic code from another module would look up generic metadata at
    /// every write.
    func planIndexes(
        old: UnsafeRawPointer?, new: UnsafeRawPointer?, primaryKey: [UInt8], state: ModelWriteState
    ) throws(StoreError) -> [IndexChange] {
        let txn = try lmdb
        let writer = indexWriter(state)
        var changes: [IndexChange] = []
        for position in state.indexEntries.indices {
            let index = state.indexEntries[position]
            var oldEntry: (key: [UInt8], mustBeUnique: Bool)?
            var newEntry: (key: [UInt8], mustBeUnique: Bool)?
            if let old { oldEntry = try writer.entry(index, of: old) }
            if let new { newEntry = try writer.entry(index, of: new) }
            guard oldEntry?.key != newEntry?.key else { continue }
            if index.isMultiEntry {
                // One entry per element: the elements that left, and those that came.
                let oldKeys = Set(oldEntry.map { IndexKeys.split($0.key).map(Array.init) } ?? [])
                let newKeys = Set(newEntry.map { IndexKeys.split($0.key).map(Array.init) } ?? [])
                for key in oldKeys.subtracting(newKeys) {
                    changes.append(IndexChange(position: position, remove: key, add: nil))
                }
                for key in newKeys.subtracting(oldKeys) {
                    changes.append(IndexChange(position: position, remove: nil, add: key))
                }
                continue
            }
            if let newEntry, newEntry.mustBeUnique {
                try writer.checkUnique(
                    index.name, key: newEntry.key, primaryKey: primaryKey, in: state.info.indexes[position], txn: txn)
            }
            changes.append(IndexChange(position: position, remove: oldEntry?.key, add: newEntry?.key))
        }
        return changes
    }

    /// Makes the index entries of an inserted record in `state.newIndexKeys`, and checks the unique ones.
    private func makeIndexEntries(of new: UnsafeRawPointer, primaryKey: [UInt8], state: ModelWriteState)
        throws(StoreError)
    {
        let txn = try lmdb
        let writer = indexWriter(state)
        for position in state.indexEntries.indices {
            let index = state.indexEntries[position]
            if try writer.entry(index, of: new, into: &state.newIndexKeys[position]) {
                try writer.checkUnique(
                    index.name, key: state.newIndexKeys[position], primaryKey: primaryKey,
                    in: state.info.indexes[position], txn: txn)
            }
        }
    }

    /// Adds the entries `makeIndexEntries` made.
    private func addIndexEntries(primaryKey: [UInt8], state: ModelWriteState) throws(StoreError) {
        guard !state.indexEntries.isEmpty else { return }
        let txn = try writable
        let writer = indexWriter(state)
        for position in state.indexEntries.indices {
            let database = state.info.indexes[position]
            if state.indexEntries[position].isMultiEntry {
                for key in IndexKeys.split(state.newIndexKeys[position]) {
                    try writer.add(Array(key), primaryKey: primaryKey, to: database, in: txn)
                }
            } else {
                try writer.add(state.newIndexKeys[position], primaryKey: primaryKey, to: database, in: txn)
            }
        }
    }

    /// The backlink entries an insert adds. A function of its own, so that only inserts of models with links make
    /// the optional values `planLinks` takes (generic code makes what a function needs when it starts).
    private func planLinks<M: Model>(
        ofInserted value: M, primaryKey: [UInt8], state: ModelWriteState, into plan: inout WritePlan
    ) throws(StoreError) {
        try planLinks(old: nil, new: value, primaryKey: primaryKey, state: state, followOwnership: true, into: &plan)
    }

    /// Runs `body` with pointers to `old` and `new`, where they are present.
    private func withPointers<M: Model, R>(
        to old: M?, _ new: M?, _ body: (UnsafeRawPointer?, UnsafeRawPointer?) throws(StoreError) -> R
    ) throws(StoreError) -> R {
        switch (old, new) {
        case (.some(let old), .some(let new)):
            return try withUnsafePointer(to: old) { (old) throws(StoreError) in
                try withUnsafePointer(to: new) { (new) throws(StoreError) in try body(old, new) }
            }
        case (.some(let old), .none):
            return try withUnsafePointer(to: old) { (old) throws(StoreError) in try body(old, nil) }
        case (.none, .some(let new)):
            return try withUnsafePointer(to: new) { (new) throws(StoreError) in try body(nil, new) }
        case (.none, .none):
            return try body(nil, nil)
        }
    }

    func apply(_ plan: WritePlan, primaryKey: [UInt8], state: ModelWriteState) throws(StoreError) {
        if !plan.indexChanges.isEmpty {
            let txn = try writable
            let writer = indexWriter(state)
            for change in plan.indexChanges {
                let database = state.info.indexes[change.position]
                if let old = change.remove { try writer.remove(old, primaryKey: primaryKey, from: database, in: txn) }
                if let new = change.add { try writer.add(new, primaryKey: primaryKey, to: database, in: txn) }
            }
        }
        if !plan.fullTextChanges.isEmpty {
            let txn = try writable
            for change in plan.fullTextChanges {
                let (storage, buffer) = (
                    state.fullText[change.position].storage, state.fullText[change.position].buffer
                )
                // A record already stored is edited in the blocks, after the buffered ones are written.
                if change.old != nil, !buffer.isEmpty { try buffer.write(in: txn) }
                switch (change.old, change.new) {
                case (let old?, let new?): try storage.update(primaryKey: primaryKey, old: old, new: new, in: txn)
                case (nil, let new?): try buffer.add(primaryKey: primaryKey, texts: new, in: txn)
                case (let old?, nil): try storage.remove(primaryKey: primaryKey, texts: old, in: txn)
                case (nil, nil): break
                }
            }
        }
        if !plan.linkChanges.isEmpty { try applyLinks(plan.linkChanges, primaryKey: primaryKey, state: state) }
        if !plan.unlinkedOwned.isEmpty { unlinkedOwned.append(contentsOf: plan.unlinkedOwned) }
    }

    /// Logs a change for observers, until the model's log is "changed wholesale": then there is nothing to add.
    func record(_ kind: ChangeLog.Kind, key: [UInt8], state: ModelWriteState) {
        if state.syncSession != nil { state.syncKeys.append(key) }
        guard !state.loggedWholesale else { return }
        state.loggedWholesale = changes.record(kind, key: key, model: state.info.name)
    }

    func indexWriter(_ state: ModelWriteState) -> IndexWriter {
        IndexWriter(model: state.info.name, core: store.core)
    }

    // MARK: Internals

    var writable: LMDB.WriteTransaction {
        get throws(StoreError) {
            guard let transaction else { throw .transactionEnded }
            return transaction
        }
    }

    private func exists(_ key: [UInt8], _ info: ModelInfo) throws(StoreError) -> Bool {
        let txn = try lmdb
        do { return try txn.get(info.records, key: key) != nil } catch { throw lmdbError(error, "read") }
    }

    /// Encodes and stores `value`. With `.noOverwrite`, an existing key is a `duplicatePrimaryKey` error.
    /// Writes `value` under `key`. With `unlessUnchanged`, a stored record with the same bytes is left alone and
    /// `false` returned: an upsert that changes nothing is no change for observers.
    @discardableResult
    private func put<M: Model>(
        _ value: M, key: [UInt8], state: ModelWriteState, flags: PutFlags = [], unlessUnchanged: Bool = false
    ) throws(StoreError) -> Bool {
        let txn = try writable
        let record: [UInt8]
        do {
            record = try state.encoder.encodeModel(value)
        } catch {
            throw .encodingFailed(model: state.info.name, reason: describeEncodingFailure(error))
        }
        if !state.info.firstWriteChecked.load(ordering: .relaxed) {
            try checkFirstWrite(value, writes: record, state: state)
        }
        if unlessUnchanged, state.encoder.addedNames.isEmpty {
            do {
                if let stored = try txn.get(state.info.records, key: key), RecordFormat.sameValue(stored, record) {
                    return false
                }
            } catch {
                throw lmdbError(error, "read")
            }
        }
        do {
            try txn.put(state.info.records, key: key, value: record, flags: flags)
        } catch .keyExists where flags.contains(.noOverwrite) {
            throw .duplicatePrimaryKey(model: state.info.name, id: KeyEncoding.describe(key))
        } catch {
            throw lmdbError(error, "write")
        }
        // New key names are stored with the record that first used them, so the record is always readable.
        if !state.encoder.addedNames.isEmpty {
            let dictionary = state.encoder.absorbAddedNames()
            do {
                try txn.put(store.core.meta, key: state.info.dictionaryKey, value: dictionary.serialized)
            } catch {
                throw lmdbError(error, "write")
            }
            state.dictionaryChanged = true
        }
        return true
    }

    /// Gives `value` the next id when its id is unset; moves the sequence past an explicit id. Called only for a
    /// model that numbers ids.
    private func assignID<M: Model>(_ value: inout M, state: ModelWriteState) throws(StoreError) {
        guard let numberID = state.numberID else { return }
        let next = try state.nextID(in: self)
        let moved = withUnsafeMutablePointer(to: &value) { numberID(UnsafeMutableRawPointer($0), next) }
        guard let moved else { throw .sequenceExhausted(model: state.info.name) }
        state.pendingNextID = moved
    }

    func state<M: Model>(for type: M.Type) throws(StoreError) -> ModelWriteState {
        let id = ObjectIdentifier(type)
        if let last = lastState, last.type == id { return last }
        if let state = states[id] {
            lastState = state
            return state
        }
        let info = try store.info(for: type)
        // Another process may have added key names since this process last looked: start from the stored ones.
        var dictionary = info.dictionary
        let txn = try lmdb
        let stored: Int?
        do {
            stored = try txn.get(store.core.meta, key: info.dictionaryKey).flatMap(KeyDictionary.storedCount)
        } catch {
            throw lmdbError(error, "read")
        }
        if (stored ?? 0) != dictionary.names.count { dictionary = try storedDictionary(for: info) }
        let state = ModelWriteState(
            type: id, info: info, dictionary: dictionary,
            indexEntries: M.schema.indexes.map(IndexEntryMaker.init),
            fullText: zip(M.schema.fullTextIndexes, info.fullText).map { index, databases in
                FullTextMaker(index, storage: FullTextStorage(databases: databases, core: store.core))
            },
            numberID: M.schema.sequence.map { sequence in
                // `Int64` and `Int` ids, the usual ones, read and set as the number they are: the mapping's
                // closures are generic over the id type, unspecialized, and cost a thousand instructions an insert.
                if M.ID.self == Int64.self {
                    return { record, next in
                        let value = record.assumingMemoryBound(to: M.self)
                        let id = unsafeBitCast(value.pointee.id, to: Int64.self)
                        if id == 0 {
                            guard next < .max else { return nil }
                            value.pointee.id = unsafeBitCast(next, to: M.ID.self)
                            return next + 1
                        }
                        return id < next ? next : id < .max ? id + 1 : nil
                    }
                }
                if M.ID.self == Int.self {
                    // Converted, never reinterpreted: an `Int` of 32 bits runs out at its own largest value.
                    return { record, next in
                        let value = record.assumingMemoryBound(to: M.self)
                        let id = Int64(unsafeBitCast(value.pointee.id, to: Int.self))
                        let largest = Int64(Int.max)
                        if id == 0 {
                            guard next < largest, let assigned = Int(exactly: next) else { return nil }
                            value.pointee.id = unsafeBitCast(assigned, to: M.ID.self)
                            return next + 1
                        }
                        return id < next ? next : id < largest ? id + 1 : nil
                    }
                }
                return { record, next in
                    let value = record.assumingMemoryBound(to: M.self)
                    if sequence.isUnset(value.pointee.id) {
                        guard let id = sequence.fromSequence(next), next < .max else { return nil }
                        value.pointee.id = id
                        return next + 1
                    }
                    if let explicit = sequence.toSequence(value.pointee.id), explicit >= next {
                        return explicit < .max ? explicit + 1 : nil
                    }
                    return next
                }
            })
        if let session = try loadSyncSession(), session.models.contains(info.name) { state.syncSession = session }
        states[id] = state
        lastState = state
        return state
    }

    /// The stored links that lead to records of `info`'s model from models the configuration does not name.
    func foreignLinks(to info: ModelInfo) throws(StoreError) -> [ForeignLink] {
        if let known = foreignLinksByTarget { return known[info.name] ?? [] }
        let txn = try writable
        let registered = Set(store.registeredModels.map(\.name))
        let found = try store.core.run("read the stored schema of") {
            try store.core.foreignLinks(registered: registered, in: txn)
        }
        foreignLinksByTarget = found
        return found[info.name] ?? []
    }

    /// Looks at the first record the model writes through this store. A plain `Codable` model's record shows its
    /// coding keys, which no type metadata holds: they tie its properties to its fields (`CodableFields`), and a
    /// `Schema` rename to a key it does not write is refused. A `@Record` model's record is compared with the one its
    /// `Codable` conformance writes: an `encode(to:)` or `CodingKeys` declared in an extension, which the macro cannot
    /// see, makes them differ, and the same records would then read differently with and without `@Record`.
    private func checkFirstWrite<M: Model>(_ value: M, writes record: [UInt8], state: ModelWriteState)
        throws(StoreError)
    {
        guard M._recordKeys != nil else {
            // What the model's own encoding wrote ties its stored properties to its fields, for byte filters.
            let dictionary = state.encoder.dictionary.appending(state.encoder.addedNames)
            let keys = record.withUnsafeBytes { CodableFields.learn(M.self, from: $0, dictionary: dictionary) }
            if let keys, let refusal = M.renameRefusal(keys: keys) {
                throw .invalidSchema(model: state.info.name, reason: refusal)
            }
            state.info.firstWriteChecked.store(true, ordering: .relaxed)
            return
        }
        let viaCodable: [UInt8]
        do {
            viaCodable = try state.encoder.encode(value)
        } catch {
            throw .encodingFailed(model: state.info.name, reason: describeEncodingFailure(error))
        }
        guard viaCodable == record else {
            throw .invalidSchema(
                model: state.info.name,
                reason: RecordCodableMismatch.reason(
                    "the record its @Record code writes differs from the one its Codable conformance writes"))
        }
        state.info.firstWriteChecked.store(true, ordering: .relaxed)
    }

    /// Writes what the transaction kept in memory (sequence values, the change log) before the commit.
    func flush() throws(StoreError) {
        try collectOrphans()
        try writeFullTextBuffers()
        try checkAddedLinks()
        try trackSyncChanges()
        let txn = try writable
        try writeChangeLog(txn)
        for state in states.values {
            guard let next = state.pendingNextID else { continue }
            do {
                try txn.put(
                    store.core.meta, key: state.info.sequenceKey,
                    value: withUnsafeBytes(of: next.littleEndian, Array.init))
            } catch {
                throw lmdbError(error, "write")
            }
        }
    }

    /// Writes the postings kept in memory, of `info`'s model or of every model, before the index is read or edited.
    func writeFullTextBuffers(of info: ModelInfo? = nil) throws(StoreError) {
        for state in states.values where info.map({ state.info === $0 }) ?? true {
            for index in state.fullText where !index.buffer.isEmpty { try index.buffer.write(in: try writable) }
        }
    }

    override func prepareFullTextRead(_ info: ModelInfo) throws(StoreError) {
        try writeFullTextBuffers(of: info)
    }

    /// Called after a successful commit: key dictionaries this transaction extended become everyone's.
    func publishCommitted() {
        for state in states.values where state.dictionaryChanged { state.info.publish(state.encoder.dictionary) }
        if case let session?? = syncSession, session.openedDatabases {
            store.core.syncDatabases.withLock { $0 = session.databases }
        }
    }

    func end() { transaction = nil }

    // MARK: Reading, as `ReadScope` asks

    override var lmdb: ReadTransaction {
        get throws(StoreError) { try writable }
    }

    override func dictionary(for info: ModelInfo) throws(StoreError) -> KeyDictionary {
        for state in states.values where state.info === info { return state.encoder.dictionary }
        return info.dictionary
    }

    override func reloadDictionary(for info: ModelInfo) throws(StoreError) -> KeyDictionary {
        // Inside the transaction the stored dictionary includes its own additions; it is published on commit.
        try storedDictionary(for: info)
    }
}

/// One model's state within one write transaction.
final class ModelWriteState {
    let type: ObjectIdentifier
    let info: ModelInfo
    /// How to make each index's entry of a record, without the model's type.
    let indexEntries: [IndexEntryMaker]
    /// Each full-text index: how to read a record's texts without the model's type, and its databases.
    let fullText: [FullTextMaker]
    /// The index keys of the record being inserted, one per index: buffers reused from one insert to the next.
    var newIndexKeys: [[UInt8]]
    let encoder: RecordEncoder
    var dictionaryChanged = false
    /// Whether the change log holds this model as changed wholesale, so further changes need no logging.
    var loggedWholesale = false
    /// The entry key of the field each link is kept in (`LinkBytes`), once a delete has dropped links in bytes.
    var linkFieldCodes: [UInt64?]?
    /// Sync's state, when the model syncs; then `syncKeys` collects the key of every record the transaction writes,
    /// all of them (the change log stops listing past its limit), for `trackSyncChanges`.
    var syncSession: SyncSession?
    var syncKeys: [[UInt8]] = []
    /// The sequence's next value once this transaction has used or moved it; written by `flush`.
    var pendingNextID: Int64?
    /// For a model whose ids come from a sequence: gives the record at the pointer (a model value) the sequence's
    /// next value when its id is unset, and returns the value that follows it, or `nil` when the sequence is
    /// exhausted. Made once from the schema, without the model's type at each call: reading `M.schema` looks up
    /// its metadata, and an optional's, on every insert.
    let numberID: ((UnsafeMutableRawPointer, Int64) -> Int64?)?

    init(
        type: ObjectIdentifier, info: ModelInfo, dictionary: KeyDictionary, indexEntries: [IndexEntryMaker],
        fullText: [FullTextMaker], numberID: ((UnsafeMutableRawPointer, Int64) -> Int64?)?
    ) {
        self.type = type
        self.info = info
        self.indexEntries = indexEntries
        self.fullText = fullText
        self.numberID = numberID
        newIndexKeys = Array(repeating: [], count: indexEntries.count)
        self.encoder = RecordEncoder(dictionary: dictionary)
    }

    func nextID(in transaction: WriteTransaction) throws(StoreError) -> Int64 {
        if let pendingNextID { return pendingNextID }
        let txn = try transaction.lmdb
        let stored: UnsafeRawBufferPointer?
        do {
            stored = try txn.get(transaction.store.core.meta, key: info.sequenceKey)
        } catch {
            throw transaction.lmdbError(error, "read")
        }
        guard let stored else { return 1 }
        guard stored.count == 8 else {
            throw .corruptedFile(
                path: transaction.store.core.path, reason: "the id sequence of \(info.name) is damaged")
        }
        return Int64(littleEndian: stored.loadUnaligned(as: Int64.self))
    }
}
