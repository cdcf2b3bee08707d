/// A description of which records to read and how to shape them. Making one does no I/O; it runs when asked for
/// `results()`, `first()`, `count()`, an aggregate, or `explain()`; in async code each has an `async` form of the same name.
///
/// ```swift
/// let adults = try store.objects(Dog.self).where(\.age >= 3 && \.kind == .shiba).sorted(by: \.name).results()
/// ```
///
/// Conditions on indexed properties are answered from the index: `explain()` says how. A query made from the store
/// may be kept and run again from any thread, each run on the newest committed version. A query made inside a
/// transaction or snapshot (`tx.objects(Dog.self)`) sees that transaction, including its own uncommitted writes, and
/// can run only inside its closure.
public struct Query<M: Model>: Sendable {
    enum Source: Sendable {
        case store(Store)
        case scope(ScopeToken)
    }

    var source: Source
    var predicate: Condition<M>?
    var ordering: [SortKey<M>] = []
    var distinctKey: SortKey<M>?
    var limitCount: Int?
    var skipCount = 0
    /// Keeps only the records that link to given targets, read from a backlink index.
    var linkFilter: LinkFilter<M>?
    /// Leaves out the records that a link of another model leads to.
    var exclusions: [LinkExclusion] = []

    init(source: Source) { self.source = source }

    // MARK: Shaping

    /// Keeps the records that match `predicate` (and any earlier `where`).
    public func `where`(_ predicate: Condition<M>) -> Query {
        var query = self
        query.predicate = self.predicate.map { $0 && predicate } ?? predicate
        return query
    }

    /// Keeps the records that match, in Realm's type-safe query syntax:
    /// `where { $0.wordCount > 3 && $0.title.starts(with: "A") }`. The closure builds the same condition as the
    /// key-path form (`\.wordCount > 3 && .hasPrefix(\.title, "A")`), once, when the query is made: an index answers
    /// it alike and `explain()` reads the same. See ``QueryRow``.
    /// A `Bool` property alone is a condition too: `where { $0.pinned }`.
    public func `where`<C: QueryCondition>(_ build: (QueryRow<M>) -> C) -> Query where C.Root == M {
        self.where(build(QueryRow()).condition)
    }

    /// Keeps the records whose `Bool` property is `true`: `.where(\.pinned)`; `.where(!\.pinned)` keeps the others.
    public func `where`(_ path: KeyPath<M, Bool> & Sendable) -> Query { self.where(path == true) }

    /// Keeps the records for which `isIncluded` returns `true`. A closure cannot use an index: it is checked on
    /// every record the rest of the query reads.
    public func filter(_ isIncluded: @escaping @Sendable (M) -> Bool) -> Query { self.where(.matching(isIncluded)) }

    /// Orders the results by a property; a second call breaks ties of the first. A sort that matches an index is
    /// read from it in order, and stops early with `limit`.
    ///
    /// The order is that of the values' keys: numbers and dates by value, strings by their Unicode scalars (as
    /// `String.unicodeScalars` compare), raw-value enums by their raw value, `nil` first.
    public func sorted<V: Encodable & Sendable>(
        by path: KeyPath<M, V> & Sendable, ascending: Bool = true
    ) -> Query {
        var query = self
        query.ordering.append(SortKey(path: path, ascending: ascending))
        return query
    }

    /// At most `count` results.
    public func limit(_ count: Int) -> Query {
        var query = self
        query.limitCount = Swift.max(0, count)
        return query
    }

    /// Skips the first `count` results.
    public func offset(_ count: Int) -> Query {
        var query = self
        query.skipCount = Swift.max(0, count)
        return query
    }

    /// Keeps only the first record (in the query's order) of each value of `path`.
    public func distinct<V: Encodable & Sendable>(by path: KeyPath<M, V> & Sendable) -> Query {
        var query = self
        query.distinctKey = SortKey(path: path, ascending: true)
        return query
    }

    // MARK: Running

    /// The matching records, decoded into a frozen `Results`.
    public func results() throws(StoreError) -> Results<M> {
        try run { (context) throws(StoreError) in
            Results(
                try execute(in: context, info: context.store.info(for: M.self)),
                version: StoreVersion(rawValue: try context.lmdb.id), query: onStore(context.store))
        }
    }

