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
        /// `dictionary`, read without reference counting.
        var dictionaryReference = Unmanaged.passUnretained(KeyDictionary.empty)
        /// Where the value handed to the next `init(from:)` starts.
        var position = 0
        /// Keys of the values being decoded, outermost first; read only to report an error.
        var path: [any CodingKey] = []
        /// Set while decoding, so a decoder is never reused from inside its own work.
        var busy = false
        /// Counts the records decoded, so a container kept past its record is refused, not read.
        var generation = 0
        /// The field tables generated code used last, so a scan asks its dictionary (behind a lock) once.
        var fieldTables: [(dictionary: KeyDictionary, table: FieldTable)] = []
        /// The types `linkList(_:)` was asked about last, and its answers: a record's own type and the types of
        /// its fields, asked about record after record.
        var casts: [(type: ObjectIdentifier, list: (any LinkListCoding.Type)?)] = []
        /// The one used last, found without reference counting; always one `fieldTables` holds.
        var lastTable: (keys: ObjectIdentifier, dictionary: UnsafeMutableRawPointer, table: Unmanaged<FieldTable>)?
        /// Where the value `decode` was asked for starts: a keyed container opened there is the record's root.
        var rootOffset = 0
        /// The root's keyed containers, kept for the next record opened with the same coding keys: making one
        /// costs two generic type instantiations and two allocations, a third of a scanned record's decoding. A
        /// few, for a root read with several key types (a subclass and its superclass, say).
        var rootContainers: [any ReusableContainer] = []
        /// The coding keys of each of `rootContainers`.
        var rootKeys: [ObjectIdentifier] = []
    }

    private let state: UnsafeMutablePointer<State>

    private var bytes: UnsafeRawBufferPointer { state.pointee.bytes }
    private var dictionary: KeyDictionary { state.pointee.dictionary }
    private var position: Int { state.pointee.position }
    private var path: [any CodingKey] { state.pointee.path }

    /// The record being decoded, for containers to check they still belong to it.
    fileprivate var generation: Int { state.pointee.generation }

    /// Throws when a container of record `generation` is used after that record's decoding returned: the bytes it
    /// pointed into are gone.
    @inline(__always)
    fileprivate func checkAlive(_ generation: Int) throws {
        guard state.pointee.busy, state.pointee.generation == generation else { throw Self.containerOutlived }
    }

    fileprivate static var containerOutlived: DecodingError {
        .dataCorrupted(
            .init(
                codingPath: [],
                debugDescription: "a decoding container was used after the decoding it belongs to had returned"))
    }

    /// The offset of a value that is not in the record (`superDecoder(forKey:)` of an absent key): it reads as `nil`,
    /// as Foundation's JSON decoder reads an absent super value as `null`.
    fileprivate static let absent = -1

    /// How many root containers, of different coding keys, a decoder keeps.
    private static let keptRoots = 4
    /// How many types' answers `linkList(_:)` keeps.
    private static let keptCasts = 8

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

    /// Decodes a whole model record, through the model's generated code when it has some.
    @inline(__always)
    func decodeRecord<M: Model>(
        _ type: M.Type, from bytes: UnsafeRawBufferPointer, dictionary: KeyDictionary
    ) throws -> M {
        var reader = RecordReader(decoder: self, dictionary: dictionary, bytes: try Self.body(of: bytes), offset: 1)
        return try M._readRecord(&reader)
    }

    /// The record's format byte and value once its checksum matched; a `DecodingError` saying what is wrong
    /// otherwise.
    @inline(__always)
    private static func body(of bytes: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer {
        do {
            return try RecordFormat.body(of: bytes)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: error.description, underlyingError: error))
        }
    }

    /// Which field of `keys` each tag of `dictionary` names. The table lives as long as the dictionary.
    @inline(__always)
    func fieldTable(for keys: RecordKeys, in dictionary: Unmanaged<KeyDictionary>) -> Unmanaged<FieldTable> {
        // The table used last, as a scan of one model asks for it record after record. (The identifiers are of
        // objects `fieldTables` keeps alive, so no other object can have them.)
        if let last = state.pointee.lastTable, last.keys == ObjectIdentifier(keys),
            last.dictionary == dictionary.toOpaque()
        {
            return last.table
        }
        return findFieldTable(for: keys, in: dictionary.takeUnretainedValue())
    }

    private func findFieldTable(for keys: RecordKeys, in dictionary: KeyDictionary) -> Unmanaged<FieldTable> {
        let table: FieldTable
        if let cached = state.pointee.fieldTables.first(where: {
            $0.table.keys === keys && $0.dictionary === dictionary
        }) {
            table = cached.table
        } else {
            table = dictionary.fieldTable(for: keys)
            if state.pointee.fieldTables.count >= 8 { state.pointee.fieldTables.removeFirst() }
            state.pointee.fieldTables.append((dictionary, table))
        }
        state.pointee.lastTable = (
            ObjectIdentifier(keys), Unmanaged.passUnretained(dictionary).toOpaque(), .passUnretained(table)
        )
        return .passUnretained(table)
    }

    /// Decodes a whole record, reusing this decoder's buffers.
    func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, dictionary: KeyDictionary
    ) throws -> T {
        try decode(type, from: try Self.body(of: bytes), at: 1, dictionary: dictionary)
    }

    /// Decodes the one value that starts at `offset` of `bytes` (a field of a record, as migrations read it).
    func decode<T: Decodable>(
        _ type: T.Type, from bytes: UnsafeRawBufferPointer, at offset: Int, dictionary: KeyDictionary
    ) throws -> T {
        guard !state.pointee.busy else {
            return try RecordDecoder().decode(type, from: bytes, at: offset, dictionary: dictionary)
        }
        state.pointee.busy = true
        state.pointee.generation &+= 1
        state.pointee.bytes = bytes
        state.pointee.dictionary = dictionary
        state.pointee.dictionaryReference = .passUnretained(dictionary)
        state.pointee.position = 0
        state.pointee.rootOffset = offset
        state.pointee.path.removeAll(keepingCapacity: true)
        defer {
            // Never keep a pointer into a page past the call.
            state.pointee.bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            state.pointee.busy = false
            for position in state.pointee.rootContainers.indices {
                state.pointee.rootContainers[position].endRecord()
            }
        }
        return try decodeValue(type, at: offset, key: noKey)
    }

    // MARK: Values

    fileprivate func decodeValue<T: Decodable, K: CodingKey>(_ type: T.Type, at offset: Int, key: K) throws -> T {
        if T.self == Date.self {
            let seconds = try double(at: offset, type: .date, key: key)
            return unsafeBitCast(Date(timeIntervalSinceReferenceDate: seconds), to: T.self)
        } else if T.self == Data.self {
            return unsafeBitCast(Data(try payload(at: offset, type: .bytes, key: key)), to: T.self)
        } else if T.self == UUID.self {
            return unsafeBitCast(try uuid(at: offset, key: key), to: T.self)
        } else if T.self == URL.self {
            let text = try string(at: offset, type: .url, key: key)
            guard let url = URL(string: text) else { throw corrupted(key, "\(quoted(text)) is not a valid URL") }
            return unsafeBitCast(url, to: T.self)
        } else if T.self == Decimal.self {
            let text = try string(at: offset, type: .decimal, key: key)
            if text == "NaN" { return unsafeBitCast(Decimal.nan, to: T.self) }
            guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
                throw corrupted(key, "\(quoted(text)) is not a valid Decimal")
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
        if let list = linkList(T.self) {
            return try decodeLinkList(list, as: T.self)
        }
        return try T(from: self)
    }

    /// `type` as a list of links, or `nil`, remembered for the last few types asked about: a dynamic cast costs
    /// about a tenth of a record's decoding, and a scan asks it about the same types record after record. (One type
    /// was remembered, and the record's type and its list's type, asked in turn, each cost a cast every time.)
    private func linkList<T>(_ type: T.Type) -> (any LinkListCoding.Type)? {
        let identifier = ObjectIdentifier(type)
        for position in state.pointee.casts.indices where state.pointee.casts[position].type == identifier {
            return state.pointee.casts[position].list
        }
        let list = type as? any LinkListCoding.Type
        if state.pointee.casts.count == Self.keptCasts { state.pointee.casts.removeFirst() }
        state.pointee.casts.append((identifier, list))
        return list
    }

    /// Opens the list type, which is `T`, to call its decoder.
    private func decodeLinkList<L: LinkListCoding, T>(_ list: L.Type, as type: T.Type) throws -> T {
        unsafeBitCast(try L.decodeLinkList(self), to: T.self)
    }

    // MARK: Scalars

    // The reads come in two layers: byte-level reads that are not generic and throw a small typed `ReadFailure`,
    // and thin wrappers that turn a failure into a `DecodingError` with the key's coding path. The key is needed
    // only when something fails, so the success path carries no existential and no generic call.

    /// Why a byte-level read failed.
    fileprivate enum ReadFailure: Error {
        case truncated
        case unknownType
        case mismatch(found: RecordFormat.ValueType)
        case doesNotFit(String)
        case invalidText
    }

    @inline(__always)
    private func valueType(at offset: Int) throws(ReadFailure) -> RecordFormat.ValueType {
        if offset == Self.absent { return .null }
        guard offset >= 0, offset < bytes.count else { throw .truncated }
        guard let type = RecordFormat.ValueType(byte: bytes[offset]) else { throw .unknownType }
        return type
    }

    @inline(__always)
    private func fixed<I: FixedWidthInteger>(_: I.Type, at offset: Int) throws(ReadFailure) -> I {
        guard offset >= 0, bytes.count - offset >= MemoryLayout<I>.size else { throw .truncated }
        return I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self))
    }

    private func readPayload(at offset: Int, type expected: RecordFormat.ValueType) throws(ReadFailure)
        -> UnsafeRawBufferPointer
    {
        let found = try valueType(at: offset)
        guard found == expected else { throw .mismatch(found: found) }
        var reader = ByteReader(bytes, offset: offset + 1)
        do {
            return try reader.bytes(Int(clamping: try reader.varint()))
        } catch {
            throw .truncated
        }
    }

    private func readString(at offset: Int, type: RecordFormat.ValueType) throws(ReadFailure) -> String {
        guard let string = ByteReader.text(try readPayload(at: offset, type: type)) else { throw .invalidText }
        return string
    }

    /// Any stored integer width converts to any other when the value fits, so widening a property keeps
    /// old records readable.
    @inline(__always)
    private func readInteger<T: FixedWidthInteger>(_: T.Type, at offset: Int) throws(ReadFailure) -> T {
        let found = try valueType(at: offset)
        let value: T?
        switch found {
        case .int8: value = T(exactly: Int8(bitPattern: try fixed(UInt8.self, at: offset + 1)))
        case .int16: value = T(exactly: try fixed(Int16.self, at: offset + 1))
        case .int32: value = T(exactly: try fixed(Int32.self, at: offset + 1))
        case .int64: value = T(exactly: try fixed(Int64.self, at: offset + 1))
        case .uint8: value = T(exactly: try fixed(UInt8.self, at: offset + 1))
        case .uint16: value = T(exactly: try fixed(UInt16.self, at: offset + 1))
        case .uint32: value = T(exactly: try fixed(UInt32.self, at: offset + 1))
        case .uint64: value = T(exactly: try fixed(UInt64.self, at: offset + 1))
        case .int128: value = T(exactly: try fixed(Int128.self, at: offset + 1))
        case .uint128: value = T(exactly: try fixed(UInt128.self, at: offset + 1))
        default: throw .mismatch(found: found)
        }
        guard let value else { throw .doesNotFit("the stored number does not fit in \(T.self)") }
        return value
    }

    private func readDouble(at offset: Int, type expected: RecordFormat.ValueType) throws(ReadFailure) -> Double {
        let found = try valueType(at: offset)
        if found == expected { return Double(bitPattern: try fixed(UInt64.self, at: offset + 1)) }
        if found == .float, expected == .double {
            return Double(Float(bitPattern: try fixed(UInt32.self, at: offset + 1)))
        }
        throw .mismatch(found: found)
    }

    private func readFloat(at offset: Int) throws(ReadFailure) -> Float {
        switch try valueType(at: offset) {
        case .float: return Float(bitPattern: try fixed(UInt32.self, at: offset + 1))
        case .double:
            let value = Double(bitPattern: try fixed(UInt64.self, at: offset + 1))
            guard let narrowed = Float(exactly: value) ?? (value.isNaN ? Float.nan : nil) else {
                throw .doesNotFit("the stored number \(value) does not fit in Float")
            }
            return narrowed
        case let found: throw .mismatch(found: found)
        }
    }

    private func readContainer(at offset: Int, type expected: RecordFormat.ValueType) throws(ReadFailure)
        -> (start: Int, end: Int, count: Int)
    {
        let found = try valueType(at: offset)
        // A value that wrote nothing, read back by a type that asks for a container.
        if expected == .keyed, found == .null { return (offset, offset, 0) }
        guard found == expected else { throw .mismatch(found: found) }
        let length = Int(try fixed(UInt32.self, at: offset + 1))
        let count = Int(try fixed(UInt32.self, at: offset + 5))
        let start = offset + 1 + RecordFormat.containerHeaderSize
        guard length <= bytes.count - start, count <= length else { throw .truncated }
        return (start, start + length, count)
    }

    fileprivate func isNull<K: CodingKey>(at offset: Int, key: K) throws -> Bool {
        do { return try valueType(at: offset) == .null } catch { throw failure(error, expected: .null, key: key) }
    }

    fileprivate func bool<K: CodingKey>(at offset: Int, key: K) throws -> Bool {
        let found: RecordFormat.ValueType
        do { found = try valueType(at: offset) } catch { throw failure(error, expected: .true, key: key) }
        switch found {
        case .true: return true
        case .false: return false
        default: throw failure(.mismatch(found: found), expected: .true, key: key)
        }
    }

    @inline(__always)
    fileprivate func integer<T: FixedWidthInteger, K: CodingKey>(_: T.Type, at offset: Int, key: K) throws -> T {
        do { return try readInteger(T.self, at: offset) } catch { throw failure(error, expected: .int64, key: key) }
    }

    fileprivate func double<K: CodingKey>(
        at offset: Int, type expected: RecordFormat.ValueType = .double, key: K
    ) throws -> Double {
        do { return try readDouble(at: offset, type: expected) } catch {
            throw failure(error, expected: expected, key: key)
        }
    }

    fileprivate func float<K: CodingKey>(at offset: Int, key: K) throws -> Float {
        do { return try readFloat(at: offset) } catch { throw failure(error, expected: .float, key: key) }
    }

    private func payload<K: CodingKey>(
        at offset: Int, type expected: RecordFormat.ValueType, key: K
    ) throws -> UnsafeRawBufferPointer {
        do { return try readPayload(at: offset, type: expected) } catch {
            throw failure(error, expected: expected, key: key)
        }
    }

    fileprivate func string<K: CodingKey>(
        at offset: Int, type expected: RecordFormat.ValueType = .string, key: K
    ) throws -> String {
        do { return try readString(at: offset, type: expected) } catch {
            throw failure(error, expected: expected, key: key)
        }
    }

    private func readUUID(at offset: Int) throws(ReadFailure) -> UUID {
        let found = try valueType(at: offset)
        guard found == .uuid else { throw .mismatch(found: found) }
        guard bytes.count - (offset + 1) >= 16 else { throw .truncated }
        return UUID(uuid: bytes.loadUnaligned(fromByteOffset: offset + 1, as: uuid_t.self))
    }

    fileprivate func uuid<K: CodingKey>(at offset: Int, key: K) throws -> UUID {
        do { return try readUUID(at: offset) } catch { throw failure(error, expected: .uuid, key: key) }
    }

    /// The bounds of the container at `offset`: where its entries start and end, and how many there are.
    fileprivate func container<K: CodingKey>(
        at offset: Int, type expected: RecordFormat.ValueType, key: K
    ) throws -> (start: Int, end: Int, count: Int) {
        do { return try readContainer(at: offset, type: expected) } catch {
            throw failure(error, expected: expected, key: key)
        }
    }

    // MARK: Keys

    /// A parsed entry key and where the entry's value starts.
    fileprivate enum EntryKey {
        case tag(UInt32)
        case inline(UnsafeRawBufferPointer)
        case integer(Int)
    }

    fileprivate func entry(at offset: Int, end: Int) throws(ByteReader.OutOfBounds) -> (EntryKey, value: Int) {
        var reader = ByteReader(bytes, offset: offset, end: end)
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

    fileprivate func valueEnd(at offset: Int, end: Int) throws(ByteReader.OutOfBounds) -> Int {
        var reader = ByteReader(bytes, offset: offset, end: end)
        try reader.skipValue()
        return reader.offset
    }

    fileprivate func name(of tag: UInt32) -> String? {
        let names = dictionary.names
        return Int(tag) < names.count ? names[Int(tag)] : nil
    }

    /// The value of the entry at `offset` when its key is a one-byte tag naming `name`, and where the entry after
    /// it starts: the common case of a keyed container's lookup, with no entry parsed into an enum and no reference
    /// counted. `nil` for anything else, which the full lookup handles.
    @inline(__always)
    fileprivate func tagged(_ name: String, at offset: Int, end: Int) -> (value: Int, next: Int)? {
        let bytes = state.pointee.bytes
        guard offset >= 0, offset < end, end <= bytes.count else { return nil }
        let key = bytes[offset]
        guard key < 0x80, key & 1 == 0 else { return nil }
        let tag = Int(key >> 1)
        let matched = state.pointee.dictionaryReference._withUnsafeGuaranteedRef { dictionary in
            tag < dictionary.names.count && dictionary.names[tag] == name
        }
        guard matched, let size = RecordFormat.valueSize(in: bytes, at: offset + 1, end: end) else { return nil }
        return (offset + 1, offset + 1 + size)
    }

    /// Whether an entry's key is `name` (or `intValue`); `nil` when it names a tag the dictionary lacks.
    fileprivate func matches(_ entryKey: EntryKey, name: String, intValue: Int?) -> Bool? {
        switch entryKey {
        case .tag(let tag): return self.name(of: tag).map { $0 == name }
        case .inline(let raw): return raw.elementsEqual(name.utf8)
        case .integer(let int): return intValue == int
        }
    }

    // MARK: Errors

    fileprivate func codingPath<K: CodingKey>(_ key: K) -> [any CodingKey] {
        K.self == NoKey.self ? path : path + [key]
    }

    private func failure<K: CodingKey>(
        _ failure: ReadFailure, expected: RecordFormat.ValueType, key: K
    ) -> DecodingError {
        switch failure {
        case .truncated: corrupted(key, "the record ends inside a value")
        case .unknownType: corrupted(key, "the record has an unknown value type")
        case .mismatch(let found): mismatch(expected, found: found, key: key)
        case .doesNotFit(let message): corrupted(key, message)
        case .invalidText: corrupted(key, "the stored text is not valid UTF-8")
        }
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
        guard position == state.pointee.rootOffset, path.isEmpty else {
            return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, start: start, end: end, path: path))
        }
        // The record's root: the container an earlier record's root had with the same keys. (Found by `Key`, not by
        // the metatype passed, which may be a subclass's: the identifier names the `RootContainer<Key>` kept.)
        let keys = ObjectIdentifier(Key.self)
        if let position = state.pointee.rootKeys.firstIndex(of: keys) {
            let reused = unsafeDowncast(state.pointee.rootContainers[position], to: RootContainer<Key>.self)
            reused.container.reopen(by: self, start: start, end: end)
            return reused.keyed
        }
        let root = RootContainer(KeyedContainer<Key>(decoder: self, start: start, end: end, path: []))
        if state.pointee.rootKeys.count == Self.keptRoots {
            state.pointee.rootKeys.removeFirst()
            state.pointee.rootContainers.removeFirst()
        }
        state.pointee.rootKeys.append(keys)
        state.pointee.rootContainers.append(root)
        return root.keyed
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (start, end, count) = try container(at: position, type: .unkeyed, key: noKey)
        return UnkeyedContainer(decoder: self, offset: start, end: end, count: count, path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self, offset: position, path: path)
    }
}

