import LMDB

extension ReadScope {
    /// Compares every index, unique index and backlink database of `M` with what its records say they should hold,
    /// and checks that no link leads to a record that does not exist.
    func verify<M: Model>(_ type: M.Type, info: ModelInfo, into problems: inout IntegrityProblems) throws(StoreError) {
        let txn = try lmdb
        let model = info.name
        let writer = IndexWriter(model: model, core: store.core)
        var checks =
            M.schema.indexes.map {
                DerivedDatabaseCheck(.index($0.descriptor(model: model)), model: model, recomputes: true)
            }
            + M.schema.links.map {
                DerivedDatabaseCheck(.link($0.descriptor(model: model)), model: model, recomputes: true)
            }
        var dictionary = try dictionary(for: info)
        var entries: [Entry] = []
        try store.core.run("read") {
            try txn.walk(info.records) { entry in
                entries.append(entry)
                return true
            }
        }
        var primaryKeys = Set<[UInt8]>()
        let fullTextIndexes = M.schema.fullTextIndexes
        var fullTextChecks = zip(fullTextIndexes, info.fullText).map { FullTextCheck(name: $0.1.name) }
        for (key, bytes) in entries {
            let primaryKey = Array(key)
            primaryKeys.insert(primaryKey)
            let value: M
            do {
                value = try decode(M.self, bytes, key: key, info: info, dictionary: &dictionary)
            } catch {
                problems.add("\(model) \(KeyEncoding.describe(primaryKey)) cannot be decoded: \(error)")
                for position in checks.indices { checks[position].skip(primaryKey) }
                for position in fullTextChecks.indices { fullTextChecks[position].skip(primaryKey: primaryKey) }
                continue
            }
            for (position, index) in M.schema.indexes.enumerated() {
                do {
                    let made = try writer.entries(index, of: value).map { ($0.key, !$0.mustBeUnique) }
                    checks[position].add(made, of: primaryKey)
                } catch {
                    problems.add(
                        "\(model) \(KeyEncoding.describe(primaryKey)) has no key in \(checks[position].database): "
                            + "\(error)")
                }
            }
            for (position, link) in M.schema.links.enumerated() {
                let made = try targetKeys(link, of: value).map { ($0, false) }
                checks[M.schema.indexes.count + position].add(made, of: primaryKey)
            }
            for position in fullTextChecks.indices {
                fullTextChecks[position].add(primaryKey: primaryKey, texts: fullTextIndexes[position].texts(of: value))
            }
        }
        for (check, databases) in zip(fullTextChecks, info.fullText) {
            try check.finish(
                FullTextStorage(databases: databases, core: store.core), records: primaryKeys, in: txn, into: &problems)
        }
        let indexCount = M.schema.indexes.count
        for (position, database) in info.indexes.enumerated() {
            _ = try checks[position].finish(
                stored: try pairs(in: database), records: primaryKeys,
                targetExists: nil as (([UInt8]) throws(StoreError) -> Bool)?, into: &problems)
        }
        for (position, link) in info.links.enumerated() {
            let target = try store.info(linkedBy: link)
            let core = store.core
            let exists = { (key: [UInt8]) throws(StoreError) -> Bool in
                try core.run("read") { try txn.get(target.records, key: key) != nil }
            }
            _ = try checks[indexCount + position].finish(
                stored: try pairs(in: link.database), records: primaryKeys,
                targetExists: link.allowsDangling ? nil : exists, into: &problems)
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
