import Foundation

/// Encodes a `Codable` value into the record format of `RecordFormat`, in one pass, into one reusable buffer.
///
/// Containers are written as a stream: a container's header is patched with its length when a write reaches a
/// container further out, or when the record ends. What a record written so cannot hold is refused with an
/// `EncodingError`, never stored unreadable or changed: writing to a container after a container around it (or a
/// sibling) has been written to since, a key written twice in one container, a super encoder written to after its
/// container moved on, a single-value container written twice, or nesting deeper than a reader accepts. All are
/// legal in `Codable` and used by no synthesized code. A super encoder that is never written to stores an empty
/// container, as Foundation's JSON encoder stores `{}`.
final class RecordEncoder {
    /// The encoder's mutable state lives behind a pointer it owns: class `var`s pay Swift's dynamic exclusivity
    /// check on every write (about 4,300 instructions an insert, callgrind showed), a pointee does not. The
    /// properties below keep the names the code uses and read and modify the state in place.
    private struct State {
        var buffer: [UInt8] = []
        var dictionary: KeyDictionary
        var addedNames: [String] = []
        var addedTags: [String: UInt32] = [:]
        var expectedKeys: [(name: String, tag: UInt32)] = []
        var keySequence = 0
        var open: [OpenContainer] = []
        var valueSerial = 0
        var currentValue = (serial: 0, depth: 0)
        var valueDepth = 0
        var pendingSuper: (serial: Int, depth: Int)?
        var singleValueWritten = -1
        var misuse: String?
        /// The tags generated code writes each type's fields with, under `dictionary` and the added names.
        var fieldTags: [(fields: RecordKeys, tags: [UInt32])] = []
    }

    private let state: UnsafeMutablePointer<State>

    /// The record being written.
    private(set) var buffer: [UInt8] {
        get { state.pointee.buffer }
        _modify { yield &state.pointee.buffer }
    }
    /// The key dictionary the record's tags refer to, and the names this encoder has added to it.
    private(set) var dictionary: KeyDictionary {
        get { state.pointee.dictionary }
        _modify { yield &state.pointee.dictionary }
    }
    private(set) var addedNames: [String] {
        get { state.pointee.addedNames }
        _modify { yield &state.pointee.addedNames }
    }
    private var addedTags: [String: UInt32] {
        get { state.pointee.addedTags }
        _modify { yield &state.pointee.addedTags }
    }
    /// The tags of the previous record's keys, in the order they were written: the next record of the same
    /// model almost always asks for the same keys in the same order, so a string compare replaces a hash.
    private var expectedKeys: [(name: String, tag: UInt32)] {
        get { state.pointee.expectedKeys }
        _modify { yield &state.pointee.expectedKeys }
    }
    private var keySequence: Int {
        get { state.pointee.keySequence }
        _modify { yield &state.pointee.keySequence }
    }
    /// Open containers, innermost last.
    private var open: [OpenContainer] {
        get { state.pointee.open }
        _modify { yield &state.pointee.open }
    }
    /// Counts values as they start, so a second request for a container by the same value finds the first, and a
    /// container or super encoder can tell whether it is still the one being written.
    private var valueSerial: Int {
        get { state.pointee.valueSerial }
        _modify { yield &state.pointee.valueSerial }
    }
    private var currentValue: (serial: Int, depth: Int) {
        get { state.pointee.currentValue }
        _modify { yield &state.pointee.currentValue }
    }
    /// How many values enclose the one being written: refused at `RecordFormat.maximumDepth`, as readers do.
    private var valueDepth: Int {
        get { state.pointee.valueDepth }
        _modify { yield &state.pointee.valueDepth }
    }
    /// A super encoder handed out whose value is not written yet, and the container its entry is in.
    private var pendingSuper: (serial: Int, depth: Int)? {
        get { state.pointee.pendingSuper }
        _modify { yield &state.pointee.pendingSuper }
    }
    /// The last value a single-value container wrote, so a second write to it is refused.
    private var singleValueWritten: Int {
        get { state.pointee.singleValueWritten }
        _modify { yield &state.pointee.singleValueWritten }
    }
    private var misuse: String? {
        get { state.pointee.misuse }
        _modify { yield &state.pointee.misuse }
    }

    struct OpenContainer {
        var headerOffset: Int
        var count: UInt32
        let isDictionary: Bool
        let ownerSerial: Int
        /// Keys written so far: tags below 64 as bits, anything else by name.
        var lowTags: UInt64 = 0
        var otherKeys: Set<String>? = nil
    }

