/// A type whose record code the `@Record` macro generated (import `CellarMacros`): it reads and writes Cellar's
/// record format directly, field by field, without `Codable`'s decoder, containers and existentials.
///
/// The bytes are exactly those its `Codable` conformance writes through Cellar, with tags from the same key
/// dictionary, so a record written one way reads the other way, and a model can gain or lose `@Record` at any
/// time without a migration. Write `@Record` rather than conforming by hand: the conformance is only correct
/// when it agrees with `Codable`, which the macro guarantees by refusing what it cannot mirror (a custom
/// `CodingKeys`, `init(from:)` or `encode(to:)`).
public protocol RecordCodable: RecordStorable {
    /// The stored properties' names, as `Codable` keys them, in the order the generated code numbers them.
    static var recordKeys: RecordKeys { get }

    /// Reads the value whose keyed container starts at the reader's position.
    init(record reader: inout RecordReader) throws

    /// Writes the value as a keyed container.
    func write(record writer: inout RecordWriter) throws

    /// The number, in `recordKeys`, of the stored property `keyPath` names; `nil` for anything else (a computed
    /// property, a path into a property). Queries use it to check conditions on record bytes.
    static func recordField(for keyPath: PartialKeyPath<Self>) -> Int?
}

/// A value that generated record code reads and writes directly: the standard scalars, `String`, `Data`, `Date`,
/// `UUID`, `URL`, `Decimal`, optionals, arrays and sets of these, and `@Record` types. Any other `Codable` value
/// in a `@Record` type is read and written through `Codable`, so it keeps working, only slower.
///
/// A conformance must write the same bytes as the type's `Codable` conformance does through Cellar.
public protocol RecordStorable: Codable {
    /// Reads one value at the reader's position and moves past it.
    static func read(from reader: inout RecordReader) throws -> Self
    /// Appends the value to the record.
    func write(to writer: inout RecordWriter) throws
}

extension RecordCodable {
    public static func read(from reader: inout RecordReader) throws -> Self { try Self(record: &reader) }
    public func write(to writer: inout RecordWriter) throws { try write(record: &writer) }
}

/// The stored names of a `@Record` type's properties. Generated code keeps one per type, and stores find each
/// name's tag in their key dictionary through it once, not per record.
public final class RecordKeys: Sendable {
    /// The names, in the generated code's numbering.
    public let names: [String]
    let numbers: [String: Int]

    /// The keys named `names`, numbered in that order.
    public init(_ names: [String]) {
        self.names = names
        var numbers: [String: Int] = [:]
        for (number, name) in names.enumerated() { numbers[name] = number }
        self.numbers = numbers
    }
}

// MARK: - How a model is read and written: the witnesses of `Model`'s underscored requirements

extension Model {
    public static func _readRecord(_ reader: inout RecordReader) throws -> Self {
        try reader.decodeThroughCodable(Self.self)
    }

    public func _writeRecord(_ writer: inout RecordWriter) throws {
        try writer.encodeThroughCodable(self)
    }

    public static func _recordField(for keyPath: PartialKeyPath<Self>) -> Int? { nil }
    public static var _recordKeys: RecordKeys? { nil }
}

// Inlinable, so that a model's witnesses call its generated code directly, not through the protocol's.
extension Model where Self: RecordCodable {
    @inlinable
    public static func _readRecord(_ reader: inout RecordReader) throws -> Self { try Self(record: &reader) }
    @inlinable
    public func _writeRecord(_ writer: inout RecordWriter) throws { try write(record: &writer) }
    public static func _recordField(for keyPath: PartialKeyPath<Self>) -> Int? { recordField(for: keyPath) }
    public static var _recordKeys: RecordKeys? { recordKeys }
}

/// The words of the error for a `@Record` model whose generated code and `Codable` conformance disagree.
enum RecordCodableMismatch {
    static func reason(_ what: String) -> String {
        what + ". A CodingKeys, init(from:) or encode(to:) declared in an extension changes what Codable stores, "
            + "and @Record cannot see it there: move it into the type's body (where @Record refuses it), or remove "
            + "@Record (the type keeps working through Codable)"
    }
}
