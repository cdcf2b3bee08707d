import Foundation
import LMDB

/// A condition on a model's properties, made from key paths: `\.age >= 3 && \.name == "Taro"`.
///
/// Comparisons on an indexed property become cursor ranges on its index; everything else is checked on each
/// record the query reads. `Condition.matching { ... }` takes any closure, and is always checked record by record.
public struct Condition<M: Model>: Sendable {
    indirect enum Node: Sendable {
        case condition(Comparison<M>)
        case and(Node, Node)
        case or(Node, Node)
        case not(Node)
    }

    let node: Node

    init(_ node: Node) { self.node = node }

    init(
        path: PartialKeyPath<M>?, description: @autoclosure @escaping @Sendable () -> String,
        ranges: Result<[KeyRange], StoreError>?, rank: Int, folding: String.CompareOptions? = nil,
        matchesElements: Bool = false, fieldTest: PendingFieldTest? = nil, search: SearchQuery? = nil,
        test: @escaping @Sendable (M) -> Bool
    ) {
        self.init(
            .condition(
                Comparison(
                    path: path, describe: description, ranges: ranges, rank: rank,
                    folding: folding.flatMap { $0.isEmpty ? nil : $0 }, matchesElements: matchesElements,
                    pendingFieldTest: fieldTest, search: search, test: test)))
    }

    /// A condition on the value of `path`, checked on record bytes where the model's generated code allows;
    /// `equalTo` are the values an equality compares with (`==`, `!=` when `negated`, `in`).
    init<V: Encodable>(
        path: KeyPath<M, V> & Sendable, description: @autoclosure @escaping @Sendable () -> String,
        ranges: Result<[KeyRange], StoreError>?, rank: Int, folding: String.CompareOptions? = nil,
        matchesElements: Bool = false, equalTo values: [V]? = nil, negated: Bool = false,
        valueTest: @escaping @Sendable (V) -> Bool
    ) {
        self.init(
            path: path, description: description(), ranges: ranges, rank: rank, folding: folding,
            matchesElements: matchesElements,
            fieldTest: FieldTest.make(path, equalTo: values, negated: negated, test: valueTest),
            test: Self.test(of: path, valueTest))
    }

    /// `valueTest` on the value at `path`; unconstrained in `V`, so the closure captures no conformance of it.
    private static func test<V>(of path: KeyPath<M, V> & Sendable, _ valueTest: @escaping @Sendable (V) -> Bool)
        -> @Sendable (M) -> Bool
    {
        let reader = PropertyReader(path)
        return { valueTest(reader.read($0)) }
    }

    /// Whether `value` satisfies the predicate.
    func evaluate(_ value: M) -> Bool { node.evaluate(value) }

    /// Both conditions hold. An index answers the part it can; the rest is checked on each record it gives.
    public static func && (lhs: Condition, rhs: Condition) -> Condition { Condition(.and(lhs.node, rhs.node)) }
    /// Either condition holds. Checked record by record; for several values of one property, `.in` uses its index.
    public static func || (lhs: Condition, rhs: Condition) -> Condition { Condition(.or(lhs.node, rhs.node)) }
    /// The condition does not hold. Checked record by record.
    public static prefix func ! (operand: Condition) -> Condition { Condition(.not(operand.node)) }

    /// Any test at all, checked on every record the query reads (a scan, unless another condition uses an index).
    public static func matching(_ test: @escaping @Sendable (M) -> Bool) -> Condition {
        Condition(path: nil, description: "a closure", ranges: nil, rank: .max, test: test)
    }

    /// The property is one of `values`.
    public static func `in`<V: Equatable & Encodable & Sendable>(_ path: KeyPath<M, V> & Sendable, _ values: [V])
        -> Condition
    {
        let ranges = Result { () throws(StoreError) -> [KeyRange] in
            try values.map { (value) throws(StoreError) in KeyRange.equal(to: try conditionKey(value)) }
        }
        return Condition(
            path: path, description: "\(name(path)) in [\(values.map(written).joined(separator: ", "))]",
            ranges: ranges, rank: 1,
            equalTo: values, valueTest: { values.contains($0) })
    }

