#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value that one thread at a time may use: the lock of every module of this package, in place of the standard
/// library's `Mutex`, whose shape it has (`withLock`).
///
/// On Linux `Synchronization.Mutex` takes a contended lock and hands it to a waiter inside the kernel (a futex with
/// priority inheritance) and in code not built for the thread sanitizer, so the sanitizer sees no order between the
/// threads: each access the lock guards is reported as a data race once two threads meet there. This one is a
/// `pthread_mutex_t`, which the sanitizer follows, so `swift test --sanitize=thread` reports only real races. An
/// uncontended lock and unlock cost an atomic exchange each, as `Mutex`'s do, and a call each (measured on a busy
/// two-core machine: about 25 ns against `Mutex`'s 15 to 20).
///
/// It lives in `LMDB`, the lowest module, so that every layer shares one lock without calling the C API itself.
public final class Lock<Value>: @unchecked Sendable {
    /// On the heap, where its address never moves: a `pthread_mutex_t` must not be moved once used.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let value: UnsafeMutablePointer<Value>

    public init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value, holding the lock. `body` must not take the same lock again.
    @inlinable
    public func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
