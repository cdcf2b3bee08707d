import Foundation

/// A standard library or Foundation type whose `Codable` form Cellar knows: schema capture answers it with a real
/// value made through the type's own API and the shape of its stored form, and never runs its `init(from:)`.
///
/// Foundation's decoders validate what they read, and some trap on values they did not write (`URLComponents`,
/// `CharacterSet`); the standard library's collections ask for containers a placeholder cannot answer the way they
/// expect (a `Dictionary` whose keys are not text or integers reads alternating keys and values). Knowing them
/// is both safer and exact.
protocol KnownShape {
    /// A value of the type and the shape its records hold. `isRecursive` is set when the type is already being
    /// captured further out: a container then answers empty, so that the capture ends.
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
}

/// A Foundation type stored as a value Cellar does not look into: compared by its type name, as its `Codable` form
/// is Foundation's to define.
private protocol FoundationValue: KnownShape {
    static var captureValue: Self { get }
}

extension FoundationValue {
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        (captureValue, .opaque(String(describing: Self.self)))
    }
}

extension URLComponents: FoundationValue { static var captureValue: URLComponents { URLComponents() } }
extension CharacterSet: FoundationValue { static var captureValue: CharacterSet { CharacterSet() } }
extension TimeZone: FoundationValue { static var captureValue: TimeZone { .gmt } }
extension Calendar: FoundationValue { static var captureValue: Calendar { Calendar(identifier: .gregorian) } }
extension Locale: FoundationValue { static var captureValue: Locale { Locale(identifier: "en_US_POSIX") } }
extension DateComponents: FoundationValue { static var captureValue: DateComponents { DateComponents() } }
extension IndexSet: FoundationValue { static var captureValue: IndexSet { IndexSet() } }

extension CollectionDifference: KnownShape where ChangeElement: Decodable {
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        // An empty list of changes is always valid; the initializer's `nil` is for inconsistent ones.
        guard let empty = CollectionDifference([Change]()) else {
            throw SchemaCapture.Failure(path: "", type: "CollectionDifference", reason: "it has no empty value")
        }
        return (empty, .opaque("CollectionDifference"))
    }
}

extension Optional: KnownShape where Wrapped: Decodable {
    /// An optional decoded as a value of its own (inside a list, or through `decode` rather than `decodeIfPresent`)
    /// has its wrapped value's shape.
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        if isRecursive { return (Wrapped?.none as Any, .opaque(String(describing: Self.self))) }
        do {
            let (wrapped, shape) = try context.capture(Wrapped.self, path: path)
            return (Wrapped?.some(wrapped) as Any, shape)
        } catch let refused as SchemaCapture.Refused {
            return (Wrapped?.none as Any, refused.shape)
        }
    }
}

/// A list of one element kind: two elements are offered (equal ones), so that code reading the second finds it.
private protocol KnownList: KnownShape {
    associatedtype Element: Decodable
    init(_ elements: [Element])
}

extension KnownList {
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        if isRecursive { return (Self([]), .opaque(String(describing: Self.self))) }
        do {
            let (element, shape) = try context.capture(Element.self, path: path)
            return (Self([element, element]), .list(shape))
        } catch let refused as SchemaCapture.Refused {
            return (Self([]), .list(refused.shape))
        }
    }
}

extension Array: KnownShape, KnownList where Element: Decodable {}
extension ContiguousArray: KnownShape, KnownList where Element: Decodable {}
extension Set: KnownShape, KnownList where Element: Decodable {}

extension Dictionary: KnownShape where Key: Decodable, Value: Decodable {
    /// What `Dictionary`'s own `Codable` conformance writes: a keyed container for `String` and `Int` keys and keys
    /// that are `CodingKeyRepresentable`, alternating keys and values in a list for any other key.
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        if isRecursive { return ([Key: Value]() as Any, .opaque(String(describing: Self.self))) }
        let value = try context.shape(of: Value.self, path: path)
        if Key.self == String.self || Key.self == Int.self || Key.self is any CodingKeyRepresentable.Type {
            return ([Key: Value]() as Any, .dictionary(value))
        }
        return ([Key: Value]() as Any, .pairs(key: try context.shape(of: Key.self, path: path), value: value))
    }
}

/// Ranges are stored as a list of their two bounds. A range holds its bounds inline, so it cannot contain itself
/// without a list, optional or dictionary between, which end the capture.
extension Range: KnownShape where Bound: Decodable {
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        let (bound, shape) = try SchemaCapture.Refused.wrapping(in: ValueShape.list) {
            try context.capture(Bound.self, path: path)
        }
        return (bound..<bound, .list(shape))
    }
}

extension ClosedRange: KnownShape where Bound: Decodable {
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        let (bound, shape) = try SchemaCapture.Refused.wrapping(in: ValueShape.list) {
            try context.capture(Bound.self, path: path)
        }
        return (bound...bound, .list(shape))
    }
}

extension Link: KnownShape {
    static func captured(in context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool) throws
        -> (Any, ValueShape)
    {
        let target = ValueShape.link(Target.storedName)
        let (id, _) = try SchemaCapture.Refused.wrapping(
            in: { _ in target }, { try context.capture(Target.ID.self, path: path) })
        return (Link(id: id), target)
    }
}

extension SchemaCapture.Refused {
    /// Runs `capture`; when it is refused, refuses with the shape `wrap` makes of the refused one, so that a type
    /// that needs its part's value to make its own keeps its shape (a range of bounds that refuse is still a list).
    static func wrapping<T>(in wrap: (ValueShape) -> ValueShape, _ capture: () throws -> T) throws -> T {
        do {
            return try capture()
        } catch let refused as SchemaCapture.Refused {
            throw SchemaCapture.Refused(shape: wrap(refused.shape), failure: refused.failure)
        }
    }
}