    /// The property lies in `range` (`3...7`).
    public static func between<V: Comparable & Encodable & Sendable>(
        _ path: KeyPath<M, V> & Sendable, _ range: ClosedRange<V>
    ) -> Condition {
        let ranges = Result { () throws(StoreError) -> [KeyRange] in
            [KeyRange(lower: try conditionKey(range.lowerBound), upper: try conditionKey(range.upperBound).after)]
        }
        return Condition(
            path: path, description: "\(name(path)) in \(written(range.lowerBound))...\(written(range.upperBound))",
            ranges: ranges, rank: 3,
            valueTest: { range.contains($0) })
    }

    /// The property lies in `range` (`3..<7`).
    public static func between<V: Comparable & Encodable & Sendable>(
        _ path: KeyPath<M, V> & Sendable, _ range: Range<V>
    ) -> Condition {
        let ranges = Result { () throws(StoreError) -> [KeyRange] in
            [KeyRange(lower: try conditionKey(range.lowerBound), upper: try conditionKey(range.upperBound))]
        }
        return Condition(
            path: path, description: "\(name(path)) in \(written(range.lowerBound))..<\(written(range.upperBound))",
            ranges: ranges, rank: 3,
            valueTest: { range.contains($0) })
    }

    /// The text starts with `prefix` (compared as Swift compares strings, after Unicode normalisation). With
    /// `options` `.caseInsensitive` or `.diacriticInsensitive` (Realm's `BEGINSWITH[c]`, `[d]`), both are folded
    /// first, and an index declared with the same options answers it.
    public static func hasPrefix(
        _ path: KeyPath<M, String> & Sendable, _ prefix: String, options: String.CompareOptions = []
    ) -> Condition {
        let folding = Index<M>.textFolding(options)
        let folded = prefix.folding(options: folding, locale: nil)
        let ranges = Result { () throws(StoreError) -> [KeyRange] in
            // A string key is its tag, its escaped UTF-8 and a terminator: without the terminator it is a prefix.
            let start = Array(try conditionKey(folded).dropLast())
            return [KeyRange(lower: start, upper: start + [0xFF])]
        }
        let test: @Sendable (String) -> Bool
        if folding.isEmpty {
            test = { (text: String) in text.hasPrefix(prefix) }
        } else {
            test = { (text: String) in text.folding(options: folding, locale: nil).hasPrefix(folded) }
        }
        return Condition(
            path: path, description: "\(name(path)) has prefix \(prefix.debugDescription)\(ignoring(folding))",
            ranges: ranges, rank: 2, folding: folding, valueTest: test)
    }

    /// The text contains `part`; with `options` `.caseInsensitive` or `.diacriticInsensitive` (Realm's
    /// `CONTAINS[c]`, `[d]`), both folded first. Checked record by record.
    public static func contains(
        _ path: KeyPath<M, String> & Sendable, _ part: String, options: String.CompareOptions = []
    ) -> Condition {
        textTest(path, "contains", part, options: options) { $0.contains($1) }
    }

    /// The text ends with `suffix`; with `options` `.caseInsensitive` or `.diacriticInsensitive` (Realm's
    /// `ENDSWITH[c]`, `[d]`), both folded first. Checked record by record.
    public static func hasSuffix(
        _ path: KeyPath<M, String> & Sendable, _ suffix: String, options: String.CompareOptions = []
    ) -> Condition {
        textTest(path, "has suffix", suffix, options: options) { $0.hasSuffix($1) }
    }

    /// A test of the text against `part`, both folded as `options` say, that no index answers.
    private static func textTest(
        _ path: KeyPath<M, String> & Sendable, _ verb: String, _ part: String, options: String.CompareOptions,
        _ matches: @escaping @Sendable (String, String) -> Bool
    ) -> Condition {
        let folding = Index<M>.textFolding(options)
        let folded = part.folding(options: folding, locale: nil)
        let test: @Sendable (String) -> Bool
        if folding.isEmpty {
            test = { (text: String) in matches(text, part) }
        } else {
            test = { (text: String) in matches(text.folding(options: folding, locale: nil), folded) }
        }
        return Condition(
            path: path, description: "\(name(path)) \(verb) \(part.debugDescription)\(ignoring(folding))",
            ranges: nil, rank: .max, valueTest: test)
    }

