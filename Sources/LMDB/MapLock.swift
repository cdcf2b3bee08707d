#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The lock that keeps this process's transactions off the memory map while it is replaced.
///
/// Every transaction, and every call that reads the map outside one (`mdb_env_info`, `mdb_env_copy2`), holds it
/// shared; `mdb_env_set_mapsize` holds it exclusively, because it unmaps the file. The lock prefers the exclusive
/// side: once a grower waits, readers that arrive after it wait too, so a stream of overlapping reads can never
/// postpone a growth forever (glibc's `pthread_rwlock_t` prefers readers and does exactly that).
///
/// A thread that already holds the lock shared takes it again without waiting (a read inside a read, a read
/// inside a write): waiting there, behind a grower that waits for this very thread, would never end. Such a
/// thread must not ask for the lock exclusively; `Environment` refuses that with an error instead.
final class MapLock: @unchecked Sendable {
    /// The mutex and condition guard `state`; both live on the heap, where their addresses never move.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let changed: UnsafeMutablePointer<pthread_cond_t>
    private let state: UnsafeMutablePointer<State>
    /// How many times the calling thread holds the lock shared.
    private let holds = ThreadCounter()

    private struct State {
        /// Threads that hold the lock shared (each counted once, however often it nested).
        var readers = 0
        /// Threads waiting to take it exclusively.
        var waitingGrowers = 0
        var exclusive = false
    }

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        changed = .allocate(capacity: 1)
        changed.initialize(to: pthread_cond_t())
        pthread_cond_init(changed, nil)
        state = .allocate(capacity: 1)
        state.initialize(to: State())
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        changed.deallocate()
        mutex.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Whether the calling thread holds the lock shared.
    var isHeldShared: Bool { holds.value > 0 }

    /// Takes the lock shared; waits while a grower holds it or waits for it, unless this thread holds it already.
    func lockShared() {
        let nested = holds.value
        holds.value = nested + 1
        if nested > 0 { return }
        pthread_mutex_lock(mutex)
        while state.pointee.exclusive || state.pointee.waitingGrowers > 0 { pthread_cond_wait(changed, mutex) }
        state.pointee.readers += 1
        pthread_mutex_unlock(mutex)
    }

    func unlockShared() {
        let remaining = holds.value - 1
        holds.value = remaining
        if remaining > 0 { return }
        pthread_mutex_lock(mutex)
        state.pointee.readers -= 1
        let wake = state.pointee.readers == 0 && state.pointee.waitingGrowers > 0
        pthread_mutex_unlock(mutex)
        if wake { pthread_cond_broadcast(changed) }
    }

    /// Takes the lock exclusively, once every thread holding it shared has let go. The caller must not hold it.
    func lockExclusive() {
        pthread_mutex_lock(mutex)
        state.pointee.waitingGrowers += 1
        while state.pointee.exclusive || state.pointee.readers > 0 { pthread_cond_wait(changed, mutex) }
        state.pointee.waitingGrowers -= 1
        state.pointee.exclusive = true
        pthread_mutex_unlock(mutex)
    }

    func unlockExclusive() {
        pthread_mutex_lock(mutex)
        state.pointee.exclusive = false
        pthread_mutex_unlock(mutex)
        pthread_cond_broadcast(changed)
    }

    /// Runs `body` holding the lock shared.
    @inline(__always)
    func withShared<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lockShared()
        defer { unlockShared() }
        return try body()
    }
}

/// A per-thread counter, so a lock can tell whether the calling thread already holds it.
final class ThreadCounter: @unchecked Sendable {
    private var key = pthread_key_t()

    init() { pthread_key_create(&key, nil) }
    deinit { pthread_key_delete(key) }

    var value: Int {
        get { Int(bitPattern: pthread_getspecific(key)) }
        set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}
