#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `pthread_rwlock_t` on the heap, where its address never moves.
///
/// Transactions hold it shared; growing the map holds it exclusively, because `mdb_env_set_mapsize`
/// remaps the file and must not run while any transaction of this process reads the old mapping.
final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func lockShared() { pthread_rwlock_rdlock(lock) }
    func lockExclusive() { pthread_rwlock_wrlock(lock) }
    func unlock() { pthread_rwlock_unlock(lock) }
}

/// A per-thread counter, so an environment can tell whether the calling thread already holds its lock shared
/// (waiting for it exclusively would then wait forever).
final class ThreadCounter: @unchecked Sendable {
    private var key = pthread_key_t()

    init() { pthread_key_create(&key, nil) }
    deinit { pthread_key_delete(key) }

    var value: Int {
        get { Int(bitPattern: pthread_getspecific(key)) }
        set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}