    /// The list holds `element` (Realm's `ANY tags == "errand"`). A multi-entry index on the list
    /// (`.index(\.tags)`) answers it; otherwise it is checked record by record.
    public static func contains<E: Equatable & Encodable & Sendable>(
        _ path: KeyPath<M, [E]> & Sendable, _ element: E
    ) -> Condition {
        holding(path, element) { $0.contains(element) }
    }

    /// The set holds `element`, answered from a multi-entry index on it (`.index(\.tags)`) when there is one.
    public static func contains<E: Hashable & Encodable & Sendable>(
        _ path: KeyPath<M, Set<E>> & Sendable, _ element: E
    ) -> Condition {
        holding(path, element) { $0.contains(element) }
    }

    /// A collection at `path` holds `element`: the key of `element` in the collection's multi-entry index.
    private static func holding<C: Sendable, E: Encodable & Sendable>(
        _ path: KeyPath<M, C> & Sendable, _ element: E, _ holds: @escaping @Sendable (C) -> Bool
    ) -> Condition where C: Encodable {
        Condition(
            path: path, description: "\(name(path)) contains \(written(element))",
            ranges: Result { () throws(StoreError) -> [KeyRange] in [.equal(to: try conditionKey(element))] },
            rank: 0, matchesElements: true, valueTest: holds)
    }

    /// The text equals `text` when both are folded as `options` say: `.caseInsensitive`, `.diacriticInsensitive`
    /// (Realm's `==[c]`, `[d]`). An index declared with the same options answers it; otherwise it is checked record
    /// by record.
    public static func equals(
        _ path: KeyPath<M, String> & Sendable, _ text: String, options: String.CompareOptions
    ) -> Condition {
        let folding = Index<M>.textFolding(options)
        let folded = text.folding(options: folding, locale: nil)
        let ranges = Result { () throws(StoreError) -> [KeyRange] in [.equal(to: try conditionKey(folded))] }
        return Condition(
            path: path,
            description: "\(name(path)) equals \(text.debugDescription)\(ignoring(folding))",
            ranges: ranges, rank: 0, folding: folding,
            valueTest: { $0.folding(options: folding, locale: nil) == folded })
    }

    /// The text equals `text`, ignoring case: `.equals(path, text, options: .caseInsensitive)`.
    public static func equalsIgnoringCase(_ path: KeyPath<M, String> & Sendable, _ text: String) -> Condition {
        equals(path, text, options: .caseInsensitive)
    }

    /// How `explain()` says a folding: " ignoring case", " ignoring case and diacritics"; nothing for none.
    private static func ignoring(_ folding: String.CompareOptions) -> String {
        let words =
            (folding.contains(.caseInsensitive) ? ["case"] : [])
            + (folding.contains(.diacriticInsensitive) ? ["diacritics"] : [])
        return words.isEmpty ? "" : " ignoring " + words.joined(separator: " and ")
    }

    /// The property's name as `explain()` shows it. A computed property's key path has an address, not a name: it is
    /// told by its kind (`computed Int`).
    static func name(_ path: AnyKeyPath) -> String {
        let name = Index<M>.propertyName(path)
        guard name.contains("<computed"), let open = name.lastIndex(of: "("), let close = name.lastIndex(of: ")"),
            open < close
        else { return name }
        return "computed " + name[name.index(after: open)..<close]
    }

    /// A compared value as the query wrote it: `3` and `nil`, not `Optional(3)`; text in quotes; an enum case as
    /// `.shiba`.
    static func written(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            return mirror.children.first.map { written($0.value) } ?? "nil"
        case .enum where mirror.children.isEmpty:
            return ".\(value)"
        default:
            if let text = value as? String { return text.debugDescription }
            return "\(value)"
        }
    }
}

