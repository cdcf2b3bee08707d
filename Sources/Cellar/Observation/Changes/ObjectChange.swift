/// One delivery of an object's changes (Realm's `ObjectChange`).
public enum ObjectChange<M: Model>: Sendable {
    /// The object as it was when observation began.
    case initial(M)
    /// The object after a commit that changed it, with the names of the properties whose stored values changed (top
    /// level coding keys, in the record's order).
    case changed(M, properties: [String])
    /// The object was deleted, or did not exist when observation began; the sequence ends after it.
    case deleted
}

extension ObjectChange: Equatable where M: Equatable {}

/// The changes of one object, one delivery at a time: `store.changes(of: Dog.self, id: "taro")`.
///
/// ```swift
/// for try await change in store.changes(of: Dog.self, id: dog.id) {
///     switch change {
///     case .initial(let dog), .changed(let dog, _): show(dog)
///     case .deleted: showDeleted()      // a detail view that says "deleted" instead of crashing
///     }
/// }
/// ```
///
/// Commits that do not write this object do not read it (the change log says which records each commit wrote), and a
/// write that leaves its bytes as they were delivers nothing. Pulled as `ResultsChanges` is: a slow consumer gets the
/// newest value, compared with the one it had.
public struct ObjectChanges<M: Model>: AsyncSequence, Sendable {
    public typealias Element = ObjectChange<M>
    let store: Store
    let id: M.ID
    let properties: PropertyFilter<M>

    public func makeAsyncIterator() -> Iterator { Iterator(store: store, id: id, properties: properties) }

    /// Delivers the changes; see `ObjectChanges`.
    public struct Iterator: AsyncIteratorProtocol {
        let store: Store
        let id: M.ID
        let properties: PropertyFilter<M>
        private var key: [UInt8]?
        /// The bytes and value delivered last; `nil` before the first delivery.
        private var delivered: (bytes: [UInt8], value: M)?
        /// The version the object was last read at.
        private var readVersion: UInt64 = 0
        private var checkedVersion: UInt64 = 0
        private var ended = false

        init(store: Store, id: M.ID, properties: PropertyFilter<M>) {
            self.store = store
            self.id = id
            self.properties = properties
        }

        public mutating func next() async throws -> ObjectChange<M>? {
            guard !ended, !Task.isCancelled else { return nil }
            let key: [UInt8]
            if let known = self.key {
                key = known
            } else {
                do {
                    key = try KeyEncoding.key(id)
                } catch {
                    throw StoreError.invalidKey(model: M.storedName, reason: "\(error)")
                }
                self.key = key
            }
            while !Task.isCancelled {
                let newest = store.version.rawValue
                if delivered == nil || newest > checkedVersion {
                    let reading = try read(key, after: delivered == nil ? nil : readVersion)
                    checkedVersion = reading.version
                    switch reading.state {
                    case .unchanged:
                        continue
                    case .gone:
                        ended = true
                        return .deleted
                    case .stored(let bytes, let value, let fields):
                        readVersion = reading.version
                        guard let previous = delivered else {
                            delivered = (bytes, value)
                            return .initial(value)
                        }
                        // Compared with what was delivered, which a change to other properties than `keyPaths` leaves.
                        guard previous.bytes != bytes, properties.differ(previous.value, value) else { continue }
                        delivered = (bytes, value)
                        return .changed(value, properties: fields(previous.bytes))
                    }
                }
                await store.core.commits.wait(beyond: newest, reading: [M.storedName])
            }
            return nil
        }

        private enum State {
            case unchanged
            case gone
            /// The stored bytes, the value, and a function naming the fields that differ from earlier bytes.
            case stored([UInt8], M, ([UInt8]) -> [String])
        }

        /// Reads the object in one snapshot, unless the change log says no commit after `version` wrote it.
        private func read(_ key: [UInt8], after version: UInt64?) throws(StoreError) -> (state: State, version: UInt64)
        {
            let store = self.store
            return try store.withSnapshot { (snapshot) throws(StoreError) -> (state: State, version: UInt64) in
                let txn = try snapshot.lmdb
                let newest = txn.id
                let info = try store.info(for: M.self)
                if let version {
                    let changed = try store.core.run("read the change log") {
                        try store.core.changedRecords(after: version, through: newest, in: txn)
                    }
                    if let changed,
                        !changed.touches([info.name]) || changed.keys(of: info.name)?.contains(KeyBytes(key)) == false
                    {
                        return (.unchanged, newest)
                    }
                }
                let stored = try store.core.run("read") { try txn.get(info.records, key: key).map(Array.init) }
                guard let stored, let value = try snapshot.object(M.self, id: id) else { return (.gone, newest) }
                let dictionary = try snapshot.reloadDictionary(for: info)
                return (
                    .stored(stored, value, { previous in Self.changedFields(from: previous, to: stored, dictionary) }),
                    newest
                )
            }
        }

        /// The names of the top-level fields whose bytes differ, in the new record's order, then those removed.
        static func changedFields(from old: [UInt8], to new: [UInt8], _ dictionary: KeyDictionary) -> [String] {
            func fields(_ bytes: [UInt8]) -> [(String, [UInt8])] {
                bytes.withUnsafeBytes { raw in
                    guard let parsed = try? RecordFields(record: raw) else { return [] }
                    let names = parsed.names(in: dictionary)
                    guard names.count == parsed.fields.count else { return [] }
                    return parsed.fields.indices.map { index in
                        (
                            names[index],
                            parsed.withValue(at: index) { bytes, offset in
                                var reader = ByteReader(bytes, offset: offset)
                                _ = try? reader.skipValue()
                                return Array(bytes[offset..<reader.offset])
                            }
                        )
                    }
                }
            }
            let before = Dictionary(fields(old), uniquingKeysWith: { first, _ in first })
            let after = fields(new)
            var changed = after.filter { before[$0.0] != $0.1 }.map(\.0)
            changed += before.keys.filter { name in !after.contains { $0.0 == name } }.sorted()
            return changed
        }
    }
}

extension Store {
    /// The changes of the object of type `type` with id `id`: first its value, then after each commit that changed it
    /// the new value with the names of the changed properties, then `.deleted` when it is deleted, and the sequence
    /// ends. With `keyPaths`, a commit that changed none of those properties delivers nothing. See `ObjectChanges`.
    public func changes<M: Model>(
        of type: M.Type, id: M.ID, keyPaths: [PartialKeyPath<M> & Sendable] = []
    ) -> ObjectChanges<M> {
        ObjectChanges(store: self, id: id, properties: PropertyFilter(paths: keyPaths))
    }
}
