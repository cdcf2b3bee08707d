import LMDB

/// What following links does with one model's records, made where the model's type is known, so that a delete rule
/// can reach records of any model.
struct ModelOperations: Sendable {
    /// The distinct target keys of each of the model's links in the record at a key, in the schema's order; `nil`
    /// when there is no record. A record that cannot be decoded gives no targets: it can still be deleted.
    let linkTargets: @Sendable (WriteTransaction, ModelInfo, [UInt8]) throws(StoreError) -> [[[UInt8]]]?
    /// Deletes the record at a key with its index and backlink entries, rules already followed.
    let remove: @Sendable (WriteTransaction, [UInt8]) throws(StoreError) -> Void
    /// Drops from the record at a key its links to the given targets (by link position) and writes it back: in its
    /// bytes where `LinkBytes` can, decoded and encoded again otherwise.
    let removeLinks: @Sendable (WriteTransaction, ModelInfo, [UInt8], [Int: [[UInt8]]]) throws(StoreError) -> Void
    /// Checks the model's indexes and backlinks against its records, in words.
    let verify: @Sendable (ReadScope, ModelInfo, inout IntegrityProblems) throws(StoreError) -> Void

    init<M: Model>(_ type: M.Type) {
        linkTargets = { (transaction, info, key) throws(StoreError) in
            let txn = try transaction.lmdb
            let found: UnsafeRawBufferPointer?
            do throws(LMDBError) { found = try txn.get(info.records, key: key) } catch {
                throw transaction.lmdbError(error, "read")
            }
            guard let found else { return nil }
            guard !info.links.isEmpty else { return [] }
            let value: M
            do throws(StoreError) {
                value = try transaction.decode(M.self, found, key: key, info: info)
            } catch .decodingFailed {
                return info.links.map { _ in [] }
            }
            return try M.schema.links.map { (link) throws(StoreError) in try transaction.targetKeys(link, of: value) }
        }
        remove = { (transaction, key) throws(StoreError) in
            try transaction.removeRecord(M.self, key: key, state: try transaction.state(for: M.self))
        }
        removeLinks = { (transaction, info, key, targetsByLink) throws(StoreError) in
            let state = try transaction.state(for: M.self)
            if try transaction.removeLinksInBytes(
                key: key, targetsByLink, fields: LinkBytes.fields(of: M.self), state: state)
            {
                return
            }
            guard let old = try transaction.storedForUpkeep(M.self, key: key, state: state) else { return }
            var new = old
            var changes: [LinkChange] = []
            for (position, targets) in targetsByLink {
                do {
                    try M.schema.links[position].removeTargets(&new, targets)
                } catch {
                    throw .invalidKey(model: info.name, reason: "a link's id cannot be a key: \(error)")
                }
                changes.append(LinkChange(link: info.links[position], added: [], removed: targets))
            }
            // The backlink index said this record links to each target: those entries go, and nothing is added.
            try transaction.replace(old: old, with: new, key: key, state: state, linkChanges: changes)
        }
        verify = { (scope, info, problems) throws(StoreError) in
            try scope.verify(M.self, info: info, into: &problems)
        }
    }
}
