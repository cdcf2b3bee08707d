import Foundation

/// Keys gathered one at a time, given back in byte order with each key once: what a walk of backlink databases
/// collects for `backlinking(_:via:)`, where many targets share their sources.
///
/// A key of up to 24 bytes (an integer id's key is 9, a UUID's 17) is kept packed into three words, loaded
/// big-endian and padded with zeros, so that comparing the words and then the lengths is comparing the bytes:
/// gathering it allocates nothing, and sorting compares integers. Longer keys are kept as arrays and compared with
/// `memcmp`.
struct SortedKeys {
    private var packed: [Packed] = []
    private var others: [[UInt8]] = []

    /// How many keys were inserted, repeats counted.
    var count: Int { packed.count + others.count }

    mutating func insert(_ key: UnsafeRawBufferPointer) {
        if key.count <= Packed.capacity {
            packed.append(Packed(key))
        } else {
            others.append(Array(key))
        }
    }

    mutating func insert(_ key: [UInt8]) {
        key.withUnsafeBytes { insert($0) }
    }

    /// The keys gathered, in byte order, each once.
    func sorted() -> [[UInt8]] {
        var sorted: [[UInt8]] = []
        sorted.reserveCapacity(count)
        forEachSorted { key in
            sorted.append(Array(key))
            return true
        }
        return sorted
    }

    /// How many different keys were inserted.
    func distinctCount() -> Int {
        var distinct = 0
        forEachSorted { _ in
            distinct += 1
            return true
        }
        return distinct
    }

    /// Hands `body` the keys gathered, in byte order, each once, until it returns `false`; returns whether it saw
    /// them all. A packed key is handed over from a buffer on the stack: nothing is allocated per key.
    @discardableResult
    func forEachSorted<E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> Bool) throws(E) -> Bool {
        var packed = packed
        packed.sort()
        var others = others
        others.sort(by: Self.precedes)
        var nextOther = 0
        func visitOthers(before key: Packed?) throws(E) -> Bool {
            while nextOther < others.count {
                let other = others[nextOther]
                // A long key never equals a short one: only the order between the two lists is to be found.
                if let key, !other.withUnsafeBytes({ key.follows($0) }) { return true }
                nextOther += 1
                if nextOther > 1, others[nextOther - 2] == other { continue }
                let goOn = other.withUnsafeBytes { bytes in Result { () throws(E) in try body(bytes) } }
                guard try goOn.get() else { return false }
            }
            return true
        }
        for (position, key) in packed.enumerated() where position == 0 || packed[position - 1] != key {
            guard try visitOthers(before: key) else { return false }
            guard try key.withBytes(body) else { return false }
        }
        return try visitOthers(before: nil)
    }

    /// Byte order, as LMDB sorts keys: the first differing byte decides, and a key that is the start of another
    /// comes first.
    static func precedes(_ first: [UInt8], _ second: [UInt8]) -> Bool {
        first.withUnsafeBytes { a in second.withUnsafeBytes { b in compare(a, b) < 0 } }
    }

    /// LMDB's order of keys and of DUPSORT values (`mdb_cmp_memn`): negative when `first` comes first, zero when the
    /// two are equal, positive otherwise.
    static func compare(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
        let shared = min(first.count, second.count)
        if shared > 0, let a = first.baseAddress, let b = second.baseAddress {
            let order = memcmp(a, b, shared)
            if order != 0 { return Int(order) }
        }
        return first.count - second.count
    }

    /// A key of up to `capacity` bytes in three big-endian words, zero-padded, and its length. Zero is the smallest
    /// byte, so where the padded words tie the keys are equal up to the shorter one's end, and the shorter comes first.
    private struct Packed: Comparable {
        static let capacity = 24
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count: Int

        init(_ key: UnsafeRawBufferPointer) {
            count = key.count
            withUnsafeMutableBytes(of: &words) { raw in
                if let base = key.baseAddress { raw.baseAddress?.copyMemory(from: base, byteCount: key.count) }
            }
            words = (UInt64(bigEndian: words.0), UInt64(bigEndian: words.1), UInt64(bigEndian: words.2))
        }

        /// Hands `body` the key's bytes, from a buffer on the stack.
        func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
            let stored = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian)
            return try withUnsafeBytes(of: stored) { (raw) throws(E) in
                try body(UnsafeRawBufferPointer(rebasing: raw.prefix(count)))
            }
        }

        /// Whether `other`, a key longer than any packed one, sorts before this key.
        func follows(_ other: UnsafeRawBufferPointer) -> Bool {
            withBytes { SortedKeys.compare(other, $0) < 0 }
        }

        static func < (a: Packed, b: Packed) -> Bool {
            if a.words.0 != b.words.0 { return a.words.0 < b.words.0 }
            if a.words.1 != b.words.1 { return a.words.1 < b.words.1 }
            if a.words.2 != b.words.2 { return a.words.2 < b.words.2 }
            return a.count < b.count
        }

        static func == (a: Packed, b: Packed) -> Bool {
            a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.count == b.count
        }
    }
}
