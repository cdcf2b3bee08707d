/// The async forms of a query's runs: each reads on a dispatch thread, so that a large query does not hold a thread
/// of the cooperative pool while LMDB reads and records decode. In async code Swift picks these and asks for `await`;
/// synchronous code keeps the blocking forms of the same names.
extension Query {
    /// The matching records, decoded into a frozen `Results`, read off the cooperative pool.
    public func results() async throws(StoreError) -> Results<M> {
        try await offCooperativePool { () throws(StoreError) in try self.results() }
    }

    /// The first matching record in the query's order, or `nil`, read off the cooperative pool.
    public func first() async throws(StoreError) -> M? {
        try await offCooperativePool { () throws(StoreError) in try self.first() }
    }

    /// How many records match, counted off the cooperative pool.
    public func count() async throws(StoreError) -> Int {
        try await offCooperativePool { () throws(StoreError) in try self.count() }
    }

    /// How the query runs, in words, planned off the cooperative pool.
    public func explain() async throws(StoreError) -> String {
        try await offCooperativePool { () throws(StoreError) in try self.explain() }
    }

    /// The smallest value of `path` among the matching records, read off the cooperative pool.
    public func min<V: Comparable & Encodable & Sendable>(
        _ path: KeyPath<M, V> & Sendable
    ) async throws(StoreError) -> V? {
        try await offCooperativePool { () throws(StoreError) in try self.min(path) }
    }

    /// The largest value of `path` among the matching records, read off the cooperative pool.
    public func max<V: Comparable & Encodable & Sendable>(
        _ path: KeyPath<M, V> & Sendable
    ) async throws(StoreError) -> V? {
        try await offCooperativePool { () throws(StoreError) in try self.max(path) }
    }

    /// The sum of `path` over the matching records, read off the cooperative pool.
    public func sum<V: AdditiveArithmetic & Sendable>(_ path: KeyPath<M, V> & Sendable) async throws(StoreError) -> V {
        try await offCooperativePool { () throws(StoreError) in try self.sum(path) }
    }

    /// The mean of `path` over the matching records, or `nil` when none match, read off the cooperative pool.
    public func average<V: BinaryFloatingPoint & Sendable>(
        _ path: KeyPath<M, V> & Sendable
    ) async throws(StoreError) -> V? {
        try await offCooperativePool { () throws(StoreError) in try self.average(path) }
    }

    /// The mean of an integer `path` over the matching records, or `nil` when none match, read off the cooperative
    /// pool.
    public func average<V: BinaryInteger & Sendable>(
        _ path: KeyPath<M, V> & Sendable
    ) async throws(StoreError) -> Double? {
        try await offCooperativePool { () throws(StoreError) in try self.average(path) }
    }
}

extension Results {
    /// The same query on the newest committed version, read off the cooperative pool.
    public func latest() async throws(StoreError) -> Results<M> {
        try await offCooperativePool { () throws(StoreError) in try self.latest() }
    }
}
