/// One index or backlink database compared with the records it is derived from.
///
/// Both verifiers use it: `Store.verifyIntegrity()`, which makes each record's keys with the model's Swift type, and
/// `cellar verify`, which makes them from the stored schema, or checks entry by entry where that schema cannot say how
/// they were made. They differ only in how a record's keys are made; what is compared, and the words a disagreement
/// is told in, are made here once.
struct DerivedDatabaseCheck {
    enum Source {
        case index(StoredIndex)
        case link(StoredLink)
    }

    let source: Source
    /// The stored name of the model whose records the database is derived from.
    let model: String
    /// Whether each record's keys are added (`add`) and compared; otherwise each entry is checked against the records
    /// alone: it names a record, and (for an index) each record has one.
    let recomputes: Bool
    private var expected = Set<IndexPair>()
    private var uniqueHolders: [[UInt8]: Int] = [:]
    /// Records that could not be read (reported as such): their keys cannot be made, so the entries naming them are
    /// not compared.
    private var unreadable = Set<[UInt8]>()

    init(_ source: Source, model: String, recomputes: Bool) {
        self.source = source
        self.model = model
        self.recomputes = recomputes
    }

    var database: String {
        switch source {
        case .index(let index): index.database
        case .link(let link): link.database
        }
    }

    /// Adds the entries the record `primaryKey` gives: its keys in the database, each with whether a component is
    /// `nil` (a unique index holds such keys without making them unique).
    mutating func add(_ keys: [(key: [UInt8], hasNil: Bool)], of primaryKey: [UInt8]) {
        for (key, hasNil) in keys {
            expected.insert(IndexPair(key: key, value: primaryKey))
            if case .index(let index) = source, index.isUnique, !hasNil { uniqueHolders[key, default: 0] += 1 }
        }
    }

    /// Notes a record that could not be read: the entries that name it are left uncompared, as its keys cannot be
    /// made (the record itself is reported as unreadable).
    mutating func skip(_ primaryKey: [UInt8]) {
        unreadable.insert(primaryKey)
    }

    /// Compares the database's entries with the records and adds what disagrees to `problems`; returns the line that
    /// says how the database was checked.
    ///
    /// - Parameters:
    ///   - stored: the database's entries; `nil` when the file lacks the database.
    ///   - records: the primary keys of the model's records.
    ///   - targetExists: for a link, whether the target's record of a key exists; `nil` when targets go unchecked
    ///     (the link allows dangling, or the target model is not there to ask).
    func finish<Failure: Error>(
        stored: Set<IndexPair>?, records: Set<[UInt8]>, targetExists: (([UInt8]) throws(Failure) -> Bool)?,
        into problems: inout IntegrityProblems
    ) throws(Failure) -> String {
        guard let stored else {
            problems.add("\(database) is missing")
            return "  \(database): missing"
        }
        if recomputes {
            compare(stored: stored, into: &problems)
        } else {
            checkEntries(stored, records: records, into: &problems)
        }
        if case .link(let link) = source {
            if let targetExists {
                // The links the records make; where they cannot be made, those the database says they make.
                try checkTargets(of: recomputes ? expected : stored, link: link, exists: targetExists, into: &problems)
            }
            if link.isExclusive { checkExclusive(stored, link: link, into: &problems) }
        }
        let how = recomputes ? "recomputed from the records" : "entry by entry (its keys need the app's types)"
        return "  \(database): \(counted(stored.count, "entry", plural: "entries")), \(how)"
    }

    /// Adds the entries the records give and the database lacks, those it holds and no record gives, and the keys of
    /// a unique index that several records share.
    private func compare(stored: Set<IndexPair>, into problems: inout IntegrityProblems) {
        for missing in expected.subtracting(stored).sorted() {
            problems.add(
                "\(database) lacks the entry \(KeyEncoding.describe(missing.key)) → \(model) "
                    + KeyEncoding.describe(missing.value))
        }
        for extra in stored.subtracting(expected).sorted() where !unreadable.contains(extra.value) {
            problems.add(
                "\(database) holds the entry \(KeyEncoding.describe(extra.key)) → \(model) "
                    + "\(KeyEncoding.describe(extra.value)), which no record gives")
        }
        for (key, count) in uniqueHolders.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where count > 1 {
            problems.add("\(count) \(model) records share the value \(KeyEncoding.describe(key)) of unique \(database)")
        }
    }

    /// Where keys cannot be made: each entry names a record that exists, and each record of an index has one entry.
    private func checkEntries(_ stored: Set<IndexPair>, records: Set<[UInt8]>, into problems: inout IntegrityProblems) {
        var entriesByRecord: [[UInt8]: Int] = [:]
        for pair in stored.sorted() {
            entriesByRecord[pair.value, default: 0] += 1
            if !records.contains(pair.value) {
                problems.add(
                    "\(database) holds the entry \(KeyEncoding.describe(pair.key)) → \(model) "
                        + "\(KeyEncoding.describe(pair.value)), which does not exist")
            }
        }
        guard case .index(let index) = source, !index.isMultiEntry else { return }
        for record in records.sorted(by: { $0.lexicographicallyPrecedes($1) }) where entriesByRecord[record] != 1 {
            problems.add(
                "\(database) holds \(entriesByRecord[record] ?? 0) entries for \(model) "
                    + "\(KeyEncoding.describe(record)), not one")
        }
    }

    /// Adds each link of `links` (target key → linking record) whose target does not exist.
    private func checkTargets<Failure: Error>(
        of links: Set<IndexPair>, link: StoredLink, exists: ([UInt8]) throws(Failure) -> Bool,
        into problems: inout IntegrityProblems
    ) throws(Failure) {
        var known: [[UInt8]: Bool] = [:]
        for pair in links.sorted(by: { $0.value == $1.value ? $0 < $1 : $0.value.lexicographicallyPrecedes($1.value) })
        {
            let found: Bool
            if let seen = known[pair.key] {
                found = seen
            } else {
                found = try exists(pair.key)
                known[pair.key] = found
            }
            if !found {
                problems.add(
                    "\(model) \(KeyEncoding.describe(pair.value)) links through \(link.property) to \(link.target) "
                        + "\(KeyEncoding.describe(pair.key)), which does not exist")
            }
        }
    }

    /// Adds each target of an exclusive link that the database gives more than one source.
    private func checkExclusive(_ stored: Set<IndexPair>, link: StoredLink, into problems: inout IntegrityProblems) {
        var holders: [[UInt8]: Int] = [:]
        for pair in stored { holders[pair.key, default: 0] += 1 }
        for (key, count) in holders.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where count > 1 {
            problems.add(
                "\(link.target) \(KeyEncoding.describe(key)) is linked by \(count) \(model) records through the "
                    + "exclusive link \(link.property)")
        }
    }
}
