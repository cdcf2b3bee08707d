import Foundation
import LMDB

extension Condition {
    /// SwiftData's `#Predicate`, as a condition: `.where(#Predicate<Note> { $0.pinned && $0.wordCount > 3 })`.
    ///
    /// Each part the key-path form can say becomes that condition, which an index may answer: comparisons of a
    /// property (or a property of a struct it holds) with a value, `==`/`!=` with `nil`, `&&`, `||`, `!`, a `Bool`
    /// property, `starts(with:)` and `contains(_:)` on text, `contains(_:)` on a list, and a list of values'
    /// `contains` of a property (`[1, 2].contains($0.age)`, which is `in`). Any other part (arithmetic, a method
    /// call, a closure) is evaluated by Foundation on each decoded record the rest of the query reads, and
    /// `explain()` names it. A part that throws, as a force unwrap of `nil` does, does not match.
    public init(_ predicate: Predicate<M>) {
        self = PredicateTranslation(variable: predicate.variable).condition(of: predicate.expression)
    }
}

extension Query {
    /// Keeps the records that match a Foundation `Predicate`, as SwiftData's `#Predicate` writes it: the parts that
    /// a key-path condition can say are answered as that condition (by an index where there is one), the rest is
    /// evaluated on each decoded record. See ``Condition/init(_:)``.
    public func `where`(_ predicate: Predicate<M>) -> Query { self.where(Condition(predicate)) }
}

/// Translates a predicate's expression tree, node by node, into conditions.
struct PredicateTranslation<M: Model>: Sendable {
    let variable: PredicateExpressions.Variable<M>

    /// The condition that `expression` states; a part that cannot be said is evaluated on decoded records.
    func condition(of expression: any PredicateExpression<Bool>) -> Condition<M> {
        if let node = expression as? any TranslatablePredicateNode, let condition = node.condition(in: self) {
            return condition
        }
        if let path = keyPath(of: expression) as? KeyPath<M, Bool> {
            return sendableKeyPath(path) == true
        }
        return evaluated(expression)
    }

    /// `expression` as Foundation evaluates it, on each decoded record.
    func evaluated(_ expression: any PredicateExpression<Bool>) -> Condition<M> {
        let outline = Self.outline(of: type(of: expression))
        return Condition(
            path: nil, description: "the #Predicate's \(outline) expression", ranges: nil, rank: .max,
            test: evaluation(of: expression))
    }

    /// An expression's kind and its operands' kinds, for `explain()`: `Comparison(Arithmetic, Value)`.
    static func outline(of type: Any.Type) -> String {
        let full = String(describing: type).replacingOccurrences(of: "PredicateExpressions.", with: "")
        guard let open = full.firstIndex(of: "<") else { return full }
        // The operands are the top-level generic arguments, each named without its own arguments.
        var operands: [String] = []
        var depth = 0
        var current = ""
        for character in full[full.index(after: open)...] {
            switch character {
            case "<":
                depth += 1
            case ">":
                depth -= 1
            case "," where depth == 0:
                operands.append(current)
                current = ""
            default:
                if depth == 0, character != " " { current.append(character) }
            }
        }
        operands.append(current)
        return full[..<open] + "(" + operands.filter { !$0.isEmpty }.joined(separator: ", ") + ")"
    }

    /// Foundation's evaluation of `expression` on a record; a part that throws (a force unwrap of `nil`) is `false`.
    func evaluation(of expression: any PredicateExpression<Bool>) -> @Sendable (M) -> Bool {
        // The expression is part of a `Predicate`, which is `Sendable`; its parts' types just do not all say so.
        nonisolated(unsafe) let part = expression
        let variable = self.variable
        return { value in (try? part.evaluate(PredicateBindings((variable, value)))) ?? false }
    }

    /// The key path from the record that `expression` reads (`$0.address.city` is `\.address.city`); `nil` when it
    /// reads anything else.
    func keyPath(of expression: Any) -> AnyKeyPath? {
        if let variable = expression as? PredicateExpressions.Variable<M> {
            return variable.key == self.variable.key ? \M.self : nil
        }
        // A step's root is another expression, down to the record's variable; any other root is not the record.
        guard let step = expression as? any PredicateKeyPathNode, let root = keyPath(of: step.rootExpression) else {
            return nil
        }
        return root.appending(path: step.path)
    }
}

