// Realm's names for calls Cellar spells otherwise: each reaches the right call through the compiler's message.
// They are never called; an unavailable declaration still needs a body.

extension WriteTransaction {
    /// Realm's `add(_:)` and `add(_:update:)`.
    @available(
        *, unavailable,
        message:
            "Cellar's add is insert(_:) for a new record (an existing id throws duplicateID) or upsert(_:) to insert or replace, Realm's add(_:update: .modified)"
    )
    public func add<M: Model>(_ object: M) {}
}

extension Store {
    /// Realm's `object(ofType:forPrimaryKey:)`.
    @available(*, unavailable, renamed: "object(_:id:)")
    public func object<M: Model>(ofType type: M.Type, forPrimaryKey key: M.ID) -> M? { nil }
}

extension ReadScope {
    /// Realm's `object(ofType:forPrimaryKey:)`.
    @available(*, unavailable, renamed: "object(_:id:)")
    public func object<M: Model>(ofType type: M.Type, forPrimaryKey key: M.ID) -> M? { nil }
}

extension Query {
    /// Realm's `sorted(byKeyPath:ascending:)`, which takes the property's name as text.
    @available(*, unavailable, message: "sort by a key path: sorted(by: \\.name, ascending: true)")
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Query { self }

    /// Realm's `filter(_:)` with an `NSPredicate` format string.
    @available(
        *, unavailable,
        message: "Cellar has no predicates in text: write where { $0.name == \"Taro\" } or where(\\.name == \"Taro\")"
    )
    public func filter(_ predicateFormat: String, _ arguments: Any...) -> Query { self }
}

/// Realm's `Results` is a live collection to iterate; a `Query` reads nothing until it runs. `for dog in query`,
/// `query.map(…)` and any use of a query as a `Sequence` point at `results()`, which returns the frozen collection.
@available(*, unavailable, message: "a Query reads nothing until it runs: iterate try query.results()")
extension Query: Sequence {
    /// Never made: the conformance is unavailable.
    public struct Iterator: IteratorProtocol {
        public mutating func next() -> M? { nil }
    }

    /// Never called: the conformance is unavailable.
    public func makeIterator() -> Iterator { Iterator() }
}