    /// The first matching record in the query's order, or `nil` (Realm's `first`).
    public func first() throws(StoreError) -> M? {
        try limit(1).run { (context) throws(StoreError) in
            try limit(1).execute(in: context, info: context.store.info(for: M.self)).first
        }
    }

    /// How many records match (Realm's `count`). Read from the index without decoding records when one indexed
    /// condition is the whole predicate, and from the database header when there is no predicate.
    public func count() throws(StoreError) -> Int {
        try run { (context) throws(StoreError) in
            let info = try context.store.info(for: M.self)
            let total: Int
            if let counted = try countWithoutReading(in: context, info: info) {
                total = counted
            } else {
                total = try offset(0).limit(.max).execute(in: context, info: info).count
            }
            return Swift.max(0, Swift.min(total - skipCount, limitCount ?? .max))
        }
    }

    /// How the query runs, in words: which index it reads or that it scans, what it checks on each record, and
    /// whether it sorts in memory. For example `use index i/Dog.age for age == 7, then check name has prefix "T"`.
    public func explain() throws(StoreError) -> String {
        try run { (context) throws(StoreError) in
            let info = try context.store.info(for: M.self)
            return try describe(try plan(info: info, context: context), info: info, context: context)
        }
    }

    /// The same query on the newest committed version of `store`, wherever this one was made.
    func onStore(_ store: Store) -> Query {
        var query = self
        query.source = .store(store)
        return query
    }

    func run<R>(_ body: (ReadScope) throws(StoreError) -> R) throws(StoreError) -> R {
        switch source {
        case .store(let store):
            return try store.withSnapshot { (snapshot) throws(StoreError) in try body(snapshot) }
        case .scope(let token):
            return try body(try token.context())
        }
    }

    // MARK: Aggregates

    /// The smallest value of `path` among the matching records; read from the first entry of an index on `path`
    /// when there is no predicate.
    public func min<V: Comparable & Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable) throws(StoreError) -> V? {
        try extreme(path, ascending: true)
    }

    /// The largest value of `path` among the matching records.
    public func max<V: Comparable & Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable) throws(StoreError) -> V? {
        try extreme(path, ascending: false)
    }

    /// The sum of `path` over the matching records.
    public func sum<V: AdditiveArithmetic & Sendable>(_ path: KeyPath<M, V> & Sendable) throws(StoreError) -> V {
        try results().reduce(.zero) { $0 + $1[keyPath: path] }
    }

    /// The mean of `path` over the matching records, or `nil` when none match.
    public func average<V: BinaryFloatingPoint & Sendable>(_ path: KeyPath<M, V> & Sendable) throws(StoreError) -> V? {
        let values = try results()
        return values.isEmpty ? nil : values.reduce(V.zero) { $0 + $1[keyPath: path] } / V(values.count)
    }

    /// The mean of an integer `path` over the matching records, or `nil` when none match.
    public func average<V: BinaryInteger & Sendable>(_ path: KeyPath<M, V> & Sendable) throws(StoreError) -> Double? {
        let values = try results()
        return values.isEmpty ? nil : values.reduce(0.0) { $0 + Double($1[keyPath: path]) } / Double(values.count)
    }

    private func extreme<V: Comparable & Encodable & Sendable>(
        _ path: KeyPath<M, V> & Sendable, ascending: Bool
    ) throws(StoreError) -> V? {
        try sorted(by: path, ascending: ascending).first()?[keyPath: path]
    }
}

/// One key of a sort: a property, its direction, and how to make its order-preserving key.
struct SortKey<M: Model>: Sendable {
    // Key paths are immutable values; `PartialKeyPath` is just not declared `Sendable`.
    nonisolated(unsafe) let path: PartialKeyPath<M>
    let ascending: Bool
    let key: @Sendable (M) throws(StoreError) -> [UInt8]

    init<V: Encodable & Sendable>(path: KeyPath<M, V> & Sendable, ascending: Bool) {
        self.path = path
        self.ascending = ascending
        let reader = PropertyReader(path)
        self.key = { (value) throws(StoreError) in try conditionKey(reader.read(value)) }
    }

    var name: String { Index<M>.propertyName(path) }
}
