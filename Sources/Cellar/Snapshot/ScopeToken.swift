#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ties a query to the transaction or snapshot it was made in, and refuses it anywhere else: on another thread,
/// or once the closure has ended.
final class ScopeToken: @unchecked Sendable {
    // Read only after checking that the caller is on `thread`, the one thread that ever writes it.
    private weak var scope: (ReadScope)?
    private let thread = pthread_self()

    init(_ scope: ReadScope) { self.scope = scope }

    func context() throws(StoreError) -> ReadScope {
        guard pthread_equal(thread, pthread_self()) != 0, let scope else { throw .transactionEnded }
        return scope
    }
}
