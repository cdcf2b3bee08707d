/// A value of a type that earlier versions of Cellar used instead of decoding one from placeholder values when they
/// learnt a model's schema.
///
/// Cellar no longer decodes anything it made up: a model's fields come from its stored properties, and its stored
/// records, decoded by the model itself, say whether it still reads them. A conformance changes nothing; remove it.
@available(*, deprecated, message: "Cellar no longer decodes placeholder values at opening: remove the conformance")
public protocol SchemaSample: Decodable {
    /// Any valid value of the type.
    static var schemaSample: Self { get }
}
