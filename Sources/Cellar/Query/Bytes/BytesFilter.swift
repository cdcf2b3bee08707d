/// A predicate made ready to check record bytes: built once per query, then run on every record. `true` or
/// `false` when the comparisons it needs can be read from the bytes (or the ones that can already decide), `nil`
/// when the record must be decoded to tell.
typealias BytesCheck = (borrowing RecordEntries) -> Bool?

extension Condition.Node {
    /// The predicate as a check of record bytes, with each field's key from `code(field)`; `nil` when no
    /// comparison can be read from bytes.
    func bytesCheck(code: (Int) -> UInt64) -> BytesCheck? {
        switch self {
        case .condition(let comparison):
            guard let test = comparison.fieldTest else { return nil }
            let code = code(test.field)
            return { record in test.check(record, code: code) }
        case .and(let lhs, let rhs):
            switch (lhs.bytesCheck(code: code), rhs.bytesCheck(code: code)) {
            case (nil, nil): return nil
            case (let left?, nil), (nil, let left?): return { record in left(record) == false ? false : nil }
            case (let left?, let right?):
                return { record in
                    let first = left(record)
                    if first == false { return false }
                    let second = right(record)
                    if second == false { return false }
                    return first == true && second == true ? true : nil
                }
            }
        case .or(let lhs, let rhs):
            switch (lhs.bytesCheck(code: code), rhs.bytesCheck(code: code)) {
            case (nil, nil): return nil
            case (let left?, nil), (nil, let left?): return { record in left(record) == true ? true : nil }
            case (let left?, let right?):
                return { record in
                    let first = left(record)
                    if first == true { return true }
                    let second = right(record)
                    if second == true { return true }
                    return first == false && second == false ? false : nil
                }
            }
        case .not(let operand):
            guard let inner = operand.bytesCheck(code: code) else { return nil }
            return { record in inner(record).map { !$0 } }
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
///
/// A class, so that the query's loop holds one reference and copies nothing per record.
final class BytesFilter {
    private let check: BytesCheck
    /// The predicate's one comparison, when it has only one, called without the closure around it.
    private let single: FieldTest?
    private let singleCode: UInt64
    /// The predicate's one comparison, when it is an equality with one integer or `Bool`: the commonest filter,
    /// checked in a loop with everything it needs in registers.
    private let scalar: ScalarEquality?
    private let keyLimit: UInt64
    private let decoder: RecordDecoder
    private let dictionary: KeyDictionary

    private struct ScalarEquality {
        let code: UInt64
        let value: StoredScalar
        let negated: Bool
        /// What a record without the field answers, and one that stores null; `nil` to decode it.
        let whenAbsent: Bool?
        let whenNull: Bool?
    }

    /// The filter of `node` for a model whose record keys are `keys`, with the tags of `dictionary`; `nil` when no
    /// comparison of it can be read from bytes.
    init?<M>(_ node: Condition<M>.Node, keys: RecordKeys, decoder: RecordDecoder, dictionary: KeyDictionary) {
        func code(_ field: Int) -> UInt64 {
            // An entry's key is its tag shifted left. A name the dictionary lacks has no tag: no entry has that
            // key (an odd one never matches), and a record with a newer tag is left to the decoder.
            dictionary.tags[keys.names[field]].map { UInt64($0) << 1 } ?? .max
        }
        guard let check = node.bytesCheck(code: code) else { return nil }
        (self.check, self.decoder, self.dictionary) = (check, decoder, dictionary)
        keyLimit = RecordEntries.keyLimit(of: dictionary)
        if case .condition(let comparison) = node, let test = comparison.fieldTest {
            (single, singleCode) = (test, code(test.field))
            scalar = test.scalar.map {
                ScalarEquality(
                    code: code(test.field), value: $0, negated: test.negated, whenAbsent: test.whenAbsent,
                    whenNull: test.whenNull)
            }
        } else {
            (single, singleCode, scalar) = (nil, 0, nil)
        }
    }

    /// Whether the stored `record` may match: `false` only when its bytes show it does not, and its checksum vouches
    /// for them. The test reads the bytes before the checksum is checked, and a record it turns away is checked then,
    /// so that each record is checked once (a kept one by its decoding), and a damaged record reaches the decoder,
    /// which says so, instead of vanishing from the results.
    @inline(__always)
    func mayMatch(_ record: UnsafeRawBufferPointer) -> Bool {
        guard let body = RecordFormat.uncheckedBody(of: record) else { return true }
        return test(body) || RecordFormat.checkedBody(of: record) == nil
    }

    private func test(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if let scalar {
            guard let (start, end) = RecordEntries.container(of: bytes) else { return true }
            switch RecordEntries.locate(scalar.code, in: bytes, from: start, to: end, keyLimit: keyLimit) {
            case .undecided:
                return true
            case .absent:
                return scalar.whenAbsent != false
            case .value(let offset):
                if let equal = scalar.value.matches(bytes, at: offset) { return equal != scalar.negated }
                // A stored null is an optional's `nil`, as an absent entry is. (In a property that is not optional
                // it is damage; that, and another width, are left to the general test.)
                if let null = scalar.whenNull, bytes[offset] == RecordFormat.ValueType.null.rawValue {
                    return null
                }
            }
        }
        guard
            let record = RecordEntries(bytes, decoder: decoder, dictionary: dictionary, keyLimit: keyLimit)
        else { return true }
        // (Optional chaining calls the test without retaining it.)
        if single != nil { return single?.check(record, code: singleCode) != false }
        return check(record) != false
    }
}
