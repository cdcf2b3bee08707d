/// The changes of a query's results, one delivery at a time: `store.changes(of: query)`.
///
/// ```swift
/// for try await change in store.changes(of: store.objects(Dog.self).sorted(by: \.name)) {
///     if change.isInitial { show(change.results) } else { apply(change) }   // the indexes of UIKit's batch updates
/// }
/// ```
///
/// The first delivery is the query's results; each later one follows a commit that changed a record of a model the
/// query reads, and comes with the new frozen results and what changed since the previous delivery. The change log
/// that each commit writes says which records it wrote: commits to other models wake nothing, and the records a
/// commit wrote are read and placed among the delivered results by the query's order, so one changed row of a large
/// sorted result costs one decode, not a run of the query. (A query with `limit`, `offset`, `distinct` or a link
/// condition runs again, as does one whose model a commit changed wholesale.) The sequence is pulled: a consumer that
/// takes its time gets the newest results next, compared with the ones it had, never a queue of every version in
/// between. Ending the loop or cancelling its task stops the observation.
///
/// Commits of this process wake the sequence at once. Commits of other processes (an app extension, a tool) are seen
/// as they write the file on Linux (inotify), and by a poll every 50 ms elsewhere, only while someone waits;
/// `store.checkForChanges()` looks at once. Their change log makes the change set as precise as for this process's
/// commits.
public struct ResultsChanges<M: Model>: AsyncSequence, Sendable {
    public typealias Element = CollectionChange<M>
    let store: Store
    let query: Query<M>
    let properties: PropertyFilter<M>

    public func makeAsyncIterator() -> Iterator { Iterator(store: store, query: query, properties: properties) }

    /// Delivers the changes; see `ResultsChanges`.
    public struct Iterator: AsyncIteratorProtocol {
        let store: Store
        let query: Query<M>
        let properties: PropertyFilter<M>
        /// The delivered results; `nil` before the first delivery.
        private(set) var reducer: ResultsReducer<M>?
        /// The newest version known not to change the delivered results.
        private var checkedVersion: UInt64 = 0

        /// How many times the query ran in full.
        @_spi(Benchmarks) public var queryRuns: Int { reducer?.queryRuns ?? 0 }
        /// How many records the latest delivery decoded.
        @_spi(Benchmarks) public var recordsDecoded: Int { reducer?.recordsDecoded ?? 0 }

        init(store: Store, query: Query<M>, properties: PropertyFilter<M>) {
            self.store = store
            self.query = query
            self.properties = properties
        }

        public mutating func next() async throws -> CollectionChange<M>? {
            guard !Task.isCancelled else { return nil }
            // Taken out while it changes, so its keys are not copied.
            guard var reducer = reducer.take() else {
                let (query, properties) = (self.query, self.properties)
                let reducer = try store.withSnapshot { (snapshot) throws(StoreError) in
                    try ResultsReducer(query, properties: properties, in: snapshot)
                }
                self.reducer = reducer
                checkedVersion = reducer.results.version.rawValue
                return .initial(reducer.results)
            }
            defer { self.reducer = reducer }
            while !Task.isCancelled {
                let newest = store.version.rawValue
                if newest > checkedVersion {
                    let (store, modelsRead) = (self.store, query.modelsRead)
                    let delivered = reducer.results.version.rawValue
                    let change = try store.withSnapshot { (snapshot) throws(StoreError) -> CollectionChange<M>? in
                        let txn = try snapshot.lmdb
                        let changed = try store.core.run("read the change log") {
                            try store.core.changedRecords(after: delivered, through: txn.id, in: txn)
                        }
                        if let changed, !changed.touches(modelsRead) {
                            checkedVersion = txn.id
                            return nil
                        }
                        let change = try reducer.advance(in: snapshot, changed: changed)
                        checkedVersion = txn.id
                        return change
                    }
                    if let change, !change.isEmpty { return change }
                    continue
                }
                // While nothing is new: get ready to place the next change (once per full run of the query).
                try reducer.prepare()
                await store.core.commits.wait(beyond: newest, reading: query.modelsRead)
            }
            return nil
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
    /// Looks at once for commits of other processes and wakes the observers of the models they changed: call it when
    /// the app returns to the foreground, or after another process said it wrote.
    public func checkForChanges() {
        core.commits.lookForCommits()
    }

    /// The changes of `query`'s results: first its results, then, after each commit that can change them, the new
    /// results with the indexes and ids of what was deleted, inserted and modified (see `CollectionChange`).
    ///
    /// With `keyPaths`, a record counts as modified only when one of those properties changed (compared with `==`),
    /// as Realm's `observe(keyPaths:)`: a commit that changes only other properties, and moves nothing, delivers
    /// nothing. Records entering and leaving the results are always delivered.
    public func changes<M: Model>(
        of query: Query<M>, keyPaths: [PartialKeyPath<M> & Sendable] = []
    ) -> ResultsChanges<M> {
        ResultsChanges(store: self, query: query.onStore(self), properties: PropertyFilter(paths: keyPaths))
    }
}
