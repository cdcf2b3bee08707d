/// A value Cellar may build when it captures a schema and a type's decoding refuses its placeholder values.
///
/// At each opening, Cellar learns a model's schema by decoding one value from placeholders (`0`, `""`, `false`, one
/// element per array) and noting every key, kind and optional the decoding asks for. Most types decode from
/// placeholders; a raw-value enum whose cases do not include the placeholder uses its first case when it is
/// `CaseIterable`. A type that still refuses (an `init(from:)` that validates, an enum with associated values)
/// conforms to `SchemaSample` and gives any valid value. The schema then compares that type by its name: changes
/// inside it are not detected, so raise `schemaVersion` and migrate by hand when you change it.
///
/// ```swift
/// enum Status: Codable, SchemaSample {
///     case active
///     case banned(reason: String)
///     static var schemaSample: Status { .active }
/// }
/// ```
public protocol SchemaSample: Decodable {
    /// Any valid value of the type.
    static var schemaSample: Self { get }
}
