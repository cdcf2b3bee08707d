import Foundation

/// Decodes a record written by `RecordEncoder`, reading straight from the bytes it is given (an LMDB page or a
/// buffer) and copying only strings and data.
///
/// The bytes are untrusted: every read is bounds-checked, lengths and counts are checked against what is left,
/// and nesting is limited, so damaged input is a thrown `DecodingError`, never a crash.
final class RecordDecoder {
    /// The decoder's mutable state lives behind a pointer it owns: class `var`s would pay Swift's dynamic
    /// exclusivity check on every access, which profiling showed to be a tenth of the decoding time.
    private struct State {
        var bytes = UnsafeRawBufferPointer(start: nil, count: 0)
        var dictionary = KeyDictionary.empty
        /// Where the value handed to the next `init(from:)` starts.
        var position = 0
        /// Keys of the values being decoded, outermost first; read only to report an error.
        var path: [any CodingKey] = []
        /// Each keyed container's next expected entry: synthesized `init(from:)` asks for keys in the order
        /// they were written, so trying that entry first finds almost every key without a search.
        var cursors: [Int] = []
        /// Set while decoding, so a decoder is never reused from inside its own work.
        var busy = false
    }

    private let state: UnsafeMutablePointer<State>

    private var bytes: UnsafeRawBufferPointer { state.pointee.bytes }
    private var dictionary: KeyDictionary { state.pointee.dictionary }
    private var position: Int { state.pointee.position }
    private var path: [any CodingKey] { state.pointee.path }

    fileprivate func cursor(_ slot: Int) -> Int { state.pointee.cursors[slot] }
    fileprivate func setCursor(_ slot: Int, to offset: Int) { state.pointee.cursors[slot] = offset }
    fileprivate func addCursor(at offset: Int) -> Int {
        state.pointee.cursors.append(offset)
        return state.pointee.cursors.count - 1
    }

    /// A tag the key dictionary does not have yet: another writer added it. The caller reloads the dictionary.
    struct UnknownKeyTag: Error {}

    /// A decoder to reuse for many records: it keeps its buffers between them.
    init() {
        state = .allocate(capacity: 1)
        state.initialize(to: State())
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Decodes a whole record with a decoder made for it.
    static func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, dictionary: KeyDictionary
    ) throws -> T {
        try RecordDecoder().decode(type, from: bytes, dictionary: dictionary)
    }

