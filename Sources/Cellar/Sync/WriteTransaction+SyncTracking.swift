import CellarSyncProtocol
import LMDB

extension WriteTransaction {
    /// Sync's state for this transaction, read once; `nil` when the store does not sync.
    func loadSyncSession() throws(StoreError) -> SyncSession? {
        if let known = syncSession { return known }
        let session = try SyncSession.load(core: store.core, in: try writable)
        syncSession = .some(session)
        return session
    }

    /// Stamps what this transaction changed in synced models, before it commits: each written record's properties
    /// are compared with their tracked hashes, and those that changed get this transaction's stamp and put the
    /// record in the outbox; a deleted record becomes a tombstone. A record whose tracked state already matches (a
    /// pulled change, adopted with its remote stamps) is left alone.
    ///
    /// - Throws: `StoreError.idReusedAfterDelete` when a record is written with the id of a synced record deleted
    ///   before: a delete wins on every device, so the new record would be deleted again by the next sync.
    func trackSyncChanges() throws(StoreError) {
        guard case let session?? = syncSession else { return }
        let txn = try writable
        for state in states.values where !state.syncKeys.isEmpty {
            var seen = Set<[UInt8]>()
            let dictionary = state.encoder.dictionary
            for primaryKey in state.syncKeys where seen.insert(primaryKey).inserted {
                try session.track(
                    primaryKey, model: state.info.name, records: state.info.records, dictionary: dictionary,
                    core: store.core, in: txn)
            }
            state.syncKeys = []
        }
        do { try session.flush(core: store.core, in: txn) } catch { throw lmdbError(error, "write") }
    }

    /// Stamps now what this transaction changed in one record so far, instead of at the commit: a pulled change
    /// merged with the record must see this device's newest changes with their stamps, or the merge would take a
    /// change made earlier in the transaction (by a delete rule, say) for the state its old stamp describes.
    func trackNow(_ primaryKey: [UInt8], of state: ModelWriteState) throws(StoreError) {
        guard let session = state.syncSession else { return }
        try session.track(
            primaryKey, model: state.info.name, records: state.info.records, dictionary: state.encoder.dictionary,
            core: store.core, in: try writable)
    }

    /// The hash of each top-level property of a stored record, by name.
    static func fieldHashes(
        _ bytes: UnsafeRawBufferPointer, dictionary: KeyDictionary, model: String, primaryKey: [UInt8]
    ) throws(StoreError) -> [(name: String, hash: UInt64)] {
        let fields: RecordFields
        do {
            fields = try RecordFields(record: bytes)
        } catch {
            throw .decodingFailed(
                model: model, id: KeyEncoding.describe(primaryKey), field: "",
                reason: "sync cannot read its properties: \(error)")
        }
        var hashes: [(name: String, hash: UInt64)] = []
        hashes.reserveCapacity(fields.fields.count)
        for (position, field) in fields.fields.enumerated() {
            let name: String
            switch field.key {
            case .tag(let tag) where Int(tag) < dictionary.names.count: name = dictionary.names[Int(tag)]
            case .inline(let inline): name = inline
            default: continue
            }
            let hash: UInt64
            switch field.value {
            case .stored(let range):
                hash = fields.withValue(at: position) { buffer, _ in TrackedRecord.valueHash(buffer, range) }
            case .new(let new): hash = new.withUnsafeBytes { TrackedRecord.valueHash($0, 0..<$0.count) }
            }
            hashes.append((name, hash))
        }
        return hashes
    }
}
