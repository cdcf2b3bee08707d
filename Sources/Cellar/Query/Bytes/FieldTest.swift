import Foundation

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
    /// type with built-in or generated record code. For an equality (`==`, `!=`, `in`), `equalTo` are the compared
    /// values: a field stored in the same canonical form as one of them is then compared byte for byte.
    static func make<M: Model, V: Encodable>(
        _ path: PartialKeyPath<M>, equalTo values: [V]? = nil, negated: Bool = false,
        test: @escaping @Sendable (V) -> Bool
    ) -> FieldTest? {
        make(path, canonical: values.flatMap { CanonicalBytes($0) }, negated: negated, test: test)
    }

    // Unconstrained in `V`, so the closure captures no conformance of it (metatypes are not `Sendable` before
    // Swift 6.2).
    private static func make<M: Model, V>(
        _ path: PartialKeyPath<M>, canonical: CanonicalBytes?, negated: Bool, test: @escaping @Sendable (V) -> Bool
    ) -> FieldTest? {
        guard M._recordKeys != nil, let field = M._recordField(for: path), let read = FieldValue.reader(V.self) else {
            return nil
        }
        // An optional property is `nil` when its record has no entry for it, as `decodeIfPresent` reads it.
        let whenAbsent = FieldValue.absent(V.self).map(test)
        // A stored null is the optional's `nil`; for a property that is not optional it is damage, which the
        // decoded test must report.
        let nullIsNil = whenAbsent != nil
        return FieldTest { reader, fields in
            do {
                guard try reader.seek(field, in: &fields) else { return whenAbsent }
                if let canonical, let equal = canonical.matches(reader.bytes, at: reader.offset, nullIsNil: nullIsNil) {
                    return equal != negated
                }
                return test(try read.value(&reader))
            } catch {
                return nil
            }
        }
    }
}

/// Values compared for equality, as the record format stores them, where the stored form is canonical: equal
/// values have equal bytes and unequal values unequal bytes, as for integers of one width, `Bool`, `nil`, `UUID`
/// and ASCII text. (Not for `Double`, where `0.0 == -0.0`, or non-ASCII text, which Swift compares by canonical
/// equivalence.)
struct CanonicalBytes: Sendable {
    private let values: [[UInt8]]

    init?<V: Encodable>(_ values: [V]) {
        var encoded: [[UInt8]] = []
        for value in values {
            guard let bytes = try? RecordEncoder(dictionary: .empty).encode(value), bytes.count > 1,
                let type = RecordFormat.ValueType(rawValue: bytes[1]), Self.isCanonical(type, bytes[1...])
            else { return nil }
            encoded.append(Array(bytes[1...]))
        }
        self.values = encoded
    }

    /// Whether the value at `offset` equals one of the values; `nil` when its form cannot tell (another integer
    /// width, a non-ASCII text, another type), and the value must be read to compare.
    func matches(_ bytes: UnsafeRawBufferPointer, at offset: Int, nullIsNil: Bool) -> Bool? {
        guard offset < bytes.count, let type = RecordFormat.ValueType(rawValue: bytes[offset]) else { return nil }
        let null = RecordFormat.ValueType.null.rawValue
        if type == .null {
            // `nil` equals only `nil`. (In a property that is not optional, null is damage for the decoder to report.)
            return nullIsNil ? values.contains { $0[0] == null } : nil
        }
        var comparable = false
        for value in values where value[0] == type.rawValue {
            comparable = true
            if bytes.count - offset >= value.count, let start = bytes.baseAddress,
                value.withUnsafeBytes({ $0.baseAddress.map { memcmp(start + offset, $0, value.count) == 0 } ?? false })
            {
                return true
            }
        }
        guard comparable else {
            // Stored in another form (another integer width): unequal for sure only when every compared value is
            // `nil`; otherwise the value must be read.
            return nullIsNil && values.allSatisfy { $0[0] == null } ? false : nil
        }
        // Unequal bytes prove unequal values, except for text that is not ASCII.
        if type == .string {
            var reader = ByteReader(bytes, offset: offset + 1)
            guard let length = try? reader.varint(), let text = try? reader.bytes(Int(clamping: length)),
                text.allSatisfy({ $0 < 0x80 })
            else { return nil }
        }
        return false
    }

    private static func isCanonical(_ type: RecordFormat.ValueType, _ bytes: ArraySlice<UInt8>) -> Bool {
        switch type {
        case .null, .false, .true, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64, .uuid: true
        case .string: bytes.dropFirst().allSatisfy { $0 < 0x80 }
        default: false
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

/// A predicate made ready to check record bytes: built once per query, then run on every record.
typealias BytesCheck = @Sendable (inout RecordReader, inout RecordFieldCursor) -> Bool?

extension Condition.Node {
    /// The predicate as a check of record bytes, giving `true` or `false` when the comparisons it needs can be read
    /// from the bytes (or the ones that can already decide), `nil` when the record must be decoded to tell; `nil`
    /// when no comparison can be read from bytes.
    var bytesCheck: BytesCheck? {
        switch self {
        case .condition(let comparison):
            return comparison.fieldTest?.check
        case .and(let lhs, let rhs):
            let (left, right) = (lhs.bytesCheck, rhs.bytesCheck)
            guard left != nil || right != nil else { return nil }
            return { reader, fields in
                let first = left?(&reader, &fields)
                if first == false { return false }
                let second = right?(&reader, &fields)
                if second == false { return false }
                return first == true && second == true ? true : nil
            }
        case .or(let lhs, let rhs):
            let (left, right) = (lhs.bytesCheck, rhs.bytesCheck)
            guard left != nil || right != nil else { return nil }
            return { reader, fields in
                let first = left?(&reader, &fields)
                if first == true { return true }
                let second = right?(&reader, &fields)
                if second == true { return true }
                return first == false && second == false ? false : nil
            }
        case .not(let operand):
            guard let inner = operand.bytesCheck else { return nil }
            return { reader, fields in inner(&reader, &fields).map { !$0 } }
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

/// Whether a record may match a predicate, from its bytes: `false` only when they show it does not.
struct BytesFilter {
    let check: BytesCheck
    let decoder: RecordDecoder
    let dictionary: KeyDictionary
    /// The model's field table, found once for the whole query.
    let table: FieldTable

    init(check: @escaping BytesCheck, keys: RecordKeys, decoder: RecordDecoder, dictionary: KeyDictionary) {
        (self.check, self.decoder, self.dictionary) = (check, decoder, dictionary)
        table = decoder.fieldTable(for: keys, in: dictionary)
    }

    func mayMatch(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.first == RecordFormat.version else { return true }
        var reader = RecordReader(decoder: decoder, dictionary: dictionary, bytes: bytes, offset: 1)
        guard var fields = try? reader.beginFields(with: table) else { return true }
        return check(&reader, &fields) != false
    }
}
