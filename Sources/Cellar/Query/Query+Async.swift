import Dispatch

/// The forms of a query's runs for async code: each reads on a dispatch thread, so that a large query does not hold
/// a thread of the cooperative pool while LMDB reads and records decode. In async code Swift picks these, and asks for
/// `await`; synchronous code keeps the blocking forms.
extension Query {
    /// The matching records, decoded into a frozen `Results`, read off the cooperative pool.
    public func results() async throws(StoreError) -> Results<M> {
        try await offCooperativePool { () throws(StoreError) in try self.results() }
    }

    /// The first matching record in the query's order, or `nil`, read off the cooperative pool.
    public func first() async throws(StoreError) -> M? {
        try await offCooperativePool { () throws(StoreError) in try self.first }
    }

    /// How many records match, counted off the cooperative pool.
    public func count() async throws(StoreError) -> Int {
        try await offCooperativePool { () throws(StoreError) in try self.count }
    }
}

extension Store {
    /// Runs `body` on one committed version of the store, on a dispatch thread rather than the caller's: GRDB's
    /// `try await dbQueue.read`. In async code Swift picks this form, and asks for `await`.
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
}

/// The threads async reads run on: a concurrent queue of Cellar's own, named for debuggers and profiles. Like any
/// dispatch queue on Linux it runs about a thread a core and adds one about each second while all of them block,
/// which only a read closure that waits on something would notice: reads do not wait for each other.
let asyncReads = DispatchQueue(label: "Cellar reads", qos: .userInitiated, attributes: .concurrent)

/// Runs `work` on a dispatch thread and waits for it without blocking the caller's.
func offCooperativePool<R: Sendable>(
    _ work: @escaping @Sendable () throws(StoreError) -> R
) async throws(StoreError) -> R {
    let result: Result<R, StoreError> = await withCheckedContinuation { continuation in
        asyncReads.async {
            continuation.resume(returning: Result { () throws(StoreError) -> R in try work() })
        }
    }
    return try result.get()
}