/// A node of a predicate that becomes a condition of its own (`&&`, a comparison, `starts(with:)`).
protocol TranslatablePredicateNode {
    /// The condition, or `nil` when its operands are not a property and a value.
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>?
}

/// A predicate's step from a value to one of its properties.
protocol PredicateKeyPathNode {
    var rootExpression: Any { get }
    var path: AnyKeyPath { get }
}

/// A predicate's constant.
protocol PredicateValueNode {
    /// What an index can do for comparing the property at `path` with this value as `comparison` says: the words
    /// and key ranges the key-path form has; `nil` when the property's type is not this value's.
    func plan<M: Model>(comparing path: AnyKeyPath, _ comparison: PredicateComparison, in model: M.Type)
        -> PredicatePart?
}

/// A comparison of a predicate as a condition sees it, without the value's type: the test itself stays Foundation's
/// evaluation of the predicate's node. (A condition's own tests capture the value's type, which a cast from a
/// predicate cannot show `Sendable`.)
struct PredicatePart {
    let description: String
    let ranges: Result<[KeyRange], StoreError>?
    let rank: Int
    var matchesElements = false
    /// The comparison checked on record bytes, as the key-path form's is, where the model's fields are known.
    var fieldTest: PendingFieldTest?
}

/// The comparisons a predicate's constant takes part in, the property on the left.
enum PredicateComparison {
    case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual, containsElement, isIn

    /// The comparison with its operands swapped (`3 < $0.age` is `$0.age > 3`); `nil` where there is none.
    var swapped: PredicateComparison? {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        case .containsElement: .isIn
        case .isIn: nil
        }
    }

    init(_ operator: PredicateExpressions.ComparisonOperator) {
        switch `operator` {
        case .lessThan: self = .less
        case .lessThanOrEqual: self = .lessOrEqual
        case .greaterThan: self = .greater
        case .greaterThanOrEqual: self = .greaterOrEqual
        }
    }
}

extension PredicateTranslation {
    /// The condition of `node`, a comparison between `lhs` and `rhs`: a property and a value, in either order. Its
    /// index ranges and words are the key-path form's; its test is Foundation's evaluation of `node`.
    func comparison(
        _ lhs: Any, _ rhs: Any, _ comparison: PredicateComparison, node: any PredicateExpression<Bool>
    ) -> Condition<M>? {
        var found: (AnyKeyPath, PredicatePart)?
        if let path = keyPath(of: lhs), let value = rhs as? any PredicateValueNode,
            let part = value.plan(comparing: path, comparison, in: M.self)
        {
            found = (path, part)
        } else if let path = keyPath(of: rhs), let value = lhs as? any PredicateValueNode,
            let swapped = comparison.swapped, let part = value.plan(comparing: path, swapped, in: M.self)
        {
            found = (path, part)
        }
        guard let (path, part) = found, let partial = path as? PartialKeyPath<M> else { return nil }
        return Condition(
            path: partial, description: part.description, ranges: part.ranges, rank: part.rank,
            matchesElements: part.matchesElements, fieldTest: part.fieldTest, test: evaluation(of: node))
    }
}

// MARK: - Nodes

extension PredicateExpressions.KeyPath: PredicateKeyPathNode {
    var rootExpression: Any { root }
    var path: AnyKeyPath { keyPath }
}

extension PredicateExpressions.Conjunction: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        translation.condition(of: lhs) && translation.condition(of: rhs)
    }
}

extension PredicateExpressions.Disjunction: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        translation.condition(of: lhs) || translation.condition(of: rhs)
    }
}

extension PredicateExpressions.Negation: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        // `!$0.pinned` is `\.pinned == false`, which an index on it answers, as the key-path form's `!\.pinned`.
        if let path = translation.keyPath(of: wrapped) as? KeyPath<M, Bool> { return sendableKeyPath(path) == false }
        return !translation.condition(of: wrapped)
    }
}

extension PredicateExpressions.Equal: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        translation.comparison(lhs, rhs, .equal, node: self)
    }
}

extension PredicateExpressions.NotEqual: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        translation.comparison(lhs, rhs, .notEqual, node: self)
    }
}

extension PredicateExpressions.Comparison: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        translation.comparison(lhs, rhs, PredicateComparison(op), node: self)
    }
}

