/// Reads the value a key path names from a model, as the write path does for every index key and link of every
/// record it writes or deletes.
///
/// A key path to a stored property, or to a chain of them (`\.place.city`), is read at its offset in the model
/// (`MemoryLayout.offset(of:)`), which costs a load and a copy. Any other key path (a computed property, an
/// optional chain, a property wrapper's value) goes through the key path, which costs the runtime's generic
/// projection: about 550 instructions a read on Linux (callgrind), more than encoding the key it gives.
struct PropertyReader<Root, Value>: @unchecked Sendable {
    // Key paths are immutable values; this one is stored unchecked only because `KeyPath` is not `Sendable`.
    let path: KeyPath<Root, Value>
    /// Where the value lies in a `Root`, when the key path names stored properties only.
    private let offset: Int?

    init(_ path: KeyPath<Root, Value>) {
        self.path = path
        offset = MemoryLayout<Root>.offset(of: path)
    }

    /// Whether the value is read at its offset, not through the key path.
    var readsAtOffset: Bool { offset != nil }

    @inline(__always)
    func read(_ root: Root) -> Value {
        guard let offset else { return root[keyPath: path] }
        return withUnsafePointer(to: root) { UnsafeRawPointer($0).load(fromByteOffset: offset, as: Value.self) }
    }
}
