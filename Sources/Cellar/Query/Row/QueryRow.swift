/// A record as a `where { }` closure sees it, in Realm's type-safe query syntax:
///
/// ```swift
/// let notes = try store.objects(Note.self).where { $0.wordCount > 3 && $0.title.starts(with: "A") }.results()
/// ```
///
/// Each property is a ``QueryField``; comparing one makes the very ``Condition`` the key-path form makes
/// (`\.wordCount > 3`), so an index answers it alike and `explain()` reads the same. The closure runs once, when the
/// query is made, to build the condition: it never sees a record. What it cannot express does not compile.
@dynamicMemberLookup
public struct QueryRow<M: Model>: Sendable {
    /// A property of the model, to compare: `$0.age`.
    public subscript<V>(dynamicMember path: KeyPath<M, V> & Sendable) -> QueryField<M, V> { QueryField(path) }
}

/// A property in a `where { }` closure (see ``QueryRow``): compare it with a value (`$0.age > 3`), test its text
/// (`$0.name.starts(with: "T")`) or its list (`$0.tags.contains("errand")`), or reach into a struct it holds
/// (`$0.address.city == "Lyon"`). A `Bool` property is a condition of its own: `$0.pinned`, `!$0.pinned`.
@dynamicMemberLookup
public struct QueryField<M: Model, V>: Sendable {
    /// The key path this field stands for: `$0.address.city` is `\.address.city`.
    public let keyPath: KeyPath<M, V> & Sendable

    init(_ keyPath: KeyPath<M, V> & Sendable) { self.keyPath = keyPath }

    /// A property of the struct this property holds: `$0.address.city`.
    public subscript<U>(dynamicMember member: KeyPath<V, U> & Sendable) -> QueryField<M, U> {
        // The joined path equals `\.address.city`: indexes on it and `explain()` see the same property.
        QueryField<M, U>(sendableKeyPath(keyPath.appending(path: member)))
    }
}

// MARK: - Comparisons

extension QueryField where V: Equatable & Encodable & Sendable {
    /// The property equals `value` (`$0.owner == nil` for a missing optional).
    public static func == (lhs: QueryField, rhs: V) -> Condition<M> { lhs.keyPath == rhs }
    /// The property differs from `value`. Checked record by record.
    public static func != (lhs: QueryField, rhs: V) -> Condition<M> { lhs.keyPath != rhs }
    /// The property is one of `values` (Realm's `in`).
    public func `in`(_ values: [V]) -> Condition<M> { .in(keyPath, values) }
}

extension QueryField where V: Comparable & Encodable & Sendable {
    public static func < (lhs: QueryField, rhs: V) -> Condition<M> { lhs.keyPath < rhs }
    public static func <= (lhs: QueryField, rhs: V) -> Condition<M> { lhs.keyPath <= rhs }
    public static func > (lhs: QueryField, rhs: V) -> Condition<M> { lhs.keyPath > rhs }
    public static func >= (lhs: QueryField, rhs: V) -> Condition<M> { lhs.keyPath >= rhs }
    /// The property lies in `range` (Realm's `$0.age.contains(1...5)`, `BETWEEN`).
    public func contains(_ range: ClosedRange<V>) -> Condition<M> { .between(keyPath, range) }
    /// The property lies in `range` (`1..<5`).
    public func contains(_ range: Range<V>) -> Condition<M> { .between(keyPath, range) }
}

/// An optional property compared with a value: `nil` matches no comparison but `!= value`.
extension QueryField {
    public static func < <W: Comparable & Encodable & Sendable>(lhs: QueryField, rhs: W) -> Condition<M>
    where V == W? { lhs.keyPath < rhs }
    public static func <= <W: Comparable & Encodable & Sendable>(lhs: QueryField, rhs: W) -> Condition<M>
    where V == W? { lhs.keyPath <= rhs }
    public static func > <W: Comparable & Encodable & Sendable>(lhs: QueryField, rhs: W) -> Condition<M>
    where V == W? { lhs.keyPath > rhs }
    public static func >= <W: Comparable & Encodable & Sendable>(lhs: QueryField, rhs: W) -> Condition<M>
    where V == W? { lhs.keyPath >= rhs }
}