extension PredicateExpressions.SequenceStartsWith: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        guard let path = translation.keyPath(of: base) as? KeyPath<M, String>,
            let text = (prefix as? PredicateExpressions.Value<String>)?.value
        else { return nil }
        return .hasPrefix(sendableKeyPath(path), text)
    }
}

extension PredicateExpressions.CollectionContainsCollection: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        guard let path = translation.keyPath(of: base) as? KeyPath<M, String>,
            let text = (other as? PredicateExpressions.Value<String>)?.value
        else { return nil }
        return .contains(sendableKeyPath(path), text)
    }
}

extension PredicateExpressions.SequenceContains: TranslatablePredicateNode {
    func condition<M: Model>(in translation: PredicateTranslation<M>) -> Condition<M>? {
        translation.comparison(sequence, element, .containsElement, node: self)
    }
}

extension PredicateExpressions.Value: PredicateValueNode {
    func plan<M: Model>(comparing path: AnyKeyPath, _ comparison: PredicateComparison, in model: M.Type)
        -> PredicatePart?
    {
        switch comparison {
        case .equal: return compared(path, .equal, model)
        case .notEqual: return compared(path, .notEqual, model)
        case .less: return compared(path, .less, model)
        case .lessOrEqual: return compared(path, .lessOrEqual, model)
        case .greater: return compared(path, .greater, model)
        case .greaterOrEqual: return compared(path, .greaterOrEqual, model)
        case .containsElement:
            guard let element = value as? any Encodable else { return nil }
            return elementOf(element, path: path, model)
        case .isIn:
            guard let values = value as? any Sequence else { return nil }
            return among(values, path: path, model)
        }
    }

    /// A comparison with a property of `Output`'s type, or of its optional (a `#Predicate` compares an optional
    /// property with a plain value through a cast).
    private func compared<M: Model>(_ path: AnyKeyPath, _ comparison: ValueComparison, _: M.Type) -> PredicatePart? {
        guard let value = value as? any Encodable else { return nil }
        let optional: Bool
        if path is KeyPath<M, Output> {
            optional = false
        } else if path is KeyPath<M, Output?> {
            optional = true
        } else {
            return nil
        }
        var part = PredicatePart(
            description: "\(Condition<M>.name(path)) \(comparison.symbol) \(Condition<M>.written(value))",
            ranges: comparison.ranges(of: value, optional: optional), rank: comparison.rank)
        if let path = path as? KeyPath<M, Output> { part.fieldTest = fieldTest(path, comparison, value) }
        return part
    }

    /// The key-path form's test on record bytes, for a property of `Output`'s own type: the same comparison,
    /// opened on the value's `Equatable` or `Comparable` conformance.
    private func fieldTest<M: Model>(_ path: KeyPath<M, Output>, _ comparison: ValueComparison, _ value: any Encodable)
        -> PendingFieldTest?
    {
        let test: (@Sendable (Output) -> Bool)?
        switch comparison {
        case .equal, .notEqual:
            test = (self.value as? any Equatable).flatMap { Self.equality($0, negated: comparison == .notEqual) }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            test = (self.value as? any Comparable).flatMap { Self.ordering($0, comparison) }
        }
        guard let test else { return nil }
        let equality = comparison == .equal || comparison == .notEqual
        return FieldTest.make(
            sendableKeyPath(path), canonical: equality ? CanonicalBytes.of(value) : nil,
            negated: comparison == .notEqual, test: test)
    }

    private static func equality<E: Equatable>(_ value: E, negated: Bool) -> (@Sendable (Output) -> Bool)? {
        // Built only where the value is of the property's own type: the cast below never fails.
        guard E.self == Output.self else { return nil }
        return sendable { ($0 as? E).map { ($0 == value) != negated } ?? false }
    }

    private static func ordering<E: Comparable>(_ value: E, _ comparison: ValueComparison)
        -> (@Sendable (Output) -> Bool)?
    {
        guard E.self == Output.self else { return nil }
        return sendable { stored in
            guard let stored = stored as? E else { return false }
            switch comparison {
            case .less: return stored < value
            case .lessOrEqual: return stored <= value
            case .greater: return stored > value
            default: return stored >= value
            }
        }
    }

