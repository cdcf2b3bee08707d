import Foundation
@_spi(Reflection) import Swift

/// Learns a model's schema from its `Decodable` conformance, so that users never write it twice: one value is decoded
/// from placeholders while every key, kind and optional the decoding asks for is noted.
enum SchemaCapture {
    /// Why a type could not be captured, with the coding path to the value that refused its placeholder.
    struct Failure: Error {
        let path: String
        let type: String
        let reason: String
    }

    /// A value capture could not make, with the shape it learnt all the same: a type that refuses placeholders is
    /// opaque, and a struct around it is described from its stored properties. A container around it answers
    /// empty and goes on; an optional answers `nil`. `failure` says what refused, for when nothing absorbs it.
    struct Refused: Error {
        let shape: ValueShape
        let failure: Failure
    }

    /// The fields of `type`'s records.
    static func properties<M: Model>(of type: M.Type) throws(Failure) -> [PropertyShape] {
        let context = Context()
        do {
            let (_, shape) = try context.capture(M.self, path: [])
            if case .object(let fields) = shape { return fields }
            return []
        } catch let refused as Refused {
            // The model itself needs no value: its shape is what opening compares.
            guard case .object(let fields) = refused.shape else { throw refused.failure }
            return fields
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(path: "", type: "\(M.self)", reason: "\(error)")
        }
    }

    /// What a whole capture shares: the types being decoded, outermost first, to stop at a type that contains itself,
    /// and what the capture may still spend.
    final class Context {
        var stack: [ObjectIdentifier] = []
        /// How many more values and containers the capture may hand out: a type whose decoding loops for as long as
        /// it is answered is stopped here, and refused in words.
        var budget = SchemaCapture.budget
        /// Set when a list was answered empty because it nested too deep: the value being captured is opaque.
        var truncated = false

        /// Counts one request of a type's decoding at `path`; throws once the capture has answered too many, or a
        /// value nests deeper than a record may.
        func spend(_ path: [any CodingKey]) throws {
            budget -= 1
            guard budget >= 0, stack.count < RecordFormat.maximumDepth / 2 else {
                throw Failure(
                    path: path.map(\.stringValue).joined(separator: "."), type: "the value",
                    reason:
                        "its decoding asked for more than \(SchemaCapture.budget) values, or nested deeper than "
                        + "\(RecordFormat.maximumDepth / 2) levels")
            }
        }

        func capture<T: Decodable>(_ type: T.Type, path: [any CodingKey]) throws -> (T, ValueShape) {
            try spend(path)
            if let scalar = Self.scalar(T.self) { return scalar }
            let identity = ObjectIdentifier(T.self)
            let isRecursive = stack.contains(identity)
            stack.append(identity)
            defer { stack.removeLast() }
            if let known = T.self as? any KnownShape.Type {
                let (value, shape) = try known.captured(in: self, path: path, isRecursive: isRecursive)
                if let value = value as? T { return (value, shape) }
            }
            // A type that gives a sample is never decoded from placeholders: its own value stands in.
            if let sample = T.self as? any SchemaSample.Type, let value = sample.schemaSample as? T {
                return (value, .opaque(String(describing: T.self)))
            }
            let decoder = CaptureDecoder(context: self, path: path, isRecursive: isRecursive)
            let outerTruncated = truncated
            truncated = false
            defer { truncated = outerTruncated }
            do {
                let value = try T(from: decoder)
                let isOpaque = isRecursive || decoder.choseACase || truncated
                return (value, isOpaque ? .opaque(String(describing: T.self)) : decoder.shape)
            } catch {
                // A raw-value enum rejects the placeholder: its first case will do, and the kind of its raw value has
                // been noted.
                if let cases = T.self as? any CaseIterable.Type, let first = Self.firstCase(cases) as? T {
                    return (first, decoder.shape)
                }
                if T.self is any RawRepresentable.Type, let zero = zeroValue(T.self) {
                    return (zero, decoder.shape)
                }
                if let failure = error as? Failure { throw failure }
                if let refused = error as? Refused {
                    // An enum whose chosen case holds a value that refused: opaque, as the enum is anyway.
                    guard !decoder.choseACase else {
                        throw Refused(shape: .opaque(String(describing: T.self)), failure: refused.failure)
                    }
                    // A field refused: this value has none to give, but its shape is known when its stored
                    // properties say what its synthesized decoding would have asked for after that field.
                    guard let fields = completedFields(T.self, decoder: decoder, path: path) else {
                        throw refused.failure
                    }
                    throw Refused(shape: .object(fields), failure: refused.failure)
                }
                // Refused by the type itself: opaque, judged by the records it is stored in.
                throw Refused(
                    shape: .opaque(String(describing: T.self)),
                    failure: Failure(
                        path: path.map(\.stringValue).joined(separator: "."), type: String(describing: T.self),
                        reason: Self.describe(error)))
            }
        }

