import Foundation

/// Encodes a `Codable` value into the record format of `RecordFormat`, in one pass, into one reusable buffer.
///
/// Containers are written as a stream: a container's header is patched with its length when a write reaches a
/// container further out, or when the record ends. Writing to a container after one of its outer containers has
/// been written to again (legal in `Codable`, used by no synthesized code) is refused with an error rather than
/// producing a damaged record.
final class RecordEncoder {
    private(set) var buffer: [UInt8] = []
    /// The key dictionary the record's tags refer to, and the names this encoder has added to it.
    private(set) var dictionary: KeyDictionary
    private(set) var addedNames: [String] = []
    private var addedTags: [String: UInt32] = [:]

    /// The tags of the previous record's keys, in the order they were written: the next record of the same
    /// model almost always asks for the same keys in the same order, so a string compare replaces a hash.
    private var expectedKeys: [(name: String, tag: UInt32)] = []
    private var keySequence = 0

    /// Open containers, innermost last.
    private var open: [OpenContainer] = []
    /// Counts values as they start, so a second request for a container by the same value finds the first.
    private var valueSerial = 0
    private var currentValue = (serial: 0, depth: 0)
    private var misuse: String?

    struct OpenContainer {
        var headerOffset: Int
        var count: UInt32
        let isDictionary: Bool
        let ownerSerial: Int
    }

    init(dictionary: KeyDictionary) {
        self.dictionary = dictionary
        buffer.reserveCapacity(256)
    }

    /// Starts over with a newer dictionary (after another process added keys), dropping this encoder's additions.
    func reset(dictionary: KeyDictionary) {
        self.dictionary = dictionary
        addedNames = []
        addedTags = [:]
        expectedKeys = []
    }

    /// Marks the added names as stored: they become part of the dictionary.
    func absorbAddedNames() -> KeyDictionary {
        dictionary = dictionary.appending(addedNames)
        addedNames = []
        addedTags = [:]
        return dictionary
    }