// MARK: - Text

extension QueryField where V == String {
    /// The text starts with `prefix`; with `options` `.caseInsensitive` and `.diacriticInsensitive` (Realm's
    /// `[c]`, `[d]`) both are folded first. An index on the property (folded alike) answers it.
    public func starts(with prefix: String, options: String.CompareOptions = []) -> Condition<M> {
        .hasPrefix(keyPath, prefix, options: options)
    }

    /// The text ends with `suffix`, folded as `options` say. Checked record by record.
    public func ends(with suffix: String, options: String.CompareOptions = []) -> Condition<M> {
        .hasSuffix(keyPath, suffix, options: options)
    }

    /// The text contains `part`, folded as `options` say. Checked record by record.
    public func contains(_ part: String, options: String.CompareOptions = []) -> Condition<M> {
        .contains(keyPath, part, options: options)
    }

    /// The text equals `text` when both are folded as `options` say (Realm's `==[c]`); an index folded alike
    /// answers it.
    public func equals(_ text: String, options: String.CompareOptions) -> Condition<M> {
        .equals(keyPath, text, options: options)
    }
}

// MARK: - Lists

extension QueryField {
    /// The list holds `element` (Realm's `$0.tags.contains("errand")`); a multi-entry index on it answers it.
    public func contains<E: Equatable & Encodable & Sendable>(_ element: E) -> Condition<M> where V == [E] {
        .contains(keyPath, element)
    }

    /// The set holds `element`; a multi-entry index on it answers it.
    public func contains<E: Hashable & Encodable & Sendable>(_ element: E) -> Condition<M> where V == Set<E> {
        .contains(keyPath, element)
    }

    /// The list holds one of `elements` (Realm's `containsAny(in:)`): the `||` of a `contains` per element.
    public func containsAny<E: Equatable & Encodable & Sendable>(in elements: [E]) -> Condition<M> where V == [E] {
        guard let first = elements.first else {
            let name = Condition<M>.name(keyPath)
            return Condition(
                path: keyPath, description: "\(name) contains any of []", ranges: nil, rank: .max, test: { _ in false })
        }
        return elements.dropFirst().reduce(Condition.contains(keyPath, first)) { $0 || .contains(keyPath, $1) }
    }
}

// MARK: - Bool properties as conditions

/// What a `where { }` closure may give: a ``Condition``, or a `Bool` property (`$0.pinned`), which is one.
public protocol QueryCondition {
    associatedtype Root: Model
    /// The condition this stands for.
    var condition: Condition<Root> { get }
}

extension Condition: QueryCondition {
    public var condition: Condition<M> { self }
}

extension QueryField: QueryCondition where V == Bool {
    /// The property is `true`, as a condition.
    public var condition: Condition<M> { keyPath == true }
}

extension QueryField where V == Bool {

    /// The property is `false`.
    public static prefix func ! (operand: QueryField) -> Condition<M> { operand.keyPath == false }
    public static func && (lhs: QueryField, rhs: Condition<M>) -> Condition<M> { lhs.condition && rhs }
    public static func && (lhs: Condition<M>, rhs: QueryField) -> Condition<M> { lhs && rhs.condition }
    public static func && (lhs: QueryField, rhs: QueryField) -> Condition<M> { lhs.condition && rhs.condition }
    public static func || (lhs: QueryField, rhs: Condition<M>) -> Condition<M> { lhs.condition || rhs }
    public static func || (lhs: Condition<M>, rhs: QueryField) -> Condition<M> { lhs || rhs.condition }
    public static func || (lhs: QueryField, rhs: QueryField) -> Condition<M> { lhs.condition || rhs.condition }
}