        /// The fields of a struct whose decoding stopped at a field that refused placeholders: those it decoded,
        /// that one (opaque), and then its stored properties after it, as synthesized `Codable` names and decodes
        /// them. `nil` when the fields decoded so far are not its stored properties in order (custom coding keys,
        /// an enum, custom decoding): then what it asks for after that field cannot be known.
        private func completedFields<T>(_ type: T.Type, decoder: CaptureDecoder, path: [any CodingKey])
            -> [PropertyShape]?
        {
            guard case .object(let learnt) = decoder.content, let refusedKey = decoder.refusedKey,
                learnt.last?.name == refusedKey
            else { return nil }
            var stored: [(name: String, type: Any.Type)] = []
            _forEachField(of: T.self) { name, _, type, _ in
                stored.append((String(cString: name), type))
                return true
            }
            // Synthesized decoding asks for the stored properties in order; a constant with an initial value is
            // not decoded, so some may be passed over.
            var next = 0
            for field in learnt {
                guard let found = stored[next...].firstIndex(where: { $0.name == field.name }) else { return nil }
                next = found + 1
            }
            var fields = learnt.map { PropertyShape(name: $0.name, shape: $0.value.shape, isOptional: $0.isOptional) }
            for property in stored[next...] {
                guard let (shape, isOptional) = propertyShape(of: property.type, path: path) else { return nil }
                fields.append(PropertyShape(name: property.name, shape: shape, isOptional: isOptional))
            }
            return fields
        }

        /// The shape of a stored property's type, learnt without a value of its own: an optional is the shape of
        /// its wrapped type, and may be absent.
        func propertyShape(of type: Any.Type, path: [any CodingKey]) -> (ValueShape, isOptional: Bool)? {
            if let optional = type as? any OptionalProperty.Type {
                return propertyShape(of: optional.wrappedType, path: path).map { ($0.0, true) }
            }
            guard let decodable = type as? any Decodable.Type else { return nil }
            return (try? shape(of: decodable, path: path)).map { ($0, false) }
        }

        /// The shape of `type`, whether or not a value of it could be made.
        func shape<D: Decodable>(of type: D.Type, path: [any CodingKey]) throws -> ValueShape {
            do {
                return try capture(D.self, path: path).1
            } catch let refused as Refused {
                return refused.shape
            }
        }

        private static func firstCase<C: CaseIterable>(_ type: C.Type) -> Any? { C.allCases.first }

        /// Values that are stored as one scalar, whatever `Codable` form Foundation gives them. Text is not empty, so
        /// that a type of the user's that splits it finds a part.
        private static func scalar<T>(_ type: T.Type) -> (T, ValueShape)? {
            let found: (Any, ValueShape)? =
                switch T.self {
                case is Date.Type: (Date(timeIntervalSinceReferenceDate: 0), .date)
                case is Data.Type: (Data(), .data)
                case is UUID.Type: (UUID(uuid: nullUUID), .uuid)
                case is URL.Type: (URL(fileURLWithPath: "/"), .url)
                case is Decimal.Type: (Decimal(), .decimal)
                case is Bool.Type: (false, .bool)
                case is String.Type: ("0", .string)
                case is Double.Type: (0.0 as Double, .double)
                case is Float.Type: (0 as Float, .float)
                default: nil
                }
            if let found, let value = found.0 as? T { return (value, found.1) }
            if let integer = T.self as? any FixedWidthInteger.Type, let zero = integer.zero as? T {
                return (zero, .int)
            }
            return nil
        }

        private static func describe(_ error: any Error) -> String {
            if case DecodingError.keyNotFound(let key, _) = error {
                return "it needs the key \(quoted(key.stringValue))"
            }
            return DecodingFailure(error).reason
        }
    }

    /// `type`'s stored properties, in the order its records hold them, when its decoding is the one Swift
    /// synthesizes: the fields the capture learnt (`fields`) are its stored properties exactly, by name and in order,
    /// each of the shape and optionality of the property's declared type. `nil` for anything else (custom coding keys,
    /// an `init(from:)` that reads other keys or other kinds, a property it passes over, a class), whose properties
    /// cannot be tied to its fields by name.
    static func synthesizedFields<T>(of type: T.Type, fields: [PropertyShape]) -> [StoredProperty]? {
        var stored: [StoredProperty] = []
        let isStruct = _forEachField(of: T.self) { name, offset, type, _ in
            stored.append(StoredProperty(name: String(cString: name), offset: offset, type: type))
            return true
        }
        guard isStruct, stored.count == fields.count else { return nil }
        let context = Context()
        for (property, field) in zip(stored, fields) {
            guard property.name == field.name,
                let (shape, isOptional) = context.propertyShape(of: property.type, path: []),
                shape == field.shape, isOptional == field.isOptional
            else { return nil }
        }
        return stored
    }