    /// `$0.tags.contains(element)`: the key of `element` in the list's multi-entry index.
    private func elementOf<M: Model, E: Encodable>(_ element: E, path: AnyKeyPath, _: M.Type) -> PredicatePart? {
        var holds = path is KeyPath<M, [E]>
        if !holds, let hashable = element as? any Hashable & Encodable {
            holds = isSet(of: hashable, path: path, M.self)
        }
        guard holds else { return nil }
        return PredicatePart(
            description: "\(Condition<M>.name(path)) contains \(Condition<M>.written(element))",
            ranges: ValueComparison.equal.ranges(of: element, optional: false), rank: 0, matchesElements: true,
            fieldTest: Self.containment(element, path: path, M.self))
    }

    /// The key-path form's test on record bytes of a list or a set holding `element`.
    private static func containment<M: Model>(_ element: Any, path: AnyKeyPath, _: M.Type) -> PendingFieldTest? {
        if let element = element as? any Hashable, let test = inSet(element, path: path, M.self) { return test }
        guard let element = element as? any Equatable else { return nil }
        return inList(element, path: path, M.self)
    }

    private static func inList<M: Model, E: Equatable>(_ element: E, path: AnyKeyPath, _: M.Type)
        -> PendingFieldTest?
    {
        guard let path = path as? KeyPath<M, [E]> else { return nil }
        return FieldTest.make(
            sendableKeyPath(path), canonical: nil, negated: false, test: sendable { $0.contains(element) })
    }

    private static func inSet<M: Model, E: Hashable>(_ element: E, path: AnyKeyPath, _: M.Type)
        -> PendingFieldTest?
    {
        guard let path = path as? KeyPath<M, Set<E>> else { return nil }
        return FieldTest.make(
            sendableKeyPath(path), canonical: nil, negated: false, test: sendable { $0.contains(element) })
    }

    private func isSet<M: Model, E: Hashable & Encodable>(of _: E, path: AnyKeyPath, _: M.Type) -> Bool {
        path is KeyPath<M, Set<E>>
    }

    /// `[1, 4].contains($0.age)`: `in`, one key each.
    private func among<M: Model, S: Sequence>(_ values: S, path: AnyKeyPath, _: M.Type) -> PredicatePart? {
        let values = Array(values)
        let keys = values.compactMap { $0 as? any Encodable }
        guard path is KeyPath<M, S.Element>, keys.count == values.count else { return nil }
        let ranges = Result { () throws(StoreError) -> [KeyRange] in
            try keys.map { (value) throws(StoreError) in KeyRange.equal(to: try conditionKey(value)) }
        }
        return PredicatePart(
            description: "\(Condition<M>.name(path)) in [\(values.map(Condition<M>.written).joined(separator: ", "))]",
            ranges: ranges, rank: 1)
    }
}

extension PredicateExpressions.NilLiteral: PredicateValueNode {
    /// `$0.nick == nil` and `!= nil`; no other comparison takes `nil`.
    func plan<M: Model>(comparing path: AnyKeyPath, _ comparison: PredicateComparison, in model: M.Type)
        -> PredicatePart?
    {
        guard comparison == .equal || comparison == .notEqual, let typed = path as? KeyPath<M, Wrapped?> else {
            return nil
        }
        let kind: ValueComparison = comparison == .equal ? .equal : .notEqual
        let negated = kind == .notEqual
        return PredicatePart(
            description: "\(Condition<M>.name(path)) \(kind.symbol) nil",
            ranges: kind.ranges(key: KeyEncoding.nilComponent, optional: false).map { Result.success($0) },
            rank: kind.rank,
            // (`nil` is stored alike whatever the optional's type.)
            fieldTest: FieldTest.make(
                sendableKeyPath(typed), canonical: CanonicalBytes.of(Int?.none), negated: negated,
                test: { ($0 == nil) != negated }))
    }
}

/// A comparison of a predicate's value, as a condition's test: it only reads the values it is given, and what it
/// captures (the predicate's value and its type) is `Sendable`, as a predicate's values are, which the casts that
/// opened its conformances cannot show.
private func sendable<V>(_ test: @escaping (V) -> Bool) -> @Sendable (V) -> Bool {
    let boxed = UncheckedSendable(test)
    return { boxed.value($0) }
}
