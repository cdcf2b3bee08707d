/// What a consistency check found, in words; the first hundred problems are kept, all are counted.
struct IntegrityProblems {
    static let kept = 100
    private(set) var lines: [String] = []
    private(set) var total = 0

    mutating func add(_ line: @autoclosure () -> String) {
        total += 1
        if lines.count < Self.kept { lines.append(line()) }
    }

    /// The kept lines, with a last one saying how many more there were.
    var summary: [String] { total > lines.count ? lines + ["… and \(total - lines.count) more"] : lines }
}

/// One entry of an index or backlink database.
struct IndexPair: Hashable, Comparable {
    let key: [UInt8]
    let value: [UInt8]

    static func < (lhs: IndexPair, rhs: IndexPair) -> Bool {
        lhs.key == rhs.key ? lhs.value.lexicographicallyPrecedes(rhs.value) : lhs.key.lexicographicallyPrecedes(rhs.key)
    }
}
