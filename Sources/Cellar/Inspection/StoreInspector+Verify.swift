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

    /// How a record's entries in one index or link database are made from its stored values: its keys, each with
    /// whether a component is `nil`.
    typealias MakeKeys = (RecordValue) throws -> [(key: [UInt8], hasNil: Bool)]

    func run(into problems: inout IntegrityProblems, progress: (String, Int, Int) -> Void) throws -> [String] {
        let name = model.name
        guard let records = try txn.openDatabase(named: DatabaseName.records(name)) else {
            if model.recordCount > 0 { problems.add("\(name) has no records database") }
            return ["\(name): no records"]
        }
        var derived = derivedDatabases()
        // Each full-text index, checked against its properties' texts as the stored records hold them. Where a
        // property is not a stored field by that name (a renamed coding key), the texts cannot be read without the
        // type: that index's structure is checked, and the store's own `verifyIntegrity()` compares its words.
        let fullTextIndexes = model.schema.indexes.compactMap { index in
            index.fullText.map { (index, $0) }
        }
        var fullTextChecks = fullTextIndexes.map { index, _ in
            FullTextCheck(name: index.database, readsTexts: index.paths.allSatisfy { shape(at: $0) != nil })
        }
        var primaryKeys = Set<[UInt8]>()
        var done = 0
        // Records written before checksums: read, but unchecked until they are written again.
        var unsealed = 0
        let total = model.recordCount
        try txn.walk(records) { entry in
            let primaryKey = Array(entry.key)
            primaryKeys.insert(primaryKey)
            done += 1
            if done % 4_096 == 0 { progress(name, done, total) }
            if entry.value.first == RecordFormat.uncheckedVersion { unsealed += 1 }
            let value: RecordValue
            do { value = try RecordValue(record: entry.value, dictionary: model.dictionary) } catch {
                problems.add("\(name) \(KeyEncoding.describe(primaryKey)) cannot be decoded: \(error)")
                for position in derived.indices { derived[position].check.skip(primaryKey) }
                for position in fullTextChecks.indices { fullTextChecks[position].skip(primaryKey: primaryKey) }
                return true
            }
            for position in derived.indices {
                guard let keys = derived[position].keys else { continue }
                do { derived[position].check.add(try keys(value), of: primaryKey) } catch {
                    problems.add(
                        "\(name) \(KeyEncoding.describe(primaryKey)) has no key in \(derived[position].check.database): "
                            + "\(error)")
                }
            }
            for (position, (index, _)) in fullTextIndexes.enumerated() where fullTextChecks[position].readsTexts {
                let texts = index.paths.map { path -> String? in
                    if case .string(let text) = value.value(at: path) { return text }
                    return nil
                }
                fullTextChecks[position].add(primaryKey: primaryKey, texts: texts)
            }
            return true
        }
        progress(name, done, total)
        var lines = ["\(name): \(counted(done, "record"))"]
        if unsealed > 0 {
            lines[0] += " (\(unsealed) written before records carried a checksum: checked as they are written again)"
        }
        for (check, _) in derived {
            var stored: Set<IndexPair>?
            if let database = try txn.openDatabase(named: check.database) {
                var entries = Set<IndexPair>()
                try txn.walk(database) { entry in
                    entries.insert(IndexPair(key: Array(entry.key), value: Array(entry.value)))
                    return true
                }
                stored = entries
            }
            lines.append(
                try check.finish(
                    stored: stored, records: primaryKeys, targetExists: try targetExists(for: check, into: &problems),
                    into: &problems))
        }
        for ((index, fullText), check) in zip(fullTextIndexes, fullTextChecks) {
            guard let postings = try txn.openDatabase(named: index.database),
                let documents = try txn.openDatabase(named: fullText.documents)
            else {
                problems.add("the full-text index \(index.database) is missing")
                continue
            }
            let storage = FullTextStorage(
                databases: FullTextDatabases(name: index.database, postings: postings, documents: documents), core: core
            )
            let before = problems.total
            try check.finish(storage, records: primaryKeys, in: txn, into: &problems)
            let sound = problems.total == before
            lines.append(
                "  full-text index \(index.database): "
                    + (check.readsTexts
                        ? (sound ? "agrees with the records' texts" : "disagrees with them")
                        : (sound
                            ? "sound (its texts need the model's type: verifyIntegrity() compares them)" : "damaged")))
        }
        return lines
    }

    /// For a link whose targets must exist, whether the target's record of a key does; `nil` for an index, a link
    /// that allows dangling, or a target model the file does not hold (a problem itself).
    private func targetExists(
        for check: DerivedDatabaseCheck, into problems: inout IntegrityProblems
    ) throws -> (([UInt8]) throws -> Bool)? {
        guard case .link(let link) = check.source, !link.allowsDangling else { return nil }
        let name = DatabaseName.records(link.target)
        guard models.contains(where: { $0.name == link.target }), let target = try txn.openDatabase(named: name) else {
            problems.add("\(link.database) links to \(name), which the file does not hold")
            return nil
        }
        return { key in try txn.get(target, key: key) != nil }
    }

    /// The model's index and link databases, each with the way to make a record's keys where the stored schema
    /// tells it.
    private func derivedDatabases() -> [(check: DerivedDatabaseCheck, keys: MakeKeys?)] {
        // A full-text index's databases are checked against the records' texts by the store, which has the tokenizer's
        // answers for them; here they are left out of the key indexes' checks.
        let indexes = model.schema.indexes.filter { $0.fullText == nil }.map {
            index -> (DerivedDatabaseCheck, MakeKeys?) in
            let makesKeys = index.paths.allSatisfy { path in shape(at: path).map(Self.hasKey) ?? false }
            let paths = index.paths
            let keys: MakeKeys? =
                makesKeys && index.folding == nil
                ? { record in
                    var key: [UInt8] = []
                    var hasNil = false
                    for path in paths {
                        let component = record.value(at: path) ?? .null
                        hasNil = hasNil || component == .null
                        try component.appendKey(to: &key)
                    }
                    return [(key, hasNil)]
                } : nil
            return (DerivedDatabaseCheck(.index(index), model: model.name, recomputes: keys != nil), keys)
        }
        let links = model.schema.links.map { link -> (DerivedDatabaseCheck, MakeKeys?) in
            // A link's entry is its target's primary key, read from the record as the stored shape says.
            let shape = shape(at: link.property.split(separator: ".").map(String.init))
            let recomputes = (try? link.targetKeys(in: .keyed([]), shape: shape)) != nil
            let keys: MakeKeys? =
                recomputes
                ? { record in try link.targetKeys(in: record, shape: shape)?.map { ($0, false) } ?? [] } : nil
            return (DerivedDatabaseCheck(.link(link), model: model.name, recomputes: recomputes), keys)
        }
        return indexes + links
    }

    /// The stored shape of the field at `path`, when the records can hold it: every name on the path is a key the
    /// model's records were written with (its key dictionary). A property whose coding key is another name is
    /// described under its property's name, which no record holds.
    private func shape(at path: [String]) -> ValueShape? {
        guard path.allSatisfy({ model.dictionary.tags[$0] != nil }) else { return nil }
        return model.schema.shape(at: path)
    }

    /// Whether a stored value of `shape` gives the key its Swift type gives.
    private static func hasKey(_ shape: ValueShape) -> Bool {
        switch shape {
        case .bool, .int, .float, .double, .string, .data, .date, .uuid, .url, .link: true
        case .object(let fields): fields.allSatisfy { hasKey($0.shape) }
        case .decimal, .list, .dictionary, .pairs, .opaque: false
        }
    }
}
