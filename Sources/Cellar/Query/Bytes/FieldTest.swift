import Foundation
import LMDB

/// A comparison checked on a record's bytes: the field the compared property is stored in, found among the
/// record's entries and tested on its own, so that a record that does not match is never decoded.
///
/// `StoredFields` says which field holds the property: `@Record`'s generated code, or, for a plain `Codable` model,
/// the first record this process saw it write or read, when its fields are its stored properties. A model that
/// stores a property under another key, or codes it some other way, has its conditions checked on decoded values.
///
/// A class: a query's check holds one reference, and calling it per record copies nothing.
final class FieldTest: Sendable {
    /// The compared property's field: its number among the model's record keys.
    let field: Int
    /// For an equality, the compared values in their stored form, when that form is canonical.
    let canonical: CanonicalBytes?
    /// The one compared integer or `Bool` of `canonical`, compared here without a call.
    let scalar: StoredScalar?
    /// Whether the equality is `!=`.
    let negated: Bool
    /// The answer for a stored null: the test on `nil` for an optional property; `nil` (decode and let the decoder
    /// report it) for a required one.
    let whenNull: Bool?
    /// The answer for a record without the field: `whenNull` where such a record holds `nil` (`StoredFields`);
    /// otherwise `nil`, and the record is decoded.
    let whenAbsent: Bool?
    /// Reads the field's value and tests it.
    let readAndTest: @Sendable (inout RecordReader) throws -> Bool

    private init(
        field: Int, canonical: CanonicalBytes?, negated: Bool, whenNull: Bool?, absentIsNil: Bool,
        readAndTest: @escaping @Sendable (inout RecordReader) throws -> Bool
    ) {
        (self.field, self.canonical, self.scalar) = (field, canonical, canonical?.scalar)
        (self.negated, self.whenNull, self.readAndTest) = (negated, whenNull, readAndTest)
        whenAbsent = absentIsNil ? whenNull : nil
    }

    /// The test of `path` against `test`, when `V` is a type whose stored value a record's bytes give. For an
    /// equality (`==`, `!=`, `in`), `equalTo` are the compared values: a field stored in the same canonical form as
    /// one of them is then compared byte for byte.
    static func make<M: Model, V: Encodable>(
        _ path: KeyPath<M, V> & Sendable, equalTo values: [V]? = nil, negated: Bool = false,
        test: @escaping @Sendable (V) -> Bool
    ) -> PendingFieldTest? {
        make(path, canonical: values.flatMap { CanonicalBytes($0) }, negated: negated, test: test)
    }

    // Unconstrained in `V`, so the closures capture no conformance of it (metatypes are not `Sendable` before
    // Swift 6.2); `#Predicate`'s comparisons, whose values' conformances are opened, come here directly.
    static func make<M: Model, V>(
        _ path: KeyPath<M, V> & Sendable, canonical: CanonicalBytes?, negated: Bool,
        test: @escaping @Sendable (V) -> Bool
    ) -> PendingFieldTest? {
        guard let read = FieldValue.reader(V.self) else { return nil }
        return PendingFieldTest {
            // Which field holds the property is known once `StoredFields` knows the model's fields.
            guard let field = StoredFields.field(of: path) else { return nil }
            return FieldTest(
                field: field.number, canonical: canonical, negated: negated,
                // An optional property is `nil` where its record stores null (and, for generated code, where it has
                // no entry), as `decodeIfPresent` reads it.
                whenNull: FieldValue.absent(V.self).map(test), absentIsNil: field.absentIsNil,
                readAndTest: { reader in test(try read.value(&reader)) })
        }
    }

    /// Tests the field whose entries have key `code` in `record`: `true` or `false` when the bytes decide, `nil`
    /// when they cannot (a required field missing, a damaged or unexpected value); the record is then decoded and
    /// tested as a whole, which gives the answer or the error.
    @inline(__always)
    func check(_ record: borrowing RecordEntries, code: UInt64) -> Bool? {
        switch record.locate(code) {
        case .undecided:
            return nil
        case .absent:
            return whenAbsent
        case .value(let offset):
            // A stored null is the optional's `nil`; in a property that is not optional it is damage, which the
            // decoded test must report.
            if let scalar, let equal = scalar.matches(record.bytes, at: offset) { return equal != negated }
            // (Optional chaining reads the class reference without retaining it, where binding it would.)
            if let equal = canonical?.matches(record.bytes, at: offset, nullIsNil: whenNull != nil) {
                return equal != negated
            }
            var reader = record.reader(at: offset)
            return try? readAndTest(&reader)
        }
    }
}

/// Reading a value of a type known only as a generic parameter, when it has record code.
enum FieldValue {
    /// How to read a `V`, when `V` has built-in or generated record code. (The function only reads; a type's
    /// metatype is just not declared `Sendable` before Swift 6.2.)
    static func reader<V>(_ type: V.Type) -> UncheckedSendable<(inout RecordReader) throws -> V>? {
        guard let storable = type as? any RecordStorable.Type, let read = reader(opening: storable, as: V.self)
        else { return nil }
        return UncheckedSendable(read)
    }

    /// `S`'s reading, as a function returning `V` (which `S` is): cast inside, where both are known.
    private static func reader<S: RecordStorable, V>(opening type: S.Type, as: V.Type)
        -> ((inout RecordReader) throws -> V)?
    {
        let read: (inout RecordReader) throws -> S = { reader in try S.read(from: &reader) }
        return read as? (inout RecordReader) throws -> V
    }

    /// The value of an absent entry: `nil` for an optional, nothing otherwise.
    static func absent<V>(_ type: V.Type) -> V? {
        guard let optional = type as? any AbsentValue.Type else { return nil }
        return optional.absentValue as? V
    }
}

/// `Optional`, whose value an absent entry reads as.
protocol AbsentValue {
    static var absentValue: Self { get }
}

extension Optional: AbsentValue {
    static var absentValue: Wrapped? { nil }
}

/// A comparison on record bytes whose field is looked up when a query is planned, not when its condition is made: a
/// plain `Codable` model's fields are learnt from the first record it writes or opening decodes, which may come after
/// the condition was made. Once found, the field stays (a type cannot change while the process runs).
final class PendingFieldTest: Sendable {
    private let make: @Sendable () -> FieldTest?
    private let found = Lock<FieldTest?>(nil)

    init(_ make: @escaping @Sendable () -> FieldTest?) { self.make = make }

    /// The test, when the model's fields are known; `nil` while they are not (the records are decoded instead).
    var resolved: FieldTest? {
        if let known = found.withLock({ $0 }) { return known }
        guard let test = make() else { return nil }
        found.withLock { $0 = test }
        return test
    }
}