/// One comparison of a predicate.
struct Comparison<M: Model>: Sendable {
    // Key paths are immutable values; `PartialKeyPath` is just not declared `Sendable`.
    nonisolated(unsafe) let path: PartialKeyPath<M>?
    /// Builds the words for `explain()` only when asked: naming a key path costs more than running a count.
    let describe: @Sendable () -> String
    var text: String { describe() }
    /// The index key ranges that hold every match, when an index on `path` can answer the condition; a failure
    /// when a compared value cannot become a key (NaN, for one), thrown when the query runs.
    let ranges: Result<[KeyRange], StoreError>?
    /// Lower is more selective: equality 0, `in` 1, prefix 2, bounded range 3, open range 4.
    let rank: Int
    /// How the compared text was folded (case, diacritics), for a comparison whose ranges are keys of folded text:
    /// only an index folded alike answers it. `nil` for values compared as they are.
    let folding: String.CompareOptions?
    /// Whether the ranges are keys of one element of a list: only a multi-entry index answers it.
    let matchesElements: Bool
    /// The comparison checked on record bytes, where the model's fields are known when the query is planned.
    let pendingFieldTest: PendingFieldTest?
    var fieldTest: FieldTest? { pendingFieldTest?.resolved }
    /// For a full-text search (`.matches`), what it looks for: a full-text index on `path` answers it (any
    /// property of the model's first full-text index when `path` is `nil`).
    let search: SearchQuery?
    let test: @Sendable (M) -> Bool
}

extension Condition.Node {
    func evaluate(_ value: M) -> Bool {
        switch self {
        case .condition(let condition): condition.test(value)
        case .and(let lhs, let rhs): lhs.evaluate(value) && rhs.evaluate(value)
        case .or(let lhs, let rhs): lhs.evaluate(value) || rhs.evaluate(value)
        case .not(let operand): !operand.evaluate(value)
        }
    }

    /// The conditions that must all hold: a chain of `&&`.
    var conjuncts: [Condition.Node] {
        if case .and(let lhs, let rhs) = self { return lhs.conjuncts + rhs.conjuncts }
        return [self]
    }

    var description: String {
        switch self {
        case .condition(let condition): condition.text
        case .and(let lhs, let rhs): "\(lhs.description) && \(rhs.description)"
        case .or(let lhs, let rhs): "(\(lhs.description) || \(rhs.description))"
        case .not(let operand): "!(\(operand.description))"
        }
    }
}

/// A range of index keys: from `lower` (inclusive) to `upper` (exclusive); `nil` is open.
///
/// Every key component is self-delimiting and no component starts with `0xFF`, so "every key whose first
/// component is `k`" is the range `[k, k ‖ 0xFF)`: one rule serves single and composite indexes alike.
extension KeyRange {
    static func equal(to key: [UInt8]) -> KeyRange { KeyRange(lower: key, upper: key.after) }
}

extension [UInt8] {
    /// The first key after every key that starts with this one.
    var after: [UInt8] { self + [0xFF] }
}

/// The key of a value compared in a predicate.
func conditionKey<V: Encodable>(_ value: V) throws(StoreError) -> [UInt8] {
    do {
        return try KeyEncoding.key(value)
    } catch KeyEncoding.Failure.notANumber {
        throw .invalidKey(
            model: "query", reason: "NaN cannot be compared in a query; test with .matching { $0.x.isNaN }")
    } catch KeyEncoding.Failure.unsupported(let reason) {
        throw .invalidKey(model: "query", reason: reason)
    } catch {
        throw .invalidKey(model: "query", reason: "\(error)")
    }
}

// MARK: - Operators on key paths

/// How a property is compared with a value: the words, the index key ranges that hold every match and their rank.
/// Made here once, for the key-path operators and the parts of a `#Predicate` that are comparisons.
enum ValueComparison {
    case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual

    var symbol: String {
        switch self {
        case .equal: "=="
        case .notEqual: "!="
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        }
    }

    /// See `Comparison.rank`; `.max` when no index answers it.
    var rank: Int {
        switch self {
        case .equal: 0
        case .notEqual: .max
        default: 4
        }
    }

    /// The ranges of index keys that hold every match of a comparison with the value whose key is `key`; `nil` when
    /// an index cannot answer it. For an optional property (`optional`), `nil`, the lowest key, matches no ordering.
    func ranges(key: [UInt8], optional: Bool) -> [KeyRange]? {
        let afterNil = optional ? KeyEncoding.nilComponent.after : nil
        return switch self {
        case .equal: [.equal(to: key)]
        case .notEqual: nil
        case .less: [KeyRange(lower: afterNil, upper: key)]
        case .lessOrEqual: [KeyRange(lower: afterNil, upper: key.after)]
        case .greater: [KeyRange(lower: key.after, upper: nil)]
        case .greaterOrEqual: [KeyRange(lower: key, upper: nil)]
        }
    }