    /// Encodes `value` as a whole record; the bytes are valid until the next call.
    func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(RecordFormat.version)
        open.removeAll(keepingCapacity: true)
        keySequence = 0
        misuse = nil
        try encodeValue(value)
        closeContainers(downTo: 0)
        if let misuse { throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: misuse)) }
        return buffer
    }

    // MARK: Values

    func encodeValue<T: Encodable>(_ value: T) throws {
        // Foundation types with a compact form of their own, recognised by metatype, never by a cast.
        if T.self == Date.self {
            putDate(unsafeBitCast(value, to: Date.self))
        } else if T.self == Data.self {
            putBytes(.bytes, unsafeBitCast(value, to: Data.self))
        } else if T.self == UUID.self {
            putUUID(unsafeBitCast(value, to: UUID.self))
        } else if T.self == URL.self {
            putBytes(.url, unsafeBitCast(value, to: URL.self).absoluteString.utf8)
        } else if T.self == Decimal.self {
            putBytes(.decimal, unsafeBitCast(value, to: Decimal.self).description.utf8)
        } else {
            let outer = currentValue
            valueSerial += 1
            currentValue = (valueSerial, open.count)
            let start = buffer.count
            try value.encode(to: self)
            // A value that wrote nothing still needs a value in the record: an empty keyed container.
            if buffer.count == start { _ = openContainer(isDictionary: false) }
            currentValue = outer
        }
    }

    @inline(__always) private func put(_ type: RecordFormat.ValueType) { buffer.append(type.rawValue) }

    @inline(__always)
    private func putFixed<I: FixedWidthInteger>(_ type: RecordFormat.ValueType, _ value: I) {
        buffer.append(type.rawValue)
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    func putNil() { put(.null) }
    func putBool(_ value: Bool) { put(value ? .true : .false) }
    func putString(_ value: String) {
        var value = value
        value.withUTF8 { putBytes(.string, UnsafeRawBufferPointer($0)) }
    }
    func putDouble(_ value: Double) { putFixed(.double, value.bitPattern) }
    func putFloat(_ value: Float) { putFixed(.float, value.bitPattern) }
    func putInt(_ value: Int) { putFixed(.int64, Int64(value)) }
    func putInt8(_ value: Int8) { putFixed(.int8, value) }
    func putInt16(_ value: Int16) { putFixed(.int16, value) }
    func putInt32(_ value: Int32) { putFixed(.int32, value) }
    func putInt64(_ value: Int64) { putFixed(.int64, value) }
    func putUInt(_ value: UInt) { putFixed(.uint64, UInt64(value)) }
    func putUInt8(_ value: UInt8) { putFixed(.uint8, value) }
    func putUInt16(_ value: UInt16) { putFixed(.uint16, value) }
    func putUInt32(_ value: UInt32) { putFixed(.uint32, value) }
    func putUInt64(_ value: UInt64) { putFixed(.uint64, value) }
    func putDate(_ value: Date) { putFixed(.date, value.timeIntervalSinceReferenceDate.bitPattern) }
    func putUUID(_ value: UUID) {
        put(.uuid)
        withUnsafeBytes(of: value.uuid) { buffer.append(contentsOf: $0) }
    }
    func putBytes(_ type: RecordFormat.ValueType, _ bytes: some Collection<UInt8>) {
        put(type)
        Varint.append(UInt64(bytes.count), to: &buffer)
        buffer.append(contentsOf: bytes)
    }

    // MARK: Containers

    /// Makes the container at `depth` the innermost open one, closing finished inner ones.
    /// Returns `false` when that container was closed already (out-of-order use).
    @inline(__always)
    func activate(depth: Int) -> Bool {
        if open.count - 1 > depth { closeContainers(downTo: depth + 1) }
        guard open.count - 1 == depth else {
            misuse = misuse ?? "a container was written to after a container around it had moved on"
            return false
        }
        return true
    }

    /// Opens a container for the current value, or returns the one it opened already (class hierarchies ask
    /// again through `super.encode(to:)`). Returns its depth.
    func openContainer(isDictionary: Bool, unkeyed: Bool = false) -> Int {
        let depth = currentValue.depth
        if open.count > depth, open[depth].ownerSerial == currentValue.serial {
            closeContainers(downTo: depth + 1)
            return depth
        }
        closeContainers(downTo: depth)
        put(unkeyed ? .unkeyed : .keyed)
        open.append(
            OpenContainer(
                headerOffset: buffer.count, count: 0, isDictionary: isDictionary, ownerSerial: currentValue.serial))
        buffer.append(contentsOf: repeatElement(0, count: RecordFormat.containerHeaderSize))
        return open.count - 1
    }

    /// Opens a container nested in the one at `parentDepth`, as the value just keyed or appended there.
    func openNestedContainer(unkeyed: Bool) -> Int {
        valueSerial += 1
        let outer = currentValue
        currentValue = (valueSerial, open.count)
        defer { currentValue = outer }
        return openContainer(isDictionary: false, unkeyed: unkeyed)
    }

    private func closeContainers(downTo depth: Int) {
        while open.count > depth {
            let container = open.removeLast()
            let payload = buffer.count - container.headerOffset - RecordFormat.containerHeaderSize
            buffer.withUnsafeMutableBytes { raw in
                raw.storeBytes(
                    of: UInt32(truncatingIfNeeded: payload).littleEndian,
                    toByteOffset: container.headerOffset, as: UInt32.self)
                raw.storeBytes(
                    of: container.count.littleEndian,
                    toByteOffset: container.headerOffset + 4, as: UInt32.self)
            }
        }
    }

    @inline(__always) func countEntry(depth: Int) { open[depth].count += 1 }

    /// Writes the key of an entry in the keyed container at `depth`.
    func putKey(_ name: String, intValue: Int?, depth: Int) {
        if open[depth].isDictionary {
            if let int = intValue {
                buffer.append(3)
                Varint.append(UInt64(bitPattern: Int64((int << 1) ^ (int >> (Int.bitWidth - 1)))), to: &buffer)
            } else {
                let utf8 = name.utf8
                Varint.append(UInt64(utf8.count) << 2 | 1, to: &buffer)
                buffer.append(contentsOf: utf8)
            }
        } else {
            Varint.append(UInt64(tag(for: name)) << 1, to: &buffer)
        }
        open[depth].count += 1
    }

    private func tag(for name: String) -> UInt32 {
        let sequence = keySequence
        keySequence += 1
        if sequence < expectedKeys.count, expectedKeys[sequence].name == name { return expectedKeys[sequence].tag }
        let tag: UInt32
        if let known = dictionary.tags[name] ?? addedTags[name] {
            tag = known
        } else {
            tag = UInt32(dictionary.names.count + addedNames.count)
            addedNames.append(name)
            addedTags[name] = tag
        }
        if sequence < expectedKeys.count {
            expectedKeys[sequence] = (name, tag)
        } else if sequence == expectedKeys.count {
            expectedKeys.append((name, tag))
        }
        return tag
    }
}