/// A record's root container that its decoder keeps for the next record.
private protocol ReusableContainer: AnyObject {
    /// The record is decoded: the container lets go of its decoder, which holds it.
    func endRecord()
}

/// A root container with the standard library's wrapper around it, both made once for a decoder and coding keys.
private final class RootContainer<Key: CodingKey>: ReusableContainer {
    let container: KeyedContainer<Key>
    let keyed: KeyedDecodingContainer<Key>

    init(_ container: KeyedContainer<Key>) {
        self.container = container
        keyed = KeyedDecodingContainer(container)
    }

    func endRecord() { container.release() }
}

/// A class, not a struct: the standard library's box calls it through unspecialized generic code, which copies a
/// struct (and retains each of its references) on every call; a class costs one retain.
private final class KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    /// The decoder, read without reference counting: `holder` keeps it alive. A root container waiting in its
    /// decoder for the next record must not (that would be a cycle), so `release()` lets go between records, and
    /// every use first checks `attached`.
    private let decoderReference: Unmanaged<RecordDecoder>

    /// Runs `body` with the decoder and no reference counting. Only after `checkAlive()`: the decoder may be gone.
    @inline(__always)
    private func withDecoder<R>(_ body: (RecordDecoder) throws -> R) rethrows -> R {
        try decoderReference._withUnsafeGuaranteedRef(body)
    }
    private var holder: RecordDecoder?
    private var attached = true
    private var generation: Int
    private var start: Int
    private var end: Int
    let codingPath: [any CodingKey]
    /// Where the entry expected next starts: synthesized `init(from:)` asks for keys in the order they were
    /// written, so trying that entry first finds almost every key without a search.
    private var next: Int

    /// Throws unless the container belongs to the record its decoder is decoding now.
    @inline(__always)
    private func checkAlive() throws {
        guard attached else { throw RecordDecoder.containerOutlived }
        try withDecoder { try $0.checkAlive(generation) }
    }

    /// Makes a kept root container the one of the record `decoder`, its own, decodes now.
    func reopen(by decoder: RecordDecoder, start: Int, end: Int) {
        holder = decoder
        attached = true
        generation = decoder.generation
        self.start = start
        self.end = end
        next = start
    }

    /// Lets go of the decoder: the container, kept by it, is not used until `reopen`.
    func release() {
        attached = false
        holder = nil
    }

    /// The offset of `key`'s value, or `nil` when the record has no such key.
    private func find(_ key: Key) throws -> Int? {
        let name = key.stringValue
        try checkAlive()
        if let found = withDecoder({ $0.tagged(name, at: next, end: end) }) {
            next = found.next
            return found.value
        }
        return try find(name: name, intValue: key.intValue, key: key)
    }

    private func find<K: CodingKey>(name: String, intValue: Int?, key: K) throws -> Int? {
        try checkAlive()
        return try withDecoder { decoder in try find(name: name, intValue: intValue, key: key, in: decoder) }
    }

    private func find<K: CodingKey>(name: String, intValue: Int?, key: K, in decoder: RecordDecoder) throws -> Int? {
        do {
            let expected = next
            if expected < end {
                let (entryKey, value) = try decoder.entry(at: expected, end: end)
                guard let matched = decoder.matches(entryKey, name: name, intValue: intValue) else {
                    throw RecordDecoder.UnknownKeyTag()
                }
                if matched {
                    next = try decoder.valueEnd(at: value, end: end)
                    return value
                }
            }
            var offset = start
            while offset < end {
                let (entryKey, value) = try decoder.entry(at: offset, end: end)
                let next = try decoder.valueEnd(at: value, end: end)
                guard let matched = decoder.matches(entryKey, name: name, intValue: intValue) else {
                    throw RecordDecoder.UnknownKeyTag()
                }
                if matched {
                    self.next = next
                    return value
                }
                offset = next
            }
            return nil
        } catch is ByteReader.OutOfBounds {
            throw decoder.corrupted(key, "the record ends inside an entry")
        }
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
        guard (try? checkAlive()) != nil else { return [] }
        return withDecoder { decoder in
            var keys: [Key] = []
            var offset = start
            while offset < end,
                let (entryKey, value) = try? decoder.entry(at: offset, end: end),
                let next = try? decoder.valueEnd(at: value, end: end)
            {
                let key: Key?
                switch entryKey {
                case .tag(let tag): key = decoder.name(of: tag).flatMap { Key(stringValue: $0) }
                case .inline(let raw): key = Key(stringValue: String(decoding: raw, as: UTF8.self))
                case .integer(let int): key = Key(intValue: int) ?? Key(stringValue: String(int))
                }
                if let key { keys.append(key) }
                offset = next
            }
            return keys
        }
    }

    func contains(_ key: Key) -> Bool { (try? find(key)) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let offset = try find(key) else { return true }
        return try withDecoder { try $0.isNull(at: offset, key: key) }
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        let offset = try require(key)
        return try withDecoder { try $0.bool(at: offset, key: key) }
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let offset = try require(key)
        return try withDecoder { try $0.string(at: offset, key: key) }
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        let offset = try require(key)
        return try withDecoder { try $0.double(at: offset, key: key) }
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        let offset = try require(key)
        return try withDecoder { try $0.float(at: offset, key: key) }
    }
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
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try integer(key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try integer(key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let offset = try require(key)
        return try withDecoder { try $0.decodeValue(type, at: offset, key: key) }
    }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        let offset = try require(key)
        return try withDecoder { try $0.integer(T.self, at: offset, key: key) }
    }

    /// The offset of a present, non-null value; `nil` for a missing key or a stored `nil`.
    private func present(_ key: Key) throws -> Int? {
        guard let offset = try find(key), try !withDecoder({ try $0.isNull(at: offset, key: key) }) else {
            return nil
        }
        return offset
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { offset in try withDecoder { try $0.bool(at: offset, key: key) } }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { offset in try withDecoder { try $0.string(at: offset, key: key) } }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { offset in try withDecoder { try $0.double(at: offset, key: key) } }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try present(key).map { offset in try withDecoder { try $0.float(at: offset, key: key) } }
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
    func decodeIfPresent(_ type: Int128.Type, forKey key: Key) throws -> Int128? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) throws -> UInt128? { try optionalInteger(key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try present(key).map { offset in try withDecoder { try $0.decodeValue(type, at: offset, key: key) } }
    }

    @inline(__always)
    private func optionalInteger<T: FixedWidthInteger>(_ key: Key) throws -> T? {
        try present(key).map { offset in try withDecoder { try $0.integer(T.self, at: offset, key: key) } }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let offset = try require(key)
        return try withDecoder { decoder in
            let (start, end, _) = try decoder.container(at: offset, type: .keyed, key: key)
            return KeyedDecodingContainer(
                KeyedContainer<NestedKey>(decoder: decoder, start: start, end: end, path: codingPath + [key]))
        }
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let offset = try require(key)
        return try withDecoder { decoder in
            let (start, end, count) = try decoder.container(at: offset, type: .unkeyed, key: key)
            return UnkeyedContainer(decoder: decoder, offset: start, end: end, count: count, path: codingPath + [key])
        }
    }

    // An absent super value reads as `nil`, as in Foundation's JSON decoder.
    func superDecoder() throws -> any Decoder {
        let offset = try find(name: "super", intValue: nil, key: noKey) ?? RecordDecoder.absent
        return withDecoder { SuperDecoder(decoder: $0, offset: offset) }
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        let offset = try find(key) ?? RecordDecoder.absent
        return withDecoder { SuperDecoder(decoder: $0, offset: offset) }
    }

    init(decoder: RecordDecoder, start: Int, end: Int, path: [any CodingKey]) {
        self.decoderReference = .passUnretained(decoder)
        self.holder = decoder
        self.generation = decoder.generation
        self.start = start
        self.end = end
        self.next = start
        self.codingPath = path
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: RecordDecoder
    let generation: Int
    var offset: Int
    let end: Int
    let total: Int
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(decoder: RecordDecoder, offset: Int, end: Int, count: Int, path: [any CodingKey]) {
        self.decoder = decoder
        self.generation = decoder.generation
        self.offset = offset
        self.end = end
        self.total = count
        self.codingPath = path
    }

    var count: Int? { total }
    var isAtEnd: Bool { currentIndex >= total }

    /// The offset of the next element, moving past it.
    private mutating func next() throws -> (offset: Int, key: IndexKey) {
        try decoder.checkAlive(generation)
        let key = IndexKey(currentIndex)
        guard !isAtEnd, offset < end else {
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: codingPath + [key], debugDescription: "the list has no more elements"))
        }
        let current = offset
        do {
            offset = try decoder.valueEnd(at: current, end: end)
        } catch {
            throw decoder.corrupted(key, "the record ends inside a list element")
        }
        currentIndex += 1
        return (current, key)
    }

    mutating func decodeNil() throws -> Bool {
        try decoder.checkAlive(generation)
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
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try integer() }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try integer() }
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
                decoder: decoder, start: start, end: end, path: codingPath + [key]))
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
    let generation: Int
    private let position: Int
    let codingPath: [any CodingKey]

    init(decoder: RecordDecoder, offset: Int, path: [any CodingKey]) {
        self.decoder = decoder
        self.generation = decoder.generation
        self.position = offset
        self.codingPath = path
    }

    /// The value's offset, once the container is known to belong to the record being decoded.
    private var offset: Int {
        get throws {
            try decoder.checkAlive(generation)
            return position
        }
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
    func decode(_ type: Int128.Type) throws -> Int128 { try decoder.integer(type, at: offset, key: noKey) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try decoder.integer(type, at: offset, key: noKey) }
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
                decoder: decoder, start: start, end: end, path: codingPath))
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

