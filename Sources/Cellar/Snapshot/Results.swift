/// The records a query found in one committed version, frozen.
///
/// Nothing that happens to the store later changes a `Results`: deleting or changing its records leaves its
/// `count` and elements as they were, so indexes stay valid and nothing is ever "invalidated". It holds no
/// transaction open, so keeping it never grows the file. Ask `latest()` for the same query on the newest version.
///
/// Records are decoded inside the query's read transaction, straight from the mapped pages, so a damaged record
/// is a `StoreError` thrown by the query, and reading an element can never fail.
public struct Results<M: Model>: RandomAccessCollection, Sendable {
    let elements: [M]
    /// The version the records come from.
    public let version: StoreVersion
    private let query: Query<M>

    init(_ elements: [M], version: StoreVersion, query: Query<M>) {
        self.elements = elements
        self.version = version
        self.query = query
    }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }
    public subscript(position: Int) -> M { elements[position] }

    /// The same query run again on the newest committed version.
    public func latest() throws(StoreError) -> Results<M> { try query.results() }
}