    /// A struct's stored property, as its type's metadata lists it.
    struct StoredProperty {
        let name: String
        /// Its byte offset in the struct, as `MemoryLayout.offset(of:)` gives it for a key path to it.
        let offset: Int
        let type: Any.Type
    }

    /// How many values and containers one model's capture may hand out.
    static let budget = 20_000
    /// How deep, in types and containers, a list a type decodes itself still offers elements.
    static let deepestList = 16
}

/// A value of a plain-data type made of zero bytes: for an enum without payloads that is its first case, for a
/// struct of numbers its zero. Only such types get one; the value is used only to go on decoding.
func zeroValue<T>(_ type: T.Type) -> T? {
    guard _isPOD(T.self) else { return nil }
    let size = Swift.max(MemoryLayout<T>.size, 1)
    let raw = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<T>.alignment)
    defer { raw.deallocate() }
    raw.initializeMemory(as: UInt8.self, repeating: 0, count: size)
    return raw.load(as: T.self)
}

private let nullUUID: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

/// The decoder a captured value decodes from: it answers every request with a placeholder and notes what was asked.
private final class CaptureDecoder: Decoder {
    enum Content {
        case nothing
        case scalar(ValueShape)
        case object([(name: String, isOptional: Bool, value: CaptureDecoder)])
        case list(CaptureDecoder?)
    }

    let context: SchemaCapture.Context
    let codingPath: [any CodingKey]
    /// Set when this value's type is already being captured further out: its lists are empty and its optionals
    /// `nil`, so the capture ends.
    let isRecursive: Bool
    var content = Content.nothing
    /// Set when the value read `allKeys` and was offered its first key: an enum with associated values, which
    /// chose its first case. Its other cases are not seen, so its shape is opaque.
    var choseACase = false
    /// The key of the field whose value refused placeholders and ended this value's decoding.
    var refusedKey: String?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// How many containers this value's decoding opened around this one.
    let depth: Int

    init(context: SchemaCapture.Context, path: [any CodingKey], isRecursive: Bool, depth: Int = 0) {
        self.context = context
        self.codingPath = path
        self.isRecursive = isRecursive
        self.depth = depth
    }

    /// The decoder of a container nested in this one.
    func child(path: [any CodingKey]) -> CaptureDecoder {
        CaptureDecoder(context: context, path: path, isRecursive: isRecursive, depth: depth + 1)
    }

    /// How many elements a list this value's own decoding opens offers: two for its outermost list, one for a list
    /// nested in it, and none past `SchemaCapture.deepestList` levels of types and containers, so that decoding that
    /// walks nested lists for as long as they have elements ends (the value's shape is then opaque).
    var listLength: Int {
        if isRecursive { return 0 }
        guard context.stack.count + depth < SchemaCapture.deepestList else {
            context.truncated = true
            return 0
        }
        return depth == 0 ? 2 : 1
    }

    static func fixed(_ shape: ValueShape, context: SchemaCapture.Context) -> CaptureDecoder {
        let decoder = CaptureDecoder(context: context, path: [], isRecursive: false)
        decoder.content = .scalar(shape)
        return decoder
    }

    var shape: ValueShape {
        switch content {
        case .nothing: .object([])
        case .scalar(let shape): shape
        case .object(let fields):
            .object(fields.map { PropertyShape(name: $0.name, shape: $0.value.shape, isOptional: $0.isOptional) })
        case .list(let element): .list(element?.shape ?? .opaque("unknown"))
        }
    }

    /// Notes a field of this keyed value; the first note of a key wins.
    func note(_ name: String, isOptional: Bool, value: CaptureDecoder) {
        guard case .object(var fields) = content else { return }
        guard !fields.contains(where: { $0.name == name }) else { return }
        fields.append((name, isOptional, value))
        content = .object(fields)
    }

    /// Captures a value of `T` below this one and returns it with the decoder that noted its shape.
    func captureChild<T: Decodable>(_ type: T.Type, key: (any CodingKey)?) throws -> (T, CaptureDecoder) {
        let path = key.map { codingPath + [$0] } ?? codingPath
        let (value, shape) = try context.capture(T.self, path: path)
        return (value, .fixed(shape, context: context))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try context.spend(codingPath)
        if case .object = content {} else { content = .object([]) }
        return KeyedDecodingContainer(ObjectContainer(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try context.spend(codingPath)
        content = .list(nil)
        return ListContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try context.spend(codingPath)
        return SingleContainer(decoder: self)
    }
}

/// A struct's fields: each decode notes the key, its kind and whether it may be absent.
private struct ObjectContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: CaptureDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    /// No keys for a struct, whose synthesized decoding never asks. An enum with associated values asks, and must
    /// find exactly one: the first case of its coding keys is offered (for a synthesized `CodingKeys` enum, the
    /// value of zero bytes), so that its decoding goes on with a real case.
    var allKeys: [Key] {
        guard !decoder.isRecursive, let first = zeroValue(Key.self) else { return [] }
        decoder.choseACase = true
        return [first]
    }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    private func required<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        do {
            let (value, child) = try decoder.captureChild(T.self, key: key)
            decoder.note(key.stringValue, isOptional: false, value: child)
            return value
        } catch let refused as SchemaCapture.Refused {
            decoder.note(key.stringValue, isOptional: false, value: .fixed(refused.shape, context: decoder.context))
            decoder.refusedKey = key.stringValue
            throw refused
        }
    }

