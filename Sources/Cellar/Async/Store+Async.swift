import Foundation

/// The async forms of opening and of the store's reads: each runs on a dispatch thread, so that opening (which may
/// migrate), a lookup or a check does not hold a thread of the cooperative pool. In async code Swift picks these and
/// asks for `await`; synchronous code keeps the blocking forms of the same names. The async `write` is beside the
/// blocking one, in `Store`.
extension Store {
    /// Opens the store in the folder at `directory` off the cooperative pool: opening may build indexes or run a
    /// migration. Otherwise as the blocking `init(at:configuration:)`.
    public convenience init(at directory: URL, configuration: Configuration) async throws(StoreError) {
        let opened = try await offCooperativePool { () throws(StoreError) in
            try Self.open(directory, configuration: configuration, removeOnClose: false)
        }
        self.init(opened: opened, configuration: configuration)
    }

    /// A store in a new temporary folder, removed when the store is released, opened off the cooperative pool.
    public static func inMemory(_ configuration: Configuration) async throws(StoreError) -> Store {
        try await offCooperativePool { () throws(StoreError) in try Store.inMemory(configuration) }
    }

    /// What opening the store in `directory` with `configuration` would change, read off the cooperative pool.
    public static func pendingChanges(
        at directory: URL, configuration: Configuration
    ) async throws(StoreError) -> PendingSchemaChanges {
        try await offCooperativePool { () throws(StoreError) in
            try Store.pendingChanges(at: directory, configuration: configuration)
        }
    }

    /// Deletes the store in the folder at `directory`, off the cooperative pool, as the blocking `delete(at:)` does.
    public static func delete(at directory: URL) async throws(StoreError) {
        try await offCooperativePool { () throws(StoreError) in try Store.delete(at: directory) }
    }

    /// Runs `body` on one committed version of the store, on a dispatch thread rather than the caller's: GRDB's
    /// `try await dbQueue.read`.
    ///
    /// - Throws: what `body` throws, or a `StoreError`.
    public func read<R: Sendable>(_ body: @escaping @Sendable (Snapshot) throws -> R) async throws -> R {
        let result: Result<R, any Error> = await withCheckedContinuation { continuation in
            asyncReads.async {
                continuation.resume(returning: Result { try self.read(body) })
            }
        }
        return try result.get()
    }

    /// The record of type `type` with primary key `id` in the newest version, or `nil`, read off the cooperative
    /// pool.
    public func object<M: Model>(_ type: M.Type, id: M.ID) async throws(StoreError) -> M? {
        try await offCooperativePool { () throws(StoreError) in try self.object(type, id: id) }
    }

    /// How many records of `type` exist in the newest version, read off the cooperative pool.
    public func count<M: Model>(_ type: M.Type) async throws(StoreError) -> Int {
        try await offCooperativePool { () throws(StoreError) in try self.count(type) }
    }

    /// The record `link` leads to in the newest version, or `nil`, read off the cooperative pool.
    public func object<T: Model>(_ link: Link<T>) async throws(StoreError) -> T? {
        try await offCooperativePool { () throws(StoreError) in try self.object(link) }
    }

    /// The record a to-one link leads to in the newest version, or `nil`, read off the cooperative pool.
    public func object<T: Model>(_ link: Link<T>?) async throws(StoreError) -> T? {
        try await offCooperativePool { () throws(StoreError) in try self.object(link) }
    }

    /// The records `links` lead to, in order, all from one version, read off the cooperative pool.
    public func resolve<T: Model>(_ links: [Link<T>]) async throws(StoreError) -> [T] {
        try await offCooperativePool { () throws(StoreError) in try self.resolve(links) }
    }

    /// The records of `S` whose link `path` leads to `target`, frozen, read off the cooperative pool.
    public func backlinks<S: Model, P: LinkProperty>(
        to target: P.Target, via path: KeyPath<S, P> & Sendable
    ) async throws(StoreError) -> Results<S> {
        let query = objects(S.self).linking(to: target, via: path)
        return try await offCooperativePool { () throws(StoreError) in try query.results() }
    }

    /// The one record of `S` whose exclusive link `path` leads to `target`, or `nil`, read off the cooperative pool.
    public func backlink<S: Model, P: LinkProperty>(
        to target: P.Target, via path: KeyPath<S, P> & Sendable
    ) async throws(StoreError) -> S? {
        let query = objects(S.self).linking(to: target, via: path)
        return try await offCooperativePool { () throws(StoreError) in try query.exclusiveBacklink() }
    }

    /// Checks the store's pages, indexes and links off the cooperative pool. See `verifyIntegrity()`.
    public func verifyIntegrity() async throws(StoreError) -> IntegrityReport {
        try await offCooperativePool { () throws(StoreError) in try self.verifyIntegrity() }
    }

    /// Writes a compacted copy of the store into the folder at `directory`, off the cooperative pool.
    public func compact(to directory: URL) async throws(StoreError) {
        try await offCooperativePool { () throws(StoreError) in try self.compact(to: directory) }
    }
}
