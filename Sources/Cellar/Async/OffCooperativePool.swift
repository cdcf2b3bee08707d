import Dispatch

// One rule for `await`: every call that opens, reads or writes a store has an `async` form of the same name, and in
// async code Swift picks it and asks for `await`. The blocking forms are for synchronous code; the closures of `read`
// and `write` stay synchronous in both (LMDB ties a transaction to its thread). The async forms of reads run here, on
// dispatch threads; the async `write` runs on the store's writer queue.

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
