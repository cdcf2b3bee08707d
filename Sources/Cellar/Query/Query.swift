#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A description of which records to read. Making one does no I/O; it runs when asked for `results()`,
/// `first()` or `count()`.
///
/// A query made from the store (`store.objects(Dog.self)`) may be kept and run again from any thread, each run
/// on the newest committed version. A query made inside a transaction or snapshot (`tx.objects(Dog.self)`)
/// sees that transaction, including its own uncommitted writes, and can run only inside its closure.
public struct Query<M: Model>: Sendable {
    enum Source: Sendable {
        case store(Store)
        case scope(ScopeToken)
    }

    let source: Source

    /// The matching records, decoded into a frozen `Results`.
    public func results() throws(StoreError) -> Results<M> {
        try run { (context) throws(StoreError) in
            let info = try context.store.info(for: M.self)
            return Results(
                try context.scan(M.self, info: info), version: StoreVersion(rawValue: try context.lmdb.id),
                query: self)
        }
    }

    /// The first matching record, or `nil`. Decodes nothing else.
    public func first() throws(StoreError) -> M? {
        try run { (context) throws(StoreError) in
            try context.scan(M.self, info: context.store.info(for: M.self), limit: 1).first
        }
    }

    /// How many records match, counted without decoding them.
    public func count() throws(StoreError) -> Int {
        try run { (context) throws(StoreError) in try context.recordCount(context.store.info(for: M.self)) }
    }

    private func run<R>(_ body: (any RecordContext) throws(StoreError) -> R) throws(StoreError) -> R {
        switch source {
        case .store(let store):
            return try store.withSnapshot { (snapshot) throws(StoreError) in try body(snapshot) }
        case .scope(let token):
            return try body(try token.context())
        }
    }
}

/// Ties a query to the transaction or snapshot it was made in, and refuses it anywhere else: on another thread,
/// or once the closure has ended.
final class ScopeToken: @unchecked Sendable {
    // Read only after checking that the caller is on `thread`, the one thread that ever writes it.
    private weak var scope: (any RecordContext)?
    private let thread = pthread_self()

    init(_ scope: any RecordContext) { self.scope = scope }

    func context() throws(StoreError) -> any RecordContext {
        guard pthread_equal(thread, pthread_self()) != 0, let scope else { throw .transactionEnded }
        return scope
    }
}
