/// The changes of a query's results, one delivery at a time: `store.changes(of: query)`.
///
/// ```swift
/// for try await change in store.changes(of: store.objects(Dog.self).sorted(by: \.name)) {
///     if change.isInitial { show(change.results) } else { apply(change) }   // the indexes of UIKit's batch updates
/// }
/// ```
///
/// The first delivery is the query's results; each later one follows a commit that changed a record of a model the
/// query reads, and comes with the new frozen results and what changed since the previous delivery. Commits that
/// touch other models do not run the query (the change log that each commit writes says what it touched). The
/// sequence is pulled: a consumer that takes its time gets the newest results next, compared with the ones it had,
/// never a queue of every version in between. Ending the loop or cancelling its task stops the observation.
///
/// Commits of this process wake the sequence at once. Commits of other processes (an app extension, a tool) are found
/// by one poll per store while anyone waits: every 50 ms it reads the store's newest version (LMDB's meta page, about
/// a microsecond); `store.checkForChanges()` looks at once. Their change log makes the change set as precise as for
/// this process's commits.
public struct ResultsChanges<M: Model>: AsyncSequence, Sendable {
    public typealias Element = CollectionChange<M>
    let store: Store
    let query: Query<M>

    public func makeAsyncIterator() -> Iterator { Iterator(store: store, query: query) }

    /// Delivers the changes; see `ResultsChanges`.
    public struct Iterator: AsyncIteratorProtocol {
        let store: Store
        let query: Query<M>
        private var delivered: (results: Results<M>, keys: [KeyBytes])?
        /// The newest version known not to change the delivered results.
        private var checkedVersion: UInt64 = 0
        /// How many times the query ran: the cost the change log saves.
        private(set) var queryRuns = 0

        init(store: Store, query: Query<M>) {
            self.store = store
            self.query = query
        }

        public mutating func next() async throws -> CollectionChange<M>? {
            guard !Task.isCancelled else { return nil }
            guard let delivered else {
                let results = try query.results()
                queryRuns += 1
                self.delivered = (results, try Self.keys(of: results))
                checkedVersion = results.version.rawValue
                return .initial(results)
            }
            var current = delivered
            while !Task.isCancelled {
                let newest = store.version.rawValue
                if newest > checkedVersion {
                    switch try evaluate(after: current.results.version.rawValue) {
                    case .unchanged(let version):
                        checkedVersion = version
                    case .changed(let results, let changed):
                        queryRuns += 1
                        let keys = try Self.keys(of: results)
                        let model = M.storedName
                        let change = CollectionChange(
                            from: current.results, oldKeys: current.keys, to: results, newKeys: keys,
                            isChanged: { key in changed?.mayHaveChanged(key, of: model) ?? true })
                        current = (results, keys)
                        checkedVersion = results.version.rawValue
                        self.delivered = current
                        if !change.isEmpty { return change }
                    }
                    continue
                }
                await store.core.commits.wait(beyond: newest, reading: query.modelsRead)
            }
            return nil
        }

        private enum Evaluation {
            /// Nothing the query reads changed up to this version.
            case unchanged(UInt64)
            /// The query's new results, and what changed since the delivered ones (`nil`: unknown, all of it).
            case changed(Results<M>, ChangedRecords?)
        }

        /// Reads, in one snapshot, what changed since `version` and, when it touches the query, the new results.
        private func evaluate(after version: UInt64) throws(StoreError) -> Evaluation {
            let store = self.store
            let query = self.query
            return try store.withSnapshot { (snapshot) throws(StoreError) -> Evaluation in
                let txn = try snapshot.lmdb
                let newest = txn.id
                let changed = try store.core.run("read the change log") {
                    try store.core.changedRecords(after: version, through: newest, in: txn)
                }
                if let changed, !changed.touches(query.modelsRead) { return .unchanged(newest) }
                let results = Results(
                    try query.execute(in: snapshot, info: try store.info(for: M.self)),
                    version: StoreVersion(rawValue: newest), query: query)
                return .changed(results, changed)
            }
        }

        private static func keys(of results: Results<M>) throws(StoreError) -> [KeyBytes] {
            var keys: [KeyBytes] = []
            keys.reserveCapacity(results.count)
            for value in results {
                do {
                    keys.append(KeyBytes(try KeyEncoding.key(value.id)))
                } catch {
                    throw .invalidKey(model: M.storedName, reason: "\(error)")
                }
            }
            return keys
        }
    }
}

extension Query {
    /// The models whose changes can change this query's results: its own, the models of the targets it follows
    /// backlinks to, and the models whose links it excludes. A query that reads a closure (`filter`) reads only
    /// the records of its own model.
    var modelsRead: Set<String> {
        var read: Set<String> = [M.storedName]
        if let linkFilter { read.formUnion(linkFilter.targetsRead) }
        for exclusion in exclusions { read.insert(exclusion.model) }
        return read
    }
}

extension Store {
    /// Wakes every observer of this store to look for commits at once: call it when the app returns to the
    /// foreground, or after another process said it wrote.
    public func checkForChanges() {
        core.commits.notify(version: version.rawValue)
    }

    /// The changes of `query`'s results: first its results, then, after each commit that can change them, the new
    /// results with the indexes and ids of what was deleted, inserted and modified (see `CollectionChange`).
    public func changes<M: Model>(of query: Query<M>) -> ResultsChanges<M> {
        ResultsChanges(store: self, query: query.onStore(self))
    }
}