/// `text` in quotes, escaped, and cut after 64 characters: stored text quoted in an error may be damaged.
func quoted(_ text: String) -> String {
    text.count <= 64 ? text.debugDescription : String(text.prefix(64)).debugDescription + "…"
}

/// The coding key of a list element.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { intValue.map(String.init) ?? "" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

extension RecordDecoder {
    /// The id of a `Link` being decoded: read straight from the value when the id is one of the common primary-key
    /// types, without the two single-value containers and generic calls the `Codable` path makes for each link.
    func decodeLinkID<ID: Decodable>(_ type: ID.Type) throws -> ID {
        try linkID(ID.self, at: position, key: noKey)
    }

    private func linkID<ID: Decodable, K: CodingKey>(_ type: ID.Type, at offset: Int, key: K) throws -> ID {
        if ID.self == Int64.self {
            return unsafeBitCast(try integer(Int64.self, at: offset, key: key), to: ID.self)
        } else if ID.self == Int.self {
            return unsafeBitCast(try integer(Int.self, at: offset, key: key), to: ID.self)
        } else if ID.self == String.self {
            return unsafeBitCast(try string(at: offset, key: key), to: ID.self)
        } else if ID.self == UUID.self {
            return unsafeBitCast(try uuid(at: offset, key: key), to: ID.self)
        }
        return try decodeValue(ID.self, at: offset, key: key)
    }

    /// The list of links at the current position, read element by element as `UnkeyedContainer` reads them.
    func decodeLinkList<L: LinkIDCoding>(_ type: L.Type) throws -> [L] {
        let (start, end, count) = try container(at: position, type: .unkeyed, key: noKey)
        // Made in place: this runs unspecialized (`L` comes from the model), where each `append` would check the
        // array's uniqueness and capacity through `L`'s metadata.
        return try [L](unsafeUninitializedCapacity: count) { buffer, initialized in
            var offset = start
            for index in 0..<count {
                let key = IndexKey(index)
                guard offset < end else { throw corrupted(key, "the list has no more elements") }
                let next: Int
                do { next = try valueEnd(at: offset, end: end) } catch {
                    throw corrupted(key, "the record ends inside a list element")
                }
                buffer.initializeElement(at: index, to: L(id: try linkID(L.LinkID.self, at: offset, key: key)))
                initialized = index + 1
                offset = next
            }
        }
    }
}
