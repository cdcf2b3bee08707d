/// A query's decoded values, gathered one at a time into storage that doubles as it fills, then moved into an
/// array at once. In code generic over the model, as a query's is, `Array.append` costs a uniqueness check and
/// generic calls per value; here a value costs one move.
final class DecodedValues<Value> {
    private var base: UnsafeMutablePointer<Value>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int = 64) {
        self.capacity = Swift.max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    @inline(__always)
    func append(_ value: consuming Value) {
        if count == capacity { grow() }
        (base + count).initialize(to: value)
        count += 1
    }

    /// The value appended last, to check before keeping it.
    var last: UnsafePointer<Value> { UnsafePointer(base + (count - 1)) }

    func removeLast() {
        count -= 1
        (base + count).deinitialize(count: 1)
    }

    private func grow() {
        let larger = UnsafeMutablePointer<Value>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = larger
        capacity *= 2
    }

    /// The values, moved out: the storage is empty afterwards.
    func moveToArray() -> [Value] {
        let moved = count
        count = 0
        return [Value](initializingUpTo: moved) { destination, initialized in
            destination.moveInitialize(from: base, count: moved)
            initialized = moved
        }
    }
}

extension Array {
    /// An array of at most `capacity` elements that `initialize` writes in place from `start`, setting `count` to
    /// how many it wrote; with no capacity, `[]` and `initialize` is not called.
    ///
    /// Every array made in place in Cellar is made here, not with `Array(unsafeUninitializedCapacity:)` itself:
    /// given no capacity, the standard library's initializer stores the count into the one empty array that every
    /// thread shares (`_swiftEmptyArrayStorage`), a write that races with any other thread doing the same (the
    /// thread sanitizer reports it, as a race in the queries that found nothing).
    @inline(__always)
    init(
        initializingUpTo capacity: Int,
        with initialize: (_ start: UnsafeMutablePointer<Element>, _ count: inout Int) -> Void
    ) {
        guard capacity > 0 else {
            self = []
            return
        }
        self.init(unsafeUninitializedCapacity: capacity) { buffer, count in
            // Storage for one element or more always has an address.
            guard let start = buffer.baseAddress else { return }
            initialize(start, &count)
        }
    }
}