// MARK: - Encoder

extension RecordEncoder: Encoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let depth = openContainer(isDictionary: Key.self == RecordFormat.dictionaryKeyType)
        return KeyedEncodingContainer(KeyedContainer(encoder: self, depth: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(encoder: self, depth: openContainer(isDictionary: false, unkeyed: true))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: self) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RecordEncoder
    let depth: Int
    var codingPath: [any CodingKey] { [] }

    @inline(__always)
    private func key(_ key: Key) -> Bool { named(key.stringValue, intValue: key.intValue) }

    private func named(_ name: String, intValue: Int?) -> Bool {
        guard encoder.activate(depth: depth) else { return false }
        encoder.putKey(name, intValue: intValue, depth: depth)
        return true
    }

    mutating func encodeNil(forKey k: Key) { if key(k) { encoder.putNil() } }
    mutating func encode(_ value: Bool, forKey k: Key) { if key(k) { encoder.putBool(value) } }
    mutating func encode(_ value: String, forKey k: Key) { if key(k) { encoder.putString(value) } }
    mutating func encode(_ value: Double, forKey k: Key) { if key(k) { encoder.putDouble(value) } }
    mutating func encode(_ value: Float, forKey k: Key) { if key(k) { encoder.putFloat(value) } }
    mutating func encode(_ value: Int, forKey k: Key) { if key(k) { encoder.putInt(value) } }
    mutating func encode(_ value: Int8, forKey k: Key) { if key(k) { encoder.putInt8(value) } }
    mutating func encode(_ value: Int16, forKey k: Key) { if key(k) { encoder.putInt16(value) } }
    mutating func encode(_ value: Int32, forKey k: Key) { if key(k) { encoder.putInt32(value) } }
    mutating func encode(_ value: Int64, forKey k: Key) { if key(k) { encoder.putInt64(value) } }
    mutating func encode(_ value: UInt, forKey k: Key) { if key(k) { encoder.putUInt(value) } }
    mutating func encode(_ value: UInt8, forKey k: Key) { if key(k) { encoder.putUInt8(value) } }
    mutating func encode(_ value: UInt16, forKey k: Key) { if key(k) { encoder.putUInt16(value) } }
    mutating func encode(_ value: UInt32, forKey k: Key) { if key(k) { encoder.putUInt32(value) } }
    mutating func encode(_ value: UInt64, forKey k: Key) { if key(k) { encoder.putUInt64(value) } }
    mutating func encode<T: Encodable>(_ value: T, forKey k: Key) throws {
        if key(k) { try encoder.encodeValue(value) }
    }

    // `nil` is written, not skipped, so a reader finds keys in declaration order without searching.
    mutating func encodeIfPresent(_ value: Bool?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: String?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: Float?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: Int8?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: Int16?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: Int32?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: UInt?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: UInt8?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: UInt16?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: UInt32?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: UInt64?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey k: Key) throws {
        if let value { try encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey k: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        _ = key(k)
        return KeyedEncodingContainer(
            KeyedContainer<NestedKey>(encoder: encoder, depth: encoder.openNestedContainer(unkeyed: false)))
    }

    mutating func nestedUnkeyedContainer(forKey k: Key) -> any UnkeyedEncodingContainer {
        _ = key(k)
        return UnkeyedContainer(encoder: encoder, depth: encoder.openNestedContainer(unkeyed: true))
    }

    mutating func superEncoder() -> any Encoder {
        _ = named("super", intValue: nil)
        return SuperEncoder(encoder: encoder)
    }

    mutating func superEncoder(forKey k: Key) -> any Encoder {
        _ = key(k)
        return SuperEncoder(encoder: encoder)
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: RecordEncoder
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    private(set) var count = 0

    init(encoder: RecordEncoder, depth: Int) {
        self.encoder = encoder
        self.depth = depth
    }

    @inline(__always)
    private mutating func element() -> Bool {
        guard encoder.activate(depth: depth) else { return false }
        encoder.countEntry(depth: depth)
        count += 1
        return true
    }

    mutating func encodeNil() { if element() { encoder.putNil() } }
    mutating func encode(_ value: Bool) { if element() { encoder.putBool(value) } }
    mutating func encode(_ value: String) { if element() { encoder.putString(value) } }
    mutating func encode(_ value: Double) { if element() { encoder.putDouble(value) } }
    mutating func encode(_ value: Float) { if element() { encoder.putFloat(value) } }
    mutating func encode(_ value: Int) { if element() { encoder.putInt(value) } }
    mutating func encode(_ value: Int8) { if element() { encoder.putInt8(value) } }
    mutating func encode(_ value: Int16) { if element() { encoder.putInt16(value) } }
    mutating func encode(_ value: Int32) { if element() { encoder.putInt32(value) } }
    mutating func encode(_ value: Int64) { if element() { encoder.putInt64(value) } }
    mutating func encode(_ value: UInt) { if element() { encoder.putUInt(value) } }
    mutating func encode(_ value: UInt8) { if element() { encoder.putUInt8(value) } }
    mutating func encode(_ value: UInt16) { if element() { encoder.putUInt16(value) } }
    mutating func encode(_ value: UInt32) { if element() { encoder.putUInt32(value) } }
    mutating func encode(_ value: UInt64) { if element() { encoder.putUInt64(value) } }
    mutating func encode<T: Encodable>(_ value: T) throws { if element() { try encoder.encodeValue(value) } }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        _ = element()
        return KeyedEncodingContainer(
            KeyedContainer<NestedKey>(encoder: encoder, depth: encoder.openNestedContainer(unkeyed: false)))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = element()
        return UnkeyedContainer(encoder: encoder, depth: encoder.openNestedContainer(unkeyed: true))
    }

    mutating func superEncoder() -> any Encoder {
        _ = element()
        return SuperEncoder(encoder: encoder)
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let encoder: RecordEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil() { encoder.putNil() }
    mutating func encode(_ value: Bool) { encoder.putBool(value) }
    mutating func encode(_ value: String) { encoder.putString(value) }
    mutating func encode(_ value: Double) { encoder.putDouble(value) }
    mutating func encode(_ value: Float) { encoder.putFloat(value) }
    mutating func encode(_ value: Int) { encoder.putInt(value) }
    mutating func encode(_ value: Int8) { encoder.putInt8(value) }
    mutating func encode(_ value: Int16) { encoder.putInt16(value) }
    mutating func encode(_ value: Int32) { encoder.putInt32(value) }
    mutating func encode(_ value: Int64) { encoder.putInt64(value) }
    mutating func encode(_ value: UInt) { encoder.putUInt(value) }
    mutating func encode(_ value: UInt8) { encoder.putUInt8(value) }
    mutating func encode(_ value: UInt16) { encoder.putUInt16(value) }
    mutating func encode(_ value: UInt32) { encoder.putUInt32(value) }
    mutating func encode(_ value: UInt64) { encoder.putUInt64(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encodeValue(value) }
}

/// The encoder `superEncoder()` returns: the value the superclass writes is the entry's value.
private struct SuperEncoder: Encoder {
    let encoder: RecordEncoder
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer(encoder: encoder, depth: encoder.openNestedContainer(unkeyed: false)))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(encoder: encoder, depth: encoder.openNestedContainer(unkeyed: true))
    }
    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueContainer(encoder: encoder) }
}
