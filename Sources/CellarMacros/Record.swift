@_exported import Cellar

/// Generates the reading and writing of Cellar's record format for a model struct (or a struct stored inside
/// one): fields are read straight from the record's bytes and written straight into them, without `Codable`'s
/// decoder, containers and existentials. A condition on a property no index answers is then checked on the
/// record's bytes, so only matching records are decoded.
///
/// ```swift
/// import CellarMacros
///
/// @Record
/// struct Dog: Model {
///     var id: Int64
///     var name: String
///     var age: Int
///     var owner: Int64?
/// }
/// ```
///
/// The records are the ones `Codable` writes, with the same keys and the same bytes: adding or removing `@Record`
/// needs no migration, and a store may hold records written both ways. The type stays `Codable`, and everything
/// that works with a plain `Codable` model works with it. Properties of other `Codable` types (enums, dictionaries,
/// links, structs without `@Record`) are read and written through `Codable`; a stored struct gains the speed-up
/// when it carries `@Record` too.
///
/// What the macro cannot mirror it refuses with an error that says why: a custom `CodingKeys`, `init(from:)` or
/// `encode(to:)`, property wrappers, `lazy` properties, generic types, enums and classes. Such a type keeps working
/// without `@Record`. Properties need no written type (`var done = false` works), and types nested in an enclosing
/// one work as the struct's own code sees them: the generated code never spells a property's type.
@attached(
    extension, conformances: RecordCodable,
    names: named(recordKeys), named(init(record:)), named(write(record:)), named(recordField(for:)))
public macro Record() = #externalMacro(module: "CellarMacrosPlugin", type: "RecordMacro")
