/// Key bytes in a set, hashed as one run of bytes rather than byte by byte as `[UInt8]` hashes.
struct KeyBytes: Hashable {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
}
