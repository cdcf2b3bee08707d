import LMDB

/// What `StoreInspector.verify` found.
package struct InspectionReport: Sendable {
    /// The version checked.
    package let version: UInt64
    /// What was checked, model by model, in words: records, and each index and link database, recomputed from the
    /// records or, where the stored schema cannot say how its keys were made, checked entry by entry.
    package let checked: [String]
    /// Every disagreement, damaged page and undecodable record, in words; the first hundred, then how many more.
    package let problems: [String]
}

extension StoreInspector {
    /// Checks the whole store without its Swift types: every page (before LMDB reads any), that every record decodes,
    /// and that every index, unique index and backlink database agrees with the records and no link dangles.
    ///
    /// An index is recomputed from the records when its name is a path of stored fields whose kinds make a key
    /// (scalars, optionals, structs of them): what a key path index names. An index on a computed property, a custom
    /// name or a list is checked entry by entry instead: each entry names a record, each record has one entry.
    ///
    /// - Parameter progress: called now and then with the model being checked, records done and records in all.
    package func verify(progress: (String, Int, Int) -> Void = { _, _, _ in }) throws(StoreError) -> InspectionReport {
        let pages = try core.run("check the pages of") { try core.environment.checkPages() }
        guard pages.isSound else {
            return InspectionReport(version: pages.transactionID, checked: ["pages"], problems: pages.problems)
        }
        var problems = IntegrityProblems()
        var checked = ["\(counted(pages.pagesInUse, "page")) in use and \(grouped(pages.freePages)) free"]
        let models = try models()
        try read("verify") { txn in
            for model in models {
                checked += try ModelCheck(model: model, models: models, txn: txn, core: core)
                    .run(into: &problems, progress: progress)
            }
        }
        return InspectionReport(version: pages.transactionID, checked: checked, problems: problems.summary)
    }
}

/// The check of one stored model's records, indexes and links, in one read transaction.
private struct ModelCheck {
    let model: StoredModel
    let models: [StoredModel]
    let txn: ReadTransaction
    let core: StoreCore

    /// An index or link database and how its expected entries are made from a record, when they can be.
    struct Derived {
        let database: String
        /// The expected entries' keys of a record (one for an index, one per target for a link), each with whether a
        /// component is `nil` (which a unique index does not hold unique); `nil` when the database can only be
        /// checked entry by entry.
        let keys: ((RecordValue) throws -> [(key: [UInt8], hasNil: Bool)])?
        /// Whether each record has exactly one entry (an index).
        let isIndex: Bool
        let isUnique: Bool
        /// For a link: the target model's records database, unless dangling links are allowed.
        let targetRecords: String?
        let isExclusive: Bool
        var expected = Set<IndexPair>()
        var uniqueHolders: [[UInt8]: Int] = [:]
    }

    func run(into problems: inout IntegrityProblems, progress: (String, Int, Int) -> Void) throws -> [String] {
        let name = model.name
        guard let records = try txn.openDatabase(named: DatabaseName.records(name)) else {
            if model.recordCount > 0 { problems.add("\(name) has no records database") }
            return ["\(name): no records"]
        }
        var derived = derivedDatabases()
        var primaryKeys = Set<[UInt8]>()
        var done = 0
        let total = model.recordCount
        try txn.walk(records) { entry in
            let primaryKey = Array(entry.key)
            let id = KeyEncoding.describe(primaryKey)
            primaryKeys.insert(primaryKey)
            done += 1
            if done % 4_096 == 0 { progress(name, done, total) }
            let value: RecordValue
            do { value = try RecordValue(record: entry.value, dictionary: model.dictionary) } catch {
                problems.add("\(name) \(id) cannot be decoded: its bytes are not a record")
                return true
            }
            for position in derived.indices {
                guard let keys = derived[position].keys else { continue }
                let made: [(key: [UInt8], hasNil: Bool)]
                do { made = try keys(value) } catch {
                    problems.add("\(name) \(id) has no key in \(derived[position].database): \(error)")
                    continue
                }
                for (key, hasNil) in made {
                    derived[position].expected.insert(IndexPair(key: key, value: primaryKey))
                    if derived[position].isUnique, !hasNil { derived[position].uniqueHolders[key, default: 0] += 1 }
                }
            }
            return true
        }
        progress(name, done, total)
        var lines = ["\(name): \(counted(done, "record"))"]
        for database in derived {
            lines.append(try check(database, records: primaryKeys, into: &problems))
        }
        return lines
    }