    /// Records the first way the value is being written wrongly; `encode` throws it at the end.
    private func refuse(_ reason: @autoclosure () -> String) {
        if misuse == nil { misuse = reason() }
    }

    init(dictionary: KeyDictionary) {
        state = .allocate(capacity: 1)
        state.initialize(to: State(dictionary: dictionary))
        buffer.reserveCapacity(256)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Starts over with a newer dictionary (after another process added keys), dropping this encoder's additions.
    func reset(dictionary: KeyDictionary) {
        self.dictionary = dictionary
        addedNames = []
        addedTags = [:]
        expectedKeys = []
        state.pointee.fieldTags = []
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
        try encodeRecord(value) { try $0.encodeValue(value) }
    }

    /// Encodes a model as a whole record, through its generated code when it has some.
    func encodeModel<M: Model>(_ value: M) throws -> [UInt8] {
        try encodeRecord(value) { encoder in
            var writer = RecordWriter(encoder: encoder)
            try value._writeRecord(&writer)
        }
    }

    func encodeRecord<T>(_ value: T, _ body: (RecordEncoder) throws -> Void) throws -> [UInt8] {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(RecordFormat.version)
        open.removeAll(keepingCapacity: true)
        keySequence = 0
        misuse = nil
        valueDepth = 0
        pendingSuper = nil
        singleValueWritten = -1
        try body(self)
        fillPendingSuper()
        closeContainers(downTo: 0)
        if let misuse { throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: misuse)) }
        RecordFormat.seal(&buffer)
        return buffer
    }

    /// Encodes a value through `Codable` inside a container generated code is writing at `depth`, and closes
    /// what it opened, so generated code can go on writing after it.
    func encodeNested<T: Encodable>(_ value: T, depth: Int) throws {
        let outer = open.count
        valueDepth += depth
        defer { valueDepth -= depth }
        try encodeValue(value)
        fillPendingSuper()
        closeContainers(downTo: outer)
    }

    /// The tag of each field of `fields`; names the dictionary lacks are added, as `Codable` writes add them.
    func tags(for fields: RecordKeys) -> [UInt32] {
        for cached in state.pointee.fieldTags where cached.fields === fields { return cached.tags }
        let tags = fields.names.map { name in
            if let known = dictionary.tags[name] ?? addedTags[name] { return known }
            let tag = UInt32(dictionary.names.count + addedNames.count)
            addedNames.append(name)
            addedTags[name] = tag
            return tag
        }
        state.pointee.fieldTags.append((fields, tags))
        return tags
    }

    /// Starts a container of `type`; returns where its header is, for `closeContainer`.
    @inline(__always)
    func beginContainer(_ type: RecordFormat.ValueType) -> Int {
        put(type)
        let header = buffer.count
        buffer.append(contentsOf: RecordFormat.emptyContainerHeader)
        return header
    }

    /// Fills in the header of a container generated code wrote.
    @inline(__always)
    func closeContainer(header: Int, count: UInt32) {
        let payload = buffer.count - header - RecordFormat.containerHeaderSize
        buffer.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(truncatingIfNeeded: payload).littleEndian, toByteOffset: header, as: UInt32.self)
            raw.storeBytes(of: count.littleEndian, toByteOffset: header + 4, as: UInt32.self)
        }
    }

    @inline(__always)
    func putTag(_ tag: UInt32) { Varint.append(UInt64(tag) << 1, to: &buffer) }

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
            guard valueDepth < RecordFormat.maximumDepth - 1, open.count < RecordFormat.maximumDepth - 1 else {
                throw EncodingError.invalidValue(
                    value,
                    .init(
                        codingPath: [],
                        debugDescription: "the value is nested more than \(RecordFormat.maximumDepth - 2) levels "
                            + "deep, deeper than a record may be read back"))
            }
            let outer = currentValue
            valueSerial += 1
            currentValue = (valueSerial, open.count)
            valueDepth += 1
            defer {
                valueDepth -= 1
                currentValue = outer
            }
            let start = buffer.count
            if let list = value as? any LinkListCoding {
                try list.encodeLinkList(self)
            } else {
                try value.encode(to: self)
            }
            fillPendingSuper()
            // A value that wrote nothing still needs a value in the record: an empty keyed container.
            if buffer.count == start { _ = openContainer(isDictionary: false) }
        }
    }

    @inline(__always) private func put(_ type: RecordFormat.ValueType) { buffer.append(type.rawValue) }

    @inline(__always)
    private func putFixed<I: FixedWidthInteger>(_ type: RecordFormat.ValueType, _ value: I) {
        buffer.append(type.rawValue)
        // As typed `UInt8`: `Array` copies those in one move, raw buffers byte by byte.
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    func putNil() { put(.null) }
    func putBool(_ value: Bool) { put(value ? .true : .false) }
    func putString(_ value: String) {
        var value = value
        value.withUTF8 { putBytes(.string, $0) }
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
    func putInt128(_ value: Int128) { putFixed(.int128, value) }
    func putUInt128(_ value: UInt128) { putFixed(.uint128, value) }
    func putDate(_ value: Date) { putFixed(.date, value.timeIntervalSinceReferenceDate.bitPattern) }
    func putUUID(_ value: UUID) {
        put(.uuid)
        withUnsafeBytes(of: value.uuid) { buffer.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }
    func putBytes(_ type: RecordFormat.ValueType, _ bytes: some Collection<UInt8>) {
        put(type)
        Varint.append(UInt64(bytes.count), to: &buffer)
        buffer.append(contentsOf: bytes)
    }

    // MARK: Containers

    /// Makes the container at `depth` opened by value `serial` the innermost open one, closing finished inner
    /// ones. Returns `false` when that container was closed already (out-of-order use).
    @inline(__always)
    func activate(depth: Int, serial: Int) -> Bool {
        fillPendingSuper()
        if open.count - 1 > depth { closeContainers(downTo: depth + 1) }
        guard open.count - 1 == depth, open[depth].ownerSerial == serial else {
            refuse("a container was written to after a container around it, or beside it, had moved on")
            return false
        }
        return true
    }

    /// The serial of the value that opened the container at `depth`.
    func serial(at depth: Int) -> Int { depth < open.count ? open[depth].ownerSerial : -1 }

    /// The depth of a container that refuses every write: what a super encoder used wrongly hands out, after the
    /// misuse is recorded.
    let discardDepth = Int.max

    /// Opens a container for the current value, or returns the one it opened already (class hierarchies ask
    /// again through `super.encode(to:)`). Returns its depth.
    func openContainer(isDictionary: Bool, unkeyed: Bool = false) -> Int {
        fillPendingSuper()
        if singleValueWritten == currentValue.serial { refuse("a value wrote a single value and a container") }
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
        buffer.append(contentsOf: RecordFormat.emptyContainerHeader)
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
            closeContainer(header: container.headerOffset, count: container.count)
        }
    }

    @inline(__always) func countEntry(depth: Int) { open[depth].count += 1 }

    // MARK: Super encoders and single values

    /// Reserves the value of the entry just keyed or appended in the container at `depth` for a super encoder;
    /// returns the token the super encoder claims it with.
    func reserveSuperSlot(depth: Int) -> Int {
        valueSerial += 1
        pendingSuper = (valueSerial, depth)
        return valueSerial
    }

    /// Gives the super encoder `token` its slot, if nothing has been written since it was reserved. The value it
    /// writes next belongs to the slot's entry.
    func claimSuperSlot(_ token: Int) -> Bool {
        guard let pending = pendingSuper, pending.serial == token, open.count - 1 == pending.depth else {
            refuse("a super encoder was written to after its container had moved on, or twice")
            return false
        }
        pendingSuper = nil
        return true
    }

    /// The entry of a super encoder that nobody wrote to gets an empty keyed container, as JSON gets `{}`.
    @inline(__always)
    private func fillPendingSuper() {
        guard let pending = pendingSuper else { return }
        pendingSuper = nil
        if open.count - 1 > pending.depth { closeContainers(downTo: pending.depth + 1) }
        put(.keyed)
        buffer.append(contentsOf: RecordFormat.emptyContainerHeader)
    }

    /// Runs `body` as the value of the super encoder `token`'s entry, with a serial of its own.
    func asSuperValue<R>(_ token: Int, _ body: () -> R) -> R? {
        guard claimSuperSlot(token) else { return nil }
        let outer = currentValue
        valueSerial += 1
        currentValue = (valueSerial, open.count)
        defer { currentValue = outer }
        return body()
    }

    /// The serial a single-value container of the current value writes under.
    var currentSerial: Int { currentValue.serial }

    /// Whether a single-value container made for value `serial` may write now: that value is still the one being
    /// written, and has not written yet.
    func beginSingleValue(serial: Int) -> Bool {
        fillPendingSuper()
        guard currentValue.serial == serial, singleValueWritten != serial else {
            refuse("a single-value container was written twice, or after its value was done")
            return false
        }
        if open.count > currentValue.depth, open[currentValue.depth].ownerSerial == serial {
            refuse("a value wrote a container and a single value")
            return false
        }
        singleValueWritten = serial
        return true
    }

    /// Writes the key of an entry in the keyed container at `depth`.
    func putKey(_ name: String, intValue: Int?, depth: Int) {
        if open[depth].isDictionary {
            // Only a key whose text is its number's own spelling is stored as a number: "007" and "+1" in a
            // `[String: V]` stay text, so they neither change nor collide with "7" and "1".
            if let int = intValue, String(int) == name {
                buffer.append(3)
                Varint.append(UInt64(bitPattern: Int64((int << 1) ^ (int >> (Int.bitWidth - 1)))), to: &buffer)
            } else {
                let utf8 = name.utf8
                Varint.append(UInt64(utf8.count) << 2 | 1, to: &buffer)
                buffer.append(contentsOf: utf8)
            }
            noteKey(inline: name, depth: depth)
        } else {
            let tag = tag(for: name)
            Varint.append(UInt64(tag) << 1, to: &buffer)
            if tag < 64 {
                let bit = UInt64(1) << tag
                if open[depth].lowTags & bit != 0 {
                    refuse("the key \(quoted(name)) was written twice in one container")
                }
                open[depth].lowTags |= bit
            } else {
                noteKey(inline: name, depth: depth)
            }
        }
        open[depth].count += 1
    }

    private func noteKey(inline name: String, depth: Int) {
        if open[depth].otherKeys == nil { open[depth].otherKeys = [] }
        if open[depth].otherKeys?.insert(name).inserted == false {
            refuse("the key \(quoted(name)) was written twice in one container")
        }
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
        KeyedEncodingContainer(
            KeyedContainer(
                encoder: self, depth: openContainer(isDictionary: Key.self == RecordFormat.dictionaryKeyType)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(encoder: self, depth: openContainer(isDictionary: false, unkeyed: true))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(encoder: self, serial: currentSerial)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RecordEncoder
    let depth: Int
    /// The value that opened the container, so a sibling at the same depth is not mistaken for it.
    let serial: Int
    var codingPath: [any CodingKey] { [] }

    init(encoder: RecordEncoder, depth: Int) {
        self.encoder = encoder
        self.depth = depth
        self.serial = encoder.serial(at: depth)
    }

    @inline(__always)
    private func key(_ key: Key) -> Bool { named(key.stringValue, intValue: key.intValue) }

    private func named(_ name: String, intValue: Int?) -> Bool {
        guard encoder.activate(depth: depth, serial: serial) else { return false }
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
    mutating func encode(_ value: Int128, forKey k: Key) { if key(k) { encoder.putInt128(value) } }
    mutating func encode(_ value: UInt128, forKey k: Key) { if key(k) { encoder.putUInt128(value) } }
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
    mutating func encodeIfPresent(_ value: Int128?, forKey k: Key) {
        if let value { encode(value, forKey: k) } else { encodeNil(forKey: k) }
    }
    mutating func encodeIfPresent(_ value: UInt128?, forKey k: Key) {
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
        return SuperEncoder(encoder: encoder, token: encoder.reserveSuperSlot(depth: depth))
    }

    mutating func superEncoder(forKey k: Key) -> any Encoder {
        _ = key(k)
        return SuperEncoder(encoder: encoder, token: encoder.reserveSuperSlot(depth: depth))
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: RecordEncoder
    let depth: Int
    let serial: Int
    var codingPath: [any CodingKey] { [] }
    private(set) var count = 0

    init(encoder: RecordEncoder, depth: Int) {
        self.encoder = encoder
        self.depth = depth
        self.serial = encoder.serial(at: depth)
    }

    @inline(__always)
    private mutating func element() -> Bool {
        guard encoder.activate(depth: depth, serial: serial) else { return false }
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
    mutating func encode(_ value: Int128) { if element() { encoder.putInt128(value) } }
    mutating func encode(_ value: UInt128) { if element() { encoder.putUInt128(value) } }
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
        return SuperEncoder(encoder: encoder, token: encoder.reserveSuperSlot(depth: depth))
    }
}

/// Writes one value: the current value's own (`serial`), or a super encoder's entry (`superToken`).
private struct SingleValueContainer: SingleValueEncodingContainer {
    let encoder: RecordEncoder
    var serial = 0
    var superToken: Int?
    var codingPath: [any CodingKey] { [] }

    /// Whether this write may go ahead: the first and only one, while its value is being written.
    private func begin() -> Bool {
        if let superToken { return encoder.claimSuperSlot(superToken) }
        return encoder.beginSingleValue(serial: serial)
    }

    mutating func encodeNil() { if begin() { encoder.putNil() } }
    mutating func encode(_ value: Bool) { if begin() { encoder.putBool(value) } }
    mutating func encode(_ value: String) { if begin() { encoder.putString(value) } }
    mutating func encode(_ value: Double) { if begin() { encoder.putDouble(value) } }
    mutating func encode(_ value: Float) { if begin() { encoder.putFloat(value) } }
    mutating func encode(_ value: Int) { if begin() { encoder.putInt(value) } }
    mutating func encode(_ value: Int8) { if begin() { encoder.putInt8(value) } }
    mutating func encode(_ value: Int16) { if begin() { encoder.putInt16(value) } }
    mutating func encode(_ value: Int32) { if begin() { encoder.putInt32(value) } }
    mutating func encode(_ value: Int64) { if begin() { encoder.putInt64(value) } }
    mutating func encode(_ value: UInt) { if begin() { encoder.putUInt(value) } }
    mutating func encode(_ value: UInt8) { if begin() { encoder.putUInt8(value) } }
    mutating func encode(_ value: UInt16) { if begin() { encoder.putUInt16(value) } }
    mutating func encode(_ value: UInt32) { if begin() { encoder.putUInt32(value) } }
    mutating func encode(_ value: UInt64) { if begin() { encoder.putUInt64(value) } }
    mutating func encode(_ value: Int128) { if begin() { encoder.putInt128(value) } }
    mutating func encode(_ value: UInt128) { if begin() { encoder.putUInt128(value) } }
    mutating func encode<T: Encodable>(_ value: T) throws { if begin() { try encoder.encodeValue(value) } }
}

/// The encoder `superEncoder()` returns: the value the superclass writes is the entry's value. It must write
/// before anything else is written to the container it came from; if it never writes, the entry holds an empty
/// container.
private struct SuperEncoder: Encoder {
    let encoder: RecordEncoder
    let token: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let depth = encoder.asSuperValue(token) { encoder.openContainer(isDictionary: false) }
        return KeyedEncodingContainer(KeyedContainer(encoder: encoder, depth: depth ?? encoder.discardDepth))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let depth = encoder.asSuperValue(token) { encoder.openContainer(isDictionary: false, unkeyed: true) }
        return UnkeyedContainer(encoder: encoder, depth: depth ?? encoder.discardDepth)
    }
    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(encoder: encoder, superToken: token)
    }
}

extension RecordEncoder {
    /// Writes the id of a `Link` as the link's whole value: directly for the common primary-key types, through a
    /// single-value container otherwise, so both write the same bytes.
    func encodeLinkID<ID: Encodable>(_ id: ID) throws {
        if !putPrimaryKeyValue(id) {
            var container = singleValueContainer()
            try container.encode(id)
        }
    }

    /// Writes `id` when it is one of the common primary-key types, and says whether it was.
    private func putPrimaryKeyValue<ID: Encodable>(_ id: ID) -> Bool {
        if ID.self == Int64.self {
            putInt64(unsafeBitCast(id, to: Int64.self))
        } else if ID.self == Int.self {
            putInt(unsafeBitCast(id, to: Int.self))
        } else if ID.self == String.self {
            putString(unsafeBitCast(id, to: String.self))
        } else if ID.self == UUID.self {
            putUUID(unsafeBitCast(id, to: UUID.self))
        } else {
            return false
        }
        return true
    }

    /// Writes a list of links as `UnkeyedContainer` writes one: a container of the links' ids.
    func encodeLinkList<L: LinkIDCoding>(_ links: [L]) throws {
        let depth = openContainer(isDictionary: false, unkeyed: true)
        let serial = serial(at: depth)
        for link in links {
            guard activate(depth: depth, serial: serial) else { return }
            countEntry(depth: depth)
            if !putPrimaryKeyValue(link.id) { try encodeValue(link.id) }
        }
    }
}

/// Why a value could not be encoded, for `StoreError.encodingFailed`: what the encoder said, where, and at most the
/// first 64 characters of the value (a value may hold a megabyte of text).
func describeEncodingFailure(_ error: any Error) -> String {
    guard case EncodingError.invalidValue(let value, let context) = error else {
        let text = String(describing: error)
        return text.count <= 200 ? text : String(text.prefix(200)) + "…"
    }
    let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    let shown = String(describing: value)
    return context.debugDescription + (path.isEmpty ? "" : " at '\(path)'") + " (a \(type(of: value)): "
        + quoted(shown) + (shown.count > 64 ? ", \(shown.count) characters" : "") + ")"
}