    /// Decodes a whole record, reusing this decoder's buffers.
    func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, dictionary: KeyDictionary
    ) throws -> T {
        guard !state.pointee.busy else { return try Self.decode(type, from: bytes, dictionary: dictionary) }
        guard bytes.first == RecordFormat.version else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [],
                    debugDescription: "the record does not start with format version \(RecordFormat.version)"))
        }
        state.pointee.busy = true
        state.pointee.bytes = bytes
        state.pointee.dictionary = dictionary
        state.pointee.position = 0
        state.pointee.path.removeAll(keepingCapacity: true)
        state.pointee.cursors.removeAll(keepingCapacity: true)
        defer {
            // Never keep a pointer into a page past the call.
            state.pointee.bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            state.pointee.busy = false
        }
        return try decodeValue(type, at: 1, key: noKey)
    }

    // MARK: Values

    fileprivate func decodeValue<T: Decodable, K: CodingKey>(_ type: T.Type, at offset: Int, key: K) throws -> T {
        if T.self == Date.self {
            let seconds = try double(at: offset, type: .date, key: key)
            return unsafeBitCast(Date(timeIntervalSinceReferenceDate: seconds), to: T.self)
        } else if T.self == Data.self {
            return unsafeBitCast(Data(try payload(at: offset, type: .bytes, key: key)), to: T.self)
        } else if T.self == UUID.self {
            var reader = try reader(at: offset, expecting: .uuid, key: key)
            let raw = try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in try reader.bytes(16) }
            return unsafeBitCast(UUID(uuid: raw.loadUnaligned(as: uuid_t.self)), to: T.self)
        } else if T.self == URL.self {
            let text = try string(at: offset, type: .url, key: key)
            guard let url = URL(string: text) else { throw corrupted(key, "\"\(text)\" is not a valid URL") }
            return unsafeBitCast(url, to: T.self)
        } else if T.self == Decimal.self {
            let text = try string(at: offset, type: .decimal, key: key)
            guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
                throw corrupted(key, "\"\(text)\" is not a valid Decimal")
            }
            return unsafeBitCast(decimal, to: T.self)
        }
        let keyed = K.self != NoKey.self
        if keyed { state.pointee.path.append(key) }
        guard path.count < RecordFormat.maximumDepth else { throw corrupted(noKey, "the record is nested too deeply") }
        let outer = position
        state.pointee.position = offset
        defer {
            state.pointee.position = outer
            if keyed { state.pointee.path.removeLast() }
        }
        return try T(from: self)
    }

    // MARK: Scalars

    private func type<K: CodingKey>(at offset: Int, key: K) throws -> RecordFormat.ValueType {
        guard offset < bytes.count, let type = RecordFormat.ValueType(rawValue: bytes[offset]) else {
            throw corrupted(key, "the record is truncated or has an unknown value type")
        }
        return type
    }

    /// A reader just after the type byte at `offset`, which must be `expected`.
    private func reader<K: CodingKey>(
        at offset: Int, expecting expected: RecordFormat.ValueType, key: K
    ) throws -> ByteReader {
        let found = try type(at: offset, key: key)
        guard found == expected else { throw mismatch(expected, found: found, key: key) }
        return ByteReader(bytes, offset: offset + 1)
    }

    private func readOrThrow<R, K: CodingKey>(
        _ key: K, _ body: () throws(ByteReader.OutOfBounds) -> R
    ) throws -> R {
        do { return try body() } catch { throw corrupted(key, "the record ends inside a value") }
    }

    fileprivate func isNull<K: CodingKey>(at offset: Int, key: K) throws -> Bool {
        try type(at: offset, key: key) == .null
    }

    fileprivate func bool<K: CodingKey>(at offset: Int, key: K) throws -> Bool {
        switch try type(at: offset, key: key) {
        case .true: return true
        case .false: return false
        case let found: throw mismatch(.true, found: found, key: key)
        }
    }

    /// Any stored integer width converts to any other when the value fits, so widening a property keeps
    /// old records readable.
    @inline(__always)
    fileprivate func integer<T: FixedWidthInteger, K: CodingKey>(_: T.Type, at offset: Int, key: K) throws -> T {
        let found = try type(at: offset, key: key)
        var reader = ByteReader(bytes, offset: offset + 1)
        let value: T?
        do {
            switch found {
            case .int8: value = T(exactly: Int8(bitPattern: try reader.byte()))
            case .int16: value = T(exactly: try reader.fixed(Int16.self))
            case .int32: value = T(exactly: try reader.fixed(Int32.self))
            case .int64: value = T(exactly: try reader.fixed(Int64.self))
            case .uint8: value = T(exactly: try reader.byte())
            case .uint16: value = T(exactly: try reader.fixed(UInt16.self))
            case .uint32: value = T(exactly: try reader.fixed(UInt32.self))
            case .uint64: value = T(exactly: try reader.fixed(UInt64.self))
            default: throw mismatch(.int64, found: found, key: key)
            }
        } catch is ByteReader.OutOfBounds {
            throw corrupted(key, "the record ends inside a value")
        }
        guard let value else { throw corrupted(key, "the stored number does not fit in \(T.self)") }
        return value
    }

    fileprivate func double<K: CodingKey>(
        at offset: Int, type expected: RecordFormat.ValueType = .double, key: K
    ) throws -> Double {
        let found = try type(at: offset, key: key)
        var reader = ByteReader(bytes, offset: offset + 1)
        if found == expected {
            return Double(
                bitPattern: try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in
                    try reader.fixed(UInt64.self)
                })
        }
        if found == .float, expected == .double {
            return Double(
                Float(
                    bitPattern: try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in
                        try reader.fixed(UInt32.self)
                    }))
        }
        throw mismatch(expected, found: found, key: key)
    }

    fileprivate func float<K: CodingKey>(at offset: Int, key: K) throws -> Float {
        let found = try type(at: offset, key: key)
        var reader = ByteReader(bytes, offset: offset + 1)
        switch found {
        case .float:
            return try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in
                Float(bitPattern: try reader.fixed(UInt32.self))
            }
        case .double:
            let value = try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in
                Double(bitPattern: try reader.fixed(UInt64.self))
            }
            guard let narrowed = Float(exactly: value) ?? (value.isNaN ? Float.nan : nil) else {
                throw corrupted(key, "the stored number \(value) does not fit in Float")
            }
            return narrowed
        default: throw mismatch(.float, found: found, key: key)
        }
    }

    private func payload<K: CodingKey>(
        at offset: Int, type expected: RecordFormat.ValueType, key: K
    ) throws -> UnsafeRawBufferPointer {
        var reader = try reader(at: offset, expecting: expected, key: key)
        return try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in
            try reader.bytes(Int(clamping: try reader.varint()))
        }
    }

    fileprivate func string<K: CodingKey>(
        at offset: Int, type: RecordFormat.ValueType = .string, key: K
    ) throws -> String {
        let raw = try payload(at: offset, type: type, key: key)
        // ASCII needs no validation, and the generic validating initialiser costs more than the decode.
        if raw.allSatisfy({ $0 < 0x80 }) { return String(decoding: raw, as: UTF8.self) }
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw corrupted(key, "the stored text is not valid UTF-8")
        }
        return string
    }

    /// The bounds of the container at `offset`: where its entries start and end, and how many there are.
    fileprivate func container<K: CodingKey>(
        at offset: Int, type expected: RecordFormat.ValueType, key: K
    ) throws -> (start: Int, end: Int, count: Int) {
        if expected == .keyed, try type(at: offset, key: key) == .null {
            // A value that wrote nothing, read back by a type that asks for a container.
            return (offset, offset, 0)
        }
        var reader = try reader(at: offset, expecting: expected, key: key)
        let (length, count) = try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in
            (Int(try reader.fixed(UInt32.self)), Int(try reader.fixed(UInt32.self)))
        }
        let start = reader.offset
        guard length <= bytes.count - start, count <= length else {
            throw corrupted(key, "a container's length or count runs past the end of the record")
        }
        return (start, start + length, count)
    }

    // MARK: Keys

    /// A parsed entry key and where the entry's value starts.
    fileprivate enum EntryKey {
        case tag(UInt32)
        case inline(UnsafeRawBufferPointer)
        case integer(Int)
    }

    fileprivate func entry<K: CodingKey>(at offset: Int, end: Int, key: K) throws -> (EntryKey, value: Int) {
        var reader = ByteReader(bytes, offset: offset, end: end)
        return try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in
            let code = try reader.varint()
            let entryKey: EntryKey
            if code & 1 == 0 {
                entryKey = .tag(UInt32(truncatingIfNeeded: code >> 1))
            } else if code & 3 == 1 {
                entryKey = .inline(try reader.bytes(Int(clamping: code >> 2)))
            } else {
                let zigzag = try reader.varint()
                entryKey = .integer(Int(truncatingIfNeeded: Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))))
            }
            return (entryKey, reader.offset)
        }
    }

    fileprivate func valueEnd<K: CodingKey>(at offset: Int, end: Int, key: K) throws -> Int {
        var reader = ByteReader(bytes, offset: offset, end: end)
        try readOrThrow(key) { () throws(ByteReader.OutOfBounds) in try reader.skipValue() }
        return reader.offset
    }

    fileprivate func name(of tag: UInt32) throws -> String {
        guard Int(tag) < dictionary.names.count else { throw UnknownKeyTag() }
        return dictionary.names[Int(tag)]
    }

    fileprivate func matches(_ entryKey: EntryKey, name: String, intValue: Int?) throws -> Bool {
        switch entryKey {
        case .tag(let tag): return try self.name(of: tag) == name
        case .inline(let raw): return raw.elementsEqual(name.utf8)
        case .integer(let int): return intValue == int
        }
    }

    // MARK: Errors

    fileprivate func codingPath<K: CodingKey>(_ key: K) -> [any CodingKey] {
        K.self == NoKey.self ? path : path + [key]
    }

    fileprivate func corrupted<K: CodingKey>(_ key: K, _ message: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath(key), debugDescription: message))
    }

    private func mismatch<K: CodingKey>(
        _ expected: RecordFormat.ValueType, found: RecordFormat.ValueType, key: K
    ) -> DecodingError {
        let context = DecodingError.Context(
            codingPath: codingPath(key), debugDescription: "expected \(expected), found \(found)")
        return found == .null ? .valueNotFound(Any.self, context) : .typeMismatch(Any.self, context)
    }
}

