import Foundation

/// Key bytes in a set, hashed as one run of bytes rather than byte by byte as `[UInt8]` hashes.
struct KeyBytes: Hashable {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
}

extension UnsafeRawBufferPointer {
    /// Whether the bytes equal `other`, compared as one run (`elementsEqual` goes byte by byte through iterators).
    func equals(_ other: [UInt8]) -> Bool {
        guard count == other.count else { return false }
        return other.withUnsafeBytes { bytes in
            guard let mine = baseAddress, let theirs = bytes.baseAddress else { return true }
            return memcmp(mine, theirs, count) == 0
        }
    }
}
