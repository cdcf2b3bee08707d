import Foundation

/// The distinct terms a transaction indexes, each numbered once: the terms' bytes in one buffer and an open-addressing
/// table of their numbers, so that the millions of words a bulk insert reads make no allocation each.
struct TermTable {
    private var bytes: [UInt8] = []
    /// Where each term starts in `bytes`; one more than the terms, the last the end.
    private var starts: [Int] = [0]
    private var hashes: [UInt64] = []
    /// Each slot a term's number, or -1.
    private var slots = [Int32](repeating: -1, count: 1 << 10)

    var count: Int { hashes.count }

    func term(_ number: Int) -> ArraySlice<UInt8> { bytes[starts[number]..<starts[number + 1]] }

    /// The number of `term`, given it the first time.
    mutating func number(of term: [UInt8]) -> Int {
        let hash = Self.hash(term)
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let found = Int(slots[slot])
            if found < 0 { break }
            if hashes[found] == hash, holds(term, at: found) { return found }
            slot = (slot + 1) & mask
        }
        let number = hashes.count
        hashes.append(hash)
        bytes.append(contentsOf: term)
        starts.append(bytes.count)
        slots[slot] = Int32(number)
        if hashes.count * 2 > slots.count { grow() }
        return number
    }

    /// Whether term `number` is `term`, byte for byte.
    private func holds(_ term: [UInt8], at number: Int) -> Bool {
        let start = starts[number]
        let count = starts[number + 1] - start
        guard count == term.count else { return false }
        return bytes.withUnsafeBufferPointer { stored in
            term.withUnsafeBufferPointer { wanted in
                guard let stored = stored.baseAddress, let wanted = wanted.baseAddress else { return count == 0 }
                return memcmp(stored + start, wanted, count) == 0
            }
        }
    }

    private mutating func grow() {
        slots = [Int32](repeating: -1, count: slots.count * 2)
        let mask = slots.count - 1
        for (number, hash) in hashes.enumerated() {
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(number)
        }
    }

    /// FNV-1a, then a final mix so that the low bits the table uses depend on every byte.
    private static func hash(_ term: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in term { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash ^= hash >> 29
        hash &*= 0xBF58_476D_1CE4_E5B9
        return hash ^ (hash >> 32)
    }
}
