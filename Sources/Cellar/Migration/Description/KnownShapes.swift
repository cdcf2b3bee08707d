import Foundation

/// A standard library, Foundation or Cellar type whose `Codable` form Cellar knows, described from its type alone:
/// a collection by its element's shape, a `Link` by its target.
protocol KnownShape {
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape
}

/// A Foundation type whose `Codable` form is Foundation's to define: compared by its type name.
private protocol FoundationValue: KnownShape {}

extension FoundationValue {
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape {
        .opaque(SchemaReflection.Context.name(of: Self.self))
    }
}

extension URLComponents: FoundationValue {}
extension CharacterSet: FoundationValue {}
extension TimeZone: FoundationValue {}
extension Calendar: FoundationValue {}
extension Locale: FoundationValue {}
extension DateComponents: FoundationValue {}
extension IndexSet: FoundationValue {}
extension CollectionDifference: FoundationValue {}

extension Optional: KnownShape {
    /// An optional inside a list, or decoded with `decode` rather than `decodeIfPresent`, has its wrapped value's
    /// shape.
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape {
        context.shape(of: Wrapped.self)
    }
}

/// A list of one element kind.
private protocol KnownList: KnownShape {
    associatedtype Element
}

extension KnownList {
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape {
        .list(context.shape(of: Element.self))
    }
}

extension Array: KnownShape, KnownList {}
extension ContiguousArray: KnownShape, KnownList {}
extension ArraySlice: KnownShape, KnownList {}
extension Set: KnownShape, KnownList {}

extension Dictionary: KnownShape {
    /// What `Dictionary`'s own `Codable` conformance writes: a keyed container for `String` and `Int` keys and keys
    /// that are `CodingKeyRepresentable`, alternating keys and values in a list for any other key.
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape {
        let value = context.shape(of: Value.self)
        if Key.self == String.self || Key.self == Int.self || Key.self is any CodingKeyRepresentable.Type {
            return .dictionary(value)
        }
        return .pairs(key: context.shape(of: Key.self), value: value)
    }
}

/// Ranges are stored as a list of their two bounds.
extension Range: KnownShape {
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape {
        .list(context.shape(of: Bound.self))
    }
}

extension ClosedRange: KnownShape {
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape {
        .list(context.shape(of: Bound.self))
    }
}

extension Link: KnownShape {
    static func describedShape(in context: SchemaReflection.Context) -> ValueShape { .link(Target.storedName) }
}
