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

    mutating func insert(_ key: UnsafeRawBufferPointer) {
        if key.count <= Packed.capacity {
            packed.append(Packed(key))
        } else {
            others.append(Array(key))
        }
    }

    /// The keys gathered, in byte order, each once.
    func sorted() -> [[UInt8]] {
        var packed = packed
        packed.sort()
        var short: [[UInt8]] = []
        short.reserveCapacity(packed.count)
        for (position, key) in packed.enumerated() where position == 0 || packed[position - 1] != key {
            short.append(key.bytes)
        }
        guard !others.isEmpty else { return short }
        var others = others
        others.sort(by: Self.precedes)
        var merged: [[UInt8]] = []
        merged.reserveCapacity(short.count + others.count)
        var nextShort = 0
        for (position, key) in others.enumerated() where position == 0 || others[position - 1] != key {
            // A long key never equals a short one: only the order between the two lists is to be found.
            while nextShort < short.count, Self.precedes(short[nextShort], key) {
                merged.append(short[nextShort])
                nextShort += 1
            }
            merged.append(key)
        }
        merged.append(contentsOf: short[nextShort...])
        return merged
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

        var bytes: [UInt8] {
            let stored = (words.0.bigEndian, words.1.bigEndian, words.2.bigEndian)
            return withUnsafeBytes(of: stored) { Array($0.prefix(count)) }
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
