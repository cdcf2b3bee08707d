/// Keys from `lower` (included) up to `upper` (excluded), compared byte by byte as LMDB compares them; a missing
/// bound is open.
public struct KeyRange: Sendable, Hashable {
    /// The smallest key in the range; `nil` for no lower bound.
    public var lower: [UInt8]?
    /// The first key past the range; `nil` for no upper bound.
    public var upper: [UInt8]?

    /// The keys from `lower` (included) up to `upper` (excluded).
    public init(lower: [UInt8]? = nil, upper: [UInt8]? = nil) {
        self.lower = lower
        self.upper = upper
    }

    /// Whether `key` lies in the range.
    public func contains(_ key: some Collection<UInt8>) -> Bool {
        if let lower, key.lexicographicallyPrecedes(lower) { return false }
        if let upper, !key.lexicographicallyPrecedes(upper) { return false }
        return true
    }
}

extension ReadTransaction {
    /// Hands `body` the entries of `database` whose keys lie in `range`, in key order (backwards when
    /// `descending`), until `body` returns `false`. Returns whether it walked to the end of the range.
    @discardableResult
    public func walk(
        _ database: Database, range: KeyRange = KeyRange(), descending: Bool = false,
        _ body: (Entry) throws -> Bool
    ) throws -> Bool {
        try withCursor(database) { cursor in
            if descending {
                var entry: Entry?
                if let upper = range.upper {
                    entry = try upper.withUnsafeBytes { try cursor.seek(atLeast: $0) }
                    entry = entry == nil ? try cursor.last() : try cursor.previous()
                } else {
                    entry = try cursor.last()
                }
                while let found = entry, range.lower.map({ !Self.precedes(found.key, $0) }) ?? true {
                    guard try body(found) else { return false }
                    entry = try cursor.previous()
                }
            } else {
                var entry = try cursor.seek(atLeast: range.lower)
                while let found = entry, range.upper.map({ Self.precedes(found.key, $0) }) ?? true {
                    guard try body(found) else { return false }
                    entry = try cursor.next()
                }
            }
            return true
        }
    }

    /// Whether `key` sorts before `bound` as LMDB's default order has it: bytes compared as unsigned numbers, a
    /// prefix first. (Byte by byte over raw memory: the generic `lexicographicallyPrecedes` costs several times more
    /// on every entry of a walk.)
    @inline(__always)
    static func precedes(_ key: UnsafeRawBufferPointer, _ bound: [UInt8]) -> Bool {
        bound.withUnsafeBytes { bound in
            let common = min(key.count, bound.count)
            var position = 0
            while position < common {
                let (a, b) = (key[position], bound[position])
                if a != b { return a < b }
                position += 1
            }
            return key.count < bound.count
        }
    }

    /// How many entries of `database` lie in `ranges`, counted up to about `cap`: one step per distinct key, each
    /// key's duplicates counted by LMDB without visiting them.
    public func countEntries(_ database: Database, in ranges: [KeyRange], cap: Int = .max) throws -> Int {
        var total = 0
        try withCursor(database) { cursor in
            for range in ranges where total < cap {
                var entry = try cursor.seek(atLeast: range.lower)
                while let found = entry, total < cap,
                    range.upper.map({ found.key.lexicographicallyPrecedes($0) }) ?? true
                {
                    total += try cursor.duplicateCount()
                    entry = try cursor.nextKey()
                }
            }
        }
        return total
    }
}

extension Cursor {
    /// The first entry whose key is at least `key`, or the first entry when `key` is `nil`.
    func seek(atLeast key: [UInt8]?) throws(LMDBError) -> Entry? {
        guard let key else { return try first() }
        return try key.withUnsafeBytes { raw in Result { () throws(LMDBError) in try seek(atLeast: raw) } }.get()
    }
}
