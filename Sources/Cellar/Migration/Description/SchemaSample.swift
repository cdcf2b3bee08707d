/// A value Cellar uses for a type when it captures a schema, instead of decoding one from placeholders.
///
/// At each opening, Cellar learns a model's schema by decoding one value of each of your types from placeholders
/// (`"0"`, `0`, `false`, two list elements) and noting every key, kind and optional the decoding asks for. Standard
/// library and Foundation types are never decoded that way, an enum with associated values is offered its first case,
/// and a type that refuses its placeholders is compared by name and judged by the stored records. Conform a type to
/// `SchemaSample` when its `init(from:)` could trap on placeholder values, or when it refuses them inside a struct
/// with its own `CodingKeys`: Cellar then never decodes it at opening and compares it by its name. Changes inside it
/// are found by decoding the stored records when the model's schema or the schema version changes.
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