// MARK: - Decoder

extension RecordDecoder: Decoder {
    var codingPath: [any CodingKey] { path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let (start, end, _) = try container(at: position, type: .keyed, key: noKey)
        return KeyedDecodingContainer(
            KeyedContainer<Key>(decoder: self, start: start, end: end, slot: addCursor(at: start), path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (start, end, count) = try container(at: position, type: .unkeyed, key: noKey)
        return UnkeyedContainer(decoder: self, offset: start, end: end, count: count, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self, offset: position, path: path)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RecordDecoder
    let start: Int
    let end: Int
    let slot: Int
    let codingPath: [any CodingKey]

    /// The offset of `key`'s value, or `nil` when the record has no such key.
    private func find(_ key: Key) throws -> Int? {
        try find(name: key.stringValue, intValue: key.intValue, key: key)
    }

    private func find<K: CodingKey>(name: String, intValue: Int?, key: K) throws -> Int? {
        let expected = decoder.cursor(slot)
        if expected < end {
            let (entryKey, value) = try decoder.entry(at: expected, end: end, key: key)
            if try decoder.matches(entryKey, name: name, intValue: intValue) {
                decoder.setCursor(slot, to: try decoder.valueEnd(at: value, end: end, key: key))
                return value
            }
        }
        var offset = start
        while offset < end {
            let (entryKey, value) = try decoder.entry(at: offset, end: end, key: key)
            let next = try decoder.valueEnd(at: value, end: end, key: key)
            if try decoder.matches(entryKey, name: name, intValue: intValue) {
                decoder.setCursor(slot, to: next)
                return value
            }
            offset = next
        }
        return nil
    }

    private func require(_ key: Key) throws -> Int {
        guard let offset = try find(key) else {
            throw DecodingError.keyNotFound(
                key,
                .init(codingPath: codingPath, debugDescription: "the record has no value for \"\(key.stringValue)\""))
        }
        return offset
    }

    var allKeys: [Key] {
        var keys: [Key] = []
        var offset = start
        while offset < end,
            let (entryKey, value) = try? decoder.entry(at: offset, end: end, key: noKey),
            let next = try? decoder.valueEnd(at: value, end: end, key: noKey)
        {
            let key: Key?
            switch entryKey {
            case .tag(let tag): key = (try? decoder.name(of: tag)).flatMap { Key(stringValue: $0) }
            case .inline(let raw): key = Key(stringValue: String(decoding: raw, as: UTF8.self))
            case .integer(let int): key = Key(intValue: int) ?? Key(stringValue: String(int))
            }
            if let key { keys.append(key) }
            offset = next
        }
        return keys
    }

    func contains(_ key: Key) -> Bool { (try? find(key)) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let offset = try find(key) else { return true }
        return try decoder.isNull(at: offset, key: key)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.bool(at: require(key), key: key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try decoder.string(at: require(key), key: key)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try decoder.double(at: require(key), key: key)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder.float(at: require(key), key: key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.decodeValue(type, at: require(key), key: key)
    }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try decoder.integer(T.self, at: require(key), key: key)
    }

    /// The offset of a present, non-null value; `nil` for a missing key or a stored `nil`.
    private func present(_ key: Key) throws -> Int? {
        guard let offset = try find(key), try !decoder.isNull(at: offset, key: key) else { return nil }
        return offset
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { try decoder.bool(at: $0, key: key) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { try decoder.string(at: $0, key: key) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { try decoder.double(at: $0, key: key) }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try present(key).map { try decoder.float(at: $0, key: key) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optionalInteger(key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try present(key).map { try decoder.decodeValue(type, at: $0, key: key) }
    }

    @inline(__always)
    private func optionalInteger<T: FixedWidthInteger>(_ key: Key) throws -> T? {
        try present(key).map { try decoder.integer(T.self, at: $0, key: key) }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let (start, end, _) = try decoder.container(at: require(key), type: .keyed, key: key)
        return KeyedDecodingContainer(
            KeyedContainer<NestedKey>(
                decoder: decoder, start: start, end: end, slot: decoder.addCursor(at: start), path: codingPath + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let (start, end, count) = try decoder.container(at: require(key), type: .unkeyed, key: key)
        return UnkeyedContainer(decoder: decoder, offset: start, end: end, count: count, path: codingPath + [key])
    }

    func superDecoder() throws -> any Decoder {
        guard let offset = try find(name: "super", intValue: nil, key: noKey) else {
            throw DecodingError.keyNotFound(
                IndexKey(0), .init(codingPath: codingPath, debugDescription: "the record has no \"super\" value"))
        }
        return SuperDecoder(decoder: decoder, offset: offset)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        SuperDecoder(decoder: decoder, offset: try require(key))
    }

    init(decoder: RecordDecoder, start: Int, end: Int, slot: Int, path: [any CodingKey]) {
        self.decoder = decoder
        self.start = start
        self.end = end
        self.slot = slot
        self.codingPath = path
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: RecordDecoder
    var offset: Int
    let end: Int
    let total: Int
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(decoder: RecordDecoder, offset: Int, end: Int, count: Int, path: [any CodingKey]) {
        self.decoder = decoder
        self.offset = offset
        self.end = end
        self.total = count
        self.codingPath = path
    }

    var count: Int? { total }
    var isAtEnd: Bool { currentIndex >= total }

    /// The offset of the next element, moving past it.
    private mutating func next() throws -> (offset: Int, key: IndexKey) {
        let key = IndexKey(currentIndex)
        guard !isAtEnd, offset < end else {
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: codingPath + [key], debugDescription: "the list has no more elements"))
        }
        let current = offset
        offset = try decoder.valueEnd(at: current, end: end, key: key)
        currentIndex += 1
        return (current, key)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, try decoder.isNull(at: offset, key: IndexKey(currentIndex)) else { return false }
        _ = try next()
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let (at, key) = try next()
        return try decoder.bool(at: at, key: key)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let (at, key) = try next()
        return try decoder.string(at: at, key: key)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let (at, key) = try next()
        return try decoder.double(at: at, key: key)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let (at, key) = try next()
        return try decoder.float(at: at, key: key)
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (at, key) = try next()
        return try decoder.decodeValue(type, at: at, key: key)
    }

    @inline(__always)
    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        let (at, key) = try next()
        return try decoder.integer(T.self, at: at, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let (at, key) = try next()
        let (start, end, _) = try decoder.container(at: at, type: .keyed, key: key)
        return KeyedDecodingContainer(
            KeyedContainer<NestedKey>(
                decoder: decoder, start: start, end: end, slot: decoder.addCursor(at: start), path: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (at, key) = try next()
        let (start, end, count) = try decoder.container(at: at, type: .unkeyed, key: key)
        return UnkeyedContainer(decoder: decoder, offset: start, end: end, count: count, path: codingPath + [key])
    }

    mutating func superDecoder() throws -> any Decoder {
        SuperDecoder(decoder: decoder, offset: try next().offset)
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: RecordDecoder
    let offset: Int
    let codingPath: [any CodingKey]

    init(decoder: RecordDecoder, offset: Int, path: [any CodingKey]) {
        self.decoder = decoder
        self.offset = offset
        self.codingPath = path
    }

    func decodeNil() -> Bool { (try? decoder.isNull(at: offset, key: noKey)) ?? false }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool(at: offset, key: noKey) }
    func decode(_ type: String.Type) throws -> String { try decoder.string(at: offset, key: noKey) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.double(at: offset, key: noKey) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.float(at: offset, key: noKey) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type, at: offset, key: noKey) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type, at: offset, key: noKey) }
}

/// The decoder `superDecoder()` returns: the superclass reads the entry's value as a whole.
private struct SuperDecoder: Decoder {
    let decoder: RecordDecoder
    let offset: Int
    var codingPath: [any CodingKey] { decoder.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let (start, end, _) = try decoder.container(at: offset, type: .keyed, key: noKey)
        return KeyedDecodingContainer(
            KeyedContainer<Key>(
                decoder: decoder, start: start, end: end, slot: decoder.addCursor(at: start), path: codingPath))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (start, end, count) = try decoder.container(at: offset, type: .unkeyed, key: noKey)
        return UnkeyedContainer(decoder: decoder, offset: start, end: end, count: count, path: codingPath)
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: decoder, offset: offset, path: codingPath)
    }
}

/// The key argument of a read that has no key to report (a top-level or single value). Keys are passed as a
/// generic argument, not as `(any CodingKey)?`: no existential box and no `Optional` metadata per field.
private struct NoKey: CodingKey {
    var stringValue: String { "" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

private let noKey = NoKey()

/// The coding key of a list element.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { intValue.map(String.init) ?? "" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}