    private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        guard !decoder.isRecursive else {
            decoder.note(
                key.stringValue, isOptional: true, value: .fixed(.opaque("\(T.self)"), context: decoder.context))
            return nil
        }
        do {
            let (value, child) = try decoder.captureChild(T.self, key: key)
            decoder.note(key.stringValue, isOptional: true, value: child)
            return value
        } catch let refused as SchemaCapture.Refused {
            // An optional field may be absent: `nil` lets the decoding go on.
            decoder.note(key.stringValue, isOptional: true, value: .fixed(refused.shape, context: decoder.context))
            return nil
        }
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try required(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try required(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try required(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try required(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try required(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try required(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try required(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try required(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try required(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try required(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try required(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try required(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try required(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try required(type, key) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try required(type, key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try required(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try required(type, key) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optional(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optional(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(type, key) }
    func decodeIfPresent(_ type: Int128.Type, forKey key: Key) throws -> Int128? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) throws -> UInt128? { try optional(type, key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try optional(type, key) }

    func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
        let child = decoder.child(path: codingPath + [key])
        decoder.note(key.stringValue, isOptional: false, value: child)
        return try child.container(keyedBy: N.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let child = decoder.child(path: codingPath + [key])
        decoder.note(key.stringValue, isOptional: false, value: child)
        return try child.unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let child = decoder.child(path: codingPath)
        decoder.note("super", isOptional: false, value: child)
        return child
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        let child = decoder.child(path: codingPath + [key])
        decoder.note(key.stringValue, isOptional: false, value: child)
        return child
    }
}

/// The elements of a list a type of the user's decodes itself (`CaptureDecoder.listLength` says how many), so that
/// their kind is seen and code that reads the second finds it; asking past them throws, as for a real list.
private struct ListContainer: UnkeyedDecodingContainer {
    let decoder: CaptureDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    let count: Int?
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex >= (count ?? 0) }

    init(decoder: CaptureDecoder) {
        self.decoder = decoder
        count = decoder.listLength
    }

    mutating func decodeNil() throws -> Bool { false }

    /// Moves to the next element, or throws as a real list does at its end.
    private mutating func next<T>(_ type: T.Type) throws {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                T.self, .init(codingPath: codingPath, debugDescription: "the list has no more elements"))
        }
        currentIndex += 1
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(T.self)
        let (value, child) = try decoder.captureChild(T.self, key: nil)
        decoder.content = .list(child)
        return value
    }

    // The protocol's own `Int128` and `UInt128` requirements throw unless a container implements them.
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try decode(Int128?.self) ?? 0 }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try decode(UInt128?.self) ?? 0 }

    mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
        try next(KeyedDecodingContainer<N>.self)
        let child = decoder.child(path: codingPath)
        decoder.content = .list(child)
        return try child.container(keyedBy: N.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self)
        let child = decoder.child(path: codingPath)
        decoder.content = .list(child)
        return try child.unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { decoder }
}

/// A single value: a scalar notes its kind; anything else is captured as the value itself.
private struct SingleContainer: SingleValueDecodingContainer {
    let decoder: CaptureDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try capture(type) }
    func decode(_ type: Bool.Type) throws -> Bool { try capture(type) }
    func decode(_ type: String.Type) throws -> String { try capture(type) }
    func decode(_ type: Double.Type) throws -> Double { try capture(type) }
    func decode(_ type: Float.Type) throws -> Float { try capture(type) }
    func decode(_ type: Int.Type) throws -> Int { try capture(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try capture(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try capture(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try capture(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try capture(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try capture(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try capture(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try capture(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try capture(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try capture(type) }
    func decode(_ type: Int128.Type) throws -> Int128 { try capture(type) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try capture(type) }

    private func capture<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, child) = try decoder.captureChild(T.self, key: nil)
        decoder.content = child.content
        return value
    }
}

/// `Optional`, seen from a stored property's type: its wrapped type.
private protocol OptionalProperty {
    static var wrappedType: Any.Type { get }
}

extension Optional: OptionalProperty {
    static var wrappedType: Any.Type { Wrapped.self }
}