    /// The index ranges of comparing with `value`, or the failure to make its key, thrown when the query runs.
    func ranges<V: Encodable>(of value: V, optional: Bool) -> Result<[KeyRange], StoreError>? {
        guard rank != .max else { return nil }
        return Result { () throws(StoreError) -> [KeyRange] in
            ranges(key: try conditionKey(value), optional: optional) ?? []
        }
    }
}

private func comparison<M: Model, V: Encodable & Sendable>(
    _ path: KeyPath<M, V> & Sendable, _ comparison: ValueComparison, _ value: V,
    test: @escaping @Sendable (V, V) -> Bool
) -> Condition<M> {
    let equality = comparison == .equal || comparison == .notEqual
    return Condition(
        path: path, description: "\(Condition<M>.name(path)) \(comparison.symbol) \(Condition<M>.written(value))",
        ranges: comparison.ranges(of: value, optional: false), rank: comparison.rank,
        equalTo: equality ? [value] : nil, negated: comparison == .notEqual, valueTest: { test($0, value) })
}

/// The property equals `value` (`\.owner == nil` for a missing optional).
public func == <M: Model, V: Equatable & Encodable & Sendable>(lhs: KeyPath<M, V> & Sendable, rhs: V) -> Condition<M> {
    comparison(lhs, .equal, rhs, test: { $0 == $1 })
}

/// The property differs from `value`. Checked record by record.
public func != <M: Model, V: Equatable & Encodable & Sendable>(lhs: KeyPath<M, V> & Sendable, rhs: V) -> Condition<M> {
    comparison(lhs, .notEqual, rhs, test: { $0 != $1 })
}

/// The property is less than `value`: a range of an index on it, when there is one.
public func < <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V> & Sendable, rhs: V) -> Condition<M> {
    comparison(lhs, .less, rhs, test: { $0 < $1 })
}

/// The property is at most `value`: a range of an index on it, when there is one.
public func <= <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V> & Sendable, rhs: V) -> Condition<M> {
    comparison(lhs, .lessOrEqual, rhs, test: { $0 <= $1 })
}

/// The property is greater than `value`: a range of an index on it, when there is one.
public func > <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V> & Sendable, rhs: V) -> Condition<M> {
    comparison(lhs, .greater, rhs, test: { $0 > $1 })
}

/// The property is at least `value`: a range of an index on it, when there is one.
public func >= <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V> & Sendable, rhs: V) -> Condition<M> {
    comparison(lhs, .greaterOrEqual, rhs, test: { $0 >= $1 })
}

/// The `Bool` property is `false`: `.where(!\.pinned)`. An index on it answers it, as it answers `\.pinned == false`.
public prefix func ! <M: Model>(operand: KeyPath<M, Bool> & Sendable) -> Condition<M> { operand == false }

// MARK: - Optional properties

/// An optional property ordered against a value: `nil` matches no ordering.
private func ordering<M: Model, V: Comparable & Encodable & Sendable>(
    _ path: KeyPath<M, V?> & Sendable, _ comparison: ValueComparison, _ value: V,
    test: @escaping @Sendable (V, V) -> Bool
) -> Condition<M> {
    Condition(
        path: path, description: "\(Condition<M>.name(path)) \(comparison.symbol) \(Condition<M>.written(value))",
        ranges: comparison.ranges(of: value, optional: true), rank: comparison.rank,
        valueTest: { $0.map { test($0, value) } ?? false })
}

/// The optional property holds a value less than `value`; `nil` does not match.
public func < <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V?> & Sendable, rhs: V) -> Condition<M> {
    ordering(lhs, .less, rhs, test: { $0 < $1 })
}

/// The optional property holds a value at most `value`; `nil` does not match.
public func <= <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V?> & Sendable, rhs: V) -> Condition<M>
{
    ordering(lhs, .lessOrEqual, rhs, test: { $0 <= $1 })
}

/// The optional property holds a value greater than `value`; `nil` does not match.
public func > <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V?> & Sendable, rhs: V) -> Condition<M> {
    ordering(lhs, .greater, rhs, test: { $0 > $1 })
}

/// The optional property holds a value at least `value`; `nil` does not match.
public func >= <M: Model, V: Comparable & Encodable & Sendable>(lhs: KeyPath<M, V?> & Sendable, rhs: V) -> Condition<M>
{
    ordering(lhs, .greaterOrEqual, rhs, test: { $0 >= $1 })
}
