import LMDB

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

    /// Adds a problem for each target of an exclusive link that `stored` (a backlink database's entries) gives more
    /// than one source, in the words `describe` gives the target's key and the count.
    mutating func checkExclusive(_ stored: Set<IndexPair>, _ describe: (String, Int) -> String) {
        var holders: [[UInt8]: Int] = [:]
        for pair in stored { holders[pair.key, default: 0] += 1 }
        for (key, count) in holders.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where count > 1 {
            add(describe(KeyEncoding.describe(key), count))
        }
    }

    /// Adds the entries `expected` has and `stored` lacks, then those `stored` has and no record gives.
    mutating func compare(stored: Set<IndexPair>, expected: Set<IndexPair>, database: String, model: String) {
        for missing in expected.subtracting(stored).sorted() {
            add(
                "\(database) lacks the entry \(KeyEncoding.describe(missing.key)) → \(model) "
                    + KeyEncoding.describe(missing.value))
        }
        for extra in stored.subtracting(expected).sorted() {
            add(
                "\(database) holds the entry \(KeyEncoding.describe(extra.key)) → \(model) "
                    + "\(KeyEncoding.describe(extra.value)), which no record gives")
        }
    }
}

extension ReadScope {
    /// Compares every index, unique index and backlink database of `M` with what its records say they should hold,
    /// and checks that no link leads to a record that does not exist.
    func verify<M: Model>(_ type: M.Type, info: ModelInfo, into problems: inout IntegrityProblems) throws(StoreError) {
        let txn = try lmdb
        let model = info.name
        let writer = IndexWriter(model: model, core: store.core)
        var expectedIndexes = Array(repeating: Set<IndexPair>(), count: info.indexes.count)
        var expectedLinks = Array(repeating: Set<IndexPair>(), count: info.links.count)
        var uniqueHolders = Array(repeating: [[UInt8]: Int](), count: info.indexes.count)
        var dictionary = try dictionary(for: info)
        var entries: [Entry] = []
        try store.core.run("read") {
            try txn.walk(info.records) { entry in
                entries.append(entry)
                return true
            }
        }
        for (key, bytes) in entries {
            let id = KeyEncoding.describe(key)
            let value: M
            do {
                value = try decode(M.self, bytes, key: key, info: info, dictionary: &dictionary)
            } catch {
                problems.add("\(model) \(id) cannot be decoded: \(error)")
                continue
            }
            let primaryKey = Array(key)
            for (position, index) in M.schema.indexes.enumerated() {
                let entries: [(key: [UInt8], mustBeUnique: Bool)]
                do { entries = try writer.entries(index, of: value) } catch {
                    problems.add("\(model) \(id) has no key in \(index.databaseName(model: model)): \(error)")
                    continue
                }
                for entry in entries {
                    expectedIndexes[position].insert(IndexPair(key: entry.key, value: primaryKey))
                    if entry.mustBeUnique { uniqueHolders[position][entry.key, default: 0] += 1 }
                }
            }
            for (position, link) in M.schema.links.enumerated() {
                let target = try store.info(linkedBy: info.links[position])
                for targetKey in try targetKeys(link, of: value) {
                    expectedLinks[position].insert(IndexPair(key: targetKey, value: primaryKey))
                    guard !link.allowsDangling else { continue }
                    let exists = try store.core.run("read") { try txn.get(target.records, key: targetKey) != nil }
                    if !exists {
                        problems.add(
                            "\(model) \(id) links through \(link.name) to \(target.name) "
                                + "\(KeyEncoding.describe(targetKey)), which does not exist")
                    }
                }
            }
        }
        for (position, index) in M.schema.indexes.enumerated() {
            let name = index.databaseName(model: model)
            let stored = try pairs(in: info.indexes[position])
            problems.compare(stored: stored, expected: expectedIndexes[position], database: name, model: model)
            for (key, count) in uniqueHolders[position] where count > 1 {
                problems.add("\(count) \(model) records share the value \(KeyEncoding.describe(key)) of unique \(name)")
            }
        }
        for (position, link) in info.links.enumerated() {
            let stored = try pairs(in: link.database)
            problems.compare(
                stored: stored, expected: expectedLinks[position], database: link.databaseName, model: model)
            if link.isExclusive {
                problems.checkExclusive(stored) { target, count in
                    "\(link.targetName) \(target) is linked by \(count) \(model) records through the exclusive link "
                        + link.name
                }
            }
        }
    }

    private func pairs(in database: Database) throws(StoreError) -> Set<IndexPair> {
        let txn = try lmdb
        var found = Set<IndexPair>()
        try store.core.run("read") {
            try txn.walk(database) { entry in
                found.insert(IndexPair(key: Array(entry.key), value: Array(entry.value)))
                return true
            }
        }
        return found
    }
}

/// One entry of an index or backlink database.
struct IndexPair: Hashable, Comparable {
    let key: [UInt8]
    let value: [UInt8]

    static func < (lhs: IndexPair, rhs: IndexPair) -> Bool {
        lhs.key == rhs.key ? lhs.value.lexicographicallyPrecedes(rhs.value) : lhs.key.lexicographicallyPrecedes(rhs.key)
    }
}
