import PropertyBased
import Testing

@testable import Cellar

/// The keys `backlinking(_:via:)` gathers from backlink databases come back in LMDB's byte order, each once, whatever
/// their sizes: keys of up to 24 bytes are sorted as packed words, the others as bytes, and the two lists merged.
@Suite("Backlinks: the sorted set of keys a walk gathers")
struct SortedKeysTests {
    /// Keys of sizes on both sides of what is packed (24 bytes), from few byte values, so that duplicates, shared
    /// prefixes and a key that is the start of another are common.
    static let key = zip(Gen.int(in: 0...7), Gen.int(in: 0...2).array(of: 32...32)).map { sizeChoice, picks in
        let size = [0, 1, 8, 9, 17, 24, 25, 32][sizeChoice]
        return picks.prefix(size).map { [UInt8(0), 1, 255][$0] }
    }

    @Test func keysComeBackInByteOrderEachOnce() async {
        await checkProperty(count: 400, input: Self.key.array(of: 0...60)) { keys in
            var gathered = SortedKeys()
            for key in keys { key.withUnsafeBytes { gathered.insert($0) } }
            let expected = Set(keys).sorted { $0.lexicographicallyPrecedes($1) }
            #expect(gathered.sorted() == expected)
        }
    }

    @Test func packedKeysSortByTheirBytesNotByTheirValueInMemory() {
        // Read little-endian, [0, …, 0, 1] would be the largest of these words; in byte order it is the smallest.
        let one: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]
        let twoFiftySix: [UInt8] = [0, 0, 0, 0, 0, 0, 1, 0]
        let short: [UInt8] = [0, 0, 0, 0, 0, 0, 1]
        let long = [UInt8](repeating: 0, count: 30) + [1]
        var gathered = SortedKeys()
        for key in [twoFiftySix, one, long, short, one] { key.withUnsafeBytes { gathered.insert($0) } }
        #expect(gathered.sorted() == [long, one, short, twoFiftySix])
    }
}