    /// Compares one index or link database with the records; the line that says how it was checked.
    private func check(
        _ derived: Derived, records: Set<[UInt8]>, into problems: inout IntegrityProblems
    ) throws -> String {
        let name = model.name
        guard let database = try txn.openDatabase(named: derived.database) else {
            problems.add("\(derived.database) is missing")
            return "  \(derived.database): missing"
        }
        var stored = Set<IndexPair>()
        try txn.walk(database) { entry in
            stored.insert(IndexPair(key: Array(entry.key), value: Array(entry.value)))
            return true
        }
        let target = try derived.targetRecords.flatMap { try txn.openDatabase(named: $0) }
        if derived.targetRecords != nil, target == nil {
            problems.add("\(derived.database) links to \(derived.targetRecords ?? ""), which the file does not hold")
        }
        if derived.keys != nil {
            problems.compare(stored: stored, expected: derived.expected, database: derived.database, model: name)
            for (key, count) in derived.uniqueHolders where count > 1 {
                problems.add(
                    "\(count) \(name) records share the value \(KeyEncoding.describe(key)) of unique \(derived.database)"
                )
            }
        } else {
            var entriesByRecord: [[UInt8]: Int] = [:]
            for pair in stored {
                entriesByRecord[pair.value, default: 0] += 1
                if !records.contains(pair.value) {
                    problems.add(
                        "\(derived.database) holds the entry \(KeyEncoding.describe(pair.key)) → \(name) "
                            + "\(KeyEncoding.describe(pair.value)), which does not exist")
                }
            }
            if derived.isIndex {
                for record in records.sorted(by: { $0.lexicographicallyPrecedes($1) })
                where entriesByRecord[record] != 1 {
                    problems.add(
                        "\(derived.database) holds \(entriesByRecord[record] ?? 0) entries for \(name) "
                            + "\(KeyEncoding.describe(record)), not one")
                }
            }
        }
        if let target {
            for key in Set(stored.map(\.key)).sorted(by: { $0.lexicographicallyPrecedes($1) })
            where try txn.get(target, key: key) == nil {
                problems.add(
                    "a \(name) record links through \(derived.database) to \(KeyEncoding.describe(key)), which does not "
                        + "exist")
            }
        }
        if derived.isExclusive {
            problems.checkExclusive(stored) { target, count in
                "\(target) is linked by \(count) \(name) records through the exclusive link \(derived.database)"
            }
        }
        let how = derived.keys == nil ? "entry by entry (its keys need the app's types)" : "recomputed from the records"
        return "  \(derived.database): \(counted(stored.count, "entry", plural: "entries")), \(how)"
    }

    /// The model's index and link databases, with the way to recompute each where the stored schema tells it.
    private func derivedDatabases() -> [Derived] {
        let indexes = model.schema.indexes.map { index -> Derived in
            let makesKeys = index.paths.allSatisfy { path in shape(at: path).map(Self.hasKey) ?? false }
            let paths = index.paths
            return Derived(
                database: index.database,
                keys: makesKeys && index.folding == nil
                    ? { record in
                        var key: [UInt8] = []
                        var hasNil = false
                        for path in paths {
                            let component = record.value(at: path) ?? .null
                            hasNil = hasNil || component == .null
                            try component.appendKey(to: &key)
                        }
                        return [(key, hasNil)]
                    } : nil,
                // A multi-entry index (`tags[]`) holds an entry per element: any number a record.
                isIndex: !index.isMultiEntry, isUnique: index.isUnique, targetRecords: nil, isExclusive: false)
        }
        let links = model.schema.links.map { link -> Derived in
            // A link's entry is its target's primary key, read from the record as the stored shape says.
            let shape = shape(at: link.property.split(separator: ".").map(String.init))
            let recomputes = (try? link.targetKeys(in: .keyed([]), shape: shape)) != nil
            return Derived(
                database: link.database,
                keys: recomputes
                    ? { record in try link.targetKeys(in: record, shape: shape)?.map { ($0, false) } ?? [] } : nil,
                isIndex: false, isUnique: false,
                targetRecords: link.allowsDangling || !models.contains { $0.name == link.target }
                    ? nil : DatabaseName.records(link.target),
                isExclusive: link.isExclusive)
        }
        return indexes + links
    }

    private func shape(at path: [String]) -> ValueShape? { model.schema.shape(at: path) }

    /// Whether a stored value of `shape` gives the key its Swift type gives.
    private static func hasKey(_ shape: ValueShape) -> Bool {
        switch shape {
        case .bool, .int, .float, .double, .string, .data, .date, .uuid, .url, .link: true
        case .object(let fields): fields.allSatisfy { hasKey($0.shape) }
        case .decimal, .list, .dictionary, .pairs, .opaque: false
        }
    }
}
