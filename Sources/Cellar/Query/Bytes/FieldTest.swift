/// A comparison checked on a record's bytes: the field the compared property is stored in, read on its own and
/// tested, so that a record that does not match is never decoded.
///
/// Only models with generated record code (`@Record`) have them: their key path → field mapping is generated from
/// the same declarations as their reading and writing, so it is right by construction. A plain `Codable` model may
/// store a property under another key, or transform it in `init(from:)`; its conditions are checked on decoded
/// values, as before.
struct FieldTest: Sendable {
    /// Reads the field and tests it: `true` or `false` when the bytes decide, `nil` when they cannot (a required
    /// field missing, a damaged or unexpected value); the record is then decoded and tested as a whole.
    let check: @Sendable (inout RecordReader, inout RecordFieldCursor) -> Bool?

    /// The test of `path` against `test`, when `M` has generated code that stores the property as a field of a
    /// type with built-in or generated record code.
    static func make<M: Model, V>(_ path: PartialKeyPath<M>, test: @escaping @Sendable (V) -> Bool) -> FieldTest? {
        guard M._recordKeys != nil, let field = M._recordField(for: path), let read = FieldValue.reader(V.self) else {
            return nil
        }
        // An optional property is `nil` when its record has no entry for it, as `decodeIfPresent` reads it.
        let whenAbsent = FieldValue.absent(V.self).map(test)
        return FieldTest { reader, fields in
            do {
                guard try reader.seek(field, in: &fields) else { return whenAbsent }
                return test(try read.value(&reader))
            } catch {
                return nil
            }
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

extension Condition.Node {
    /// The predicate checked on a record's bytes: `true` or `false` when every comparison it needs can be read
    /// from the bytes (or the ones that can already decide), `nil` when the record must be decoded to tell.
    func evaluate(_ reader: inout RecordReader, _ fields: inout RecordFieldCursor) -> Bool? {
        switch self {
        case .condition(let comparison):
            return comparison.fieldTest?.check(&reader, &fields)
        case .and(let lhs, let rhs):
            let left = lhs.evaluate(&reader, &fields)
            if left == false { return false }
            let right = rhs.evaluate(&reader, &fields)
            if right == false { return false }
            return left == true && right == true ? true : nil
        case .or(let lhs, let rhs):
            let left = lhs.evaluate(&reader, &fields)
            if left == true { return true }
            let right = rhs.evaluate(&reader, &fields)
            if right == true { return true }
            return left == false && right == false ? false : nil
        case .not(let operand):
            return operand.evaluate(&reader, &fields).map { !$0 }
        }
    }

    /// Whether any comparison of the predicate can be read from bytes.
    var checksBytes: Bool {
        switch self {
        case .condition(let comparison): comparison.fieldTest != nil
        case .and(let lhs, let rhs), .or(let lhs, let rhs): lhs.checksBytes || rhs.checksBytes
        case .not(let operand): operand.checksBytes
        }
    }
}

extension Condition {
    /// Whether the record `bytes` may match: `false` only when its bytes show it does not. `keys` are the model's
    /// generated field names.
    func mayMatch(
        _ bytes: UnsafeRawBufferPointer, keys: RecordKeys, decoder: RecordDecoder, dictionary: KeyDictionary
    ) -> Bool {
        guard bytes.first == RecordFormat.version else { return true }
        return withExtendedLifetime((decoder, dictionary)) {
            var reader = RecordReader(decoder: decoder, dictionary: dictionary, bytes: bytes, offset: 1)
            guard var fields = try? reader.beginFields(of: keys) else { return true }
            return node.evaluate(&reader, &fields) != false
        }
    }
}
