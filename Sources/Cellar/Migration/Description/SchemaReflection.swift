import Foundation
@_spi(Reflection) import Swift

/// Learns a model's fields from its type's metadata, the stored properties Swift records for every struct: their
/// names, in declaration order, and their types (a property wrapper's storage `_name` by its property's name `name`,
/// a lazy property's storage left out, as synthesized `Codable` does). Nothing of the model's runs: no `init(from:)`, no `encode(to:)`, no
/// value is made. This is the shape synthesized `Codable` gives a struct; a type that codes itself another way is
/// described by its properties all the same, and its stored records decide whether it still reads them (opening
/// decodes them when the description changes).
enum SchemaReflection {
    /// The fields of `type`'s records, as its stored properties describe them.
    static func properties<M: Model>(of type: M.Type) -> [PropertyShape] {
        let context = Context()
        guard case .object(let fields) = context.shape(of: M.self) else { return [] }
        return fields
    }

    /// `type`'s stored properties, in declaration order, by the names synthesized `Codable` gives them, when `type`
    /// is a struct whose metadata lists them; `nil` for any other type (an enum, whose payloads are not properties, a
    /// class, a tuple) and for a struct built without reflection metadata (`-disable-reflection-metadata` or
    /// `-disable-reflection-names`, which leave no fields or no names).
    static func storedProperties(of type: Any.Type) -> [StoredProperty]? {
        guard kind(of: type) == .struct else { return nil }
        var stored: [StoredProperty] = []
        var named = true
        _ = _forEachField(of: type) { name, offset, type, _ in
            let name = String(cString: name)
            named = named && !name.isEmpty
            // A lazy property's storage is not coded; a property wrapper's storage `_name` is coded as `name`.
            guard !name.hasPrefix("$__lazy_storage_$_") else { return true }
            let coded = name.hasPrefix("_") && name.count > 1 ? String(name.dropFirst()) : name
            stored.append(StoredProperty(name: coded, offset: offset, type: type))
            return true
        }
        guard named, !stored.isEmpty || isEmptyStruct(type) else { return nil }
        return stored
    }

    /// Whether a struct holds no bytes at all, as one without stored properties does.
    private static func isEmptyStruct(_ type: Any.Type) -> Bool {
        func size<T>(_: T.Type) -> Int { MemoryLayout<T>.size }
        return _openExistential(type, do: size) == 0
    }

    /// What kind of type `type` is, as its metadata says: the kind of the one field of a struct that holds it.
    private static func kind(of type: Any.Type) -> _MetadataKind? {
        func kind<T>(_: T.Type) -> _MetadataKind? {
            var found: _MetadataKind?
            _ = _forEachField(of: Holder<T>.self) { _, _, _, kind in
                found = kind
                return false
            }
            return found
        }
        return _openExistential(type, do: kind)
    }

    private struct Holder<T> {
        var value: T
    }

    /// A struct's stored property, as its type's metadata lists it.
    struct StoredProperty {
        let name: String
        /// Its byte offset in the struct, as `MemoryLayout.offset(of:)` gives it for a key path to it.
        let offset: Int
        let type: Any.Type
    }

    /// What one description shares: the types being described, outermost first, so that a type that contains
    /// itself ends as `opaque`.
    final class Context {
        private var stack: [ObjectIdentifier] = []

        /// The shape of a value of `type` in its `Codable` form.
        func shape(of type: Any.Type) -> ValueShape {
            if let scalar = Self.scalar(type) { return scalar }
            if let known = type as? any KnownShape.Type { return known.describedShape(in: self) }
            if let raw = type as? any RawRepresentable.Type, type is any Decodable.Type,
                let shape = Self.scalar(Self.rawValueType(raw))
            {
                // A raw-value enum, stored as its raw value by `RawRepresentable`'s `Codable` conformance.
                return shape
            }
            let identity = ObjectIdentifier(type)
            guard type is any Decodable.Type, !stack.contains(identity),
                let stored = SchemaReflection.storedProperties(of: type)
            else { return .opaque(Self.name(of: type)) }
            stack.append(identity)
            defer { stack.removeLast() }
            return .object(stored.map { property(named: $0.name, type: $0.type) })
        }

        /// A stored property's field: an optional may be absent, and has its wrapped type's shape.
        func property(named name: String, type: Any.Type) -> PropertyShape {
            if let optional = type as? any OptionalProperty.Type {
                return PropertyShape(name: name, shape: shape(of: optional.wrappedType), isOptional: true)
            }
            return PropertyShape(name: name, shape: shape(of: type), isOptional: false)
        }

        /// How a type is named in an opaque shape: as `String(describing:)` names it (`Status`, `Array<Child>`).
        static func name(of type: Any.Type) -> String { String(describing: type) }

        private static func rawValueType<R: RawRepresentable>(_ type: R.Type) -> Any.Type { R.RawValue.self }

        /// Values stored as one scalar, whatever `Codable` form Foundation gives them.
        static func scalar(_ type: Any.Type) -> ValueShape? {
            switch type {
            case is Date.Type: .date
            case is Data.Type: .data
            case is UUID.Type: .uuid
            case is URL.Type: .url
            case is Decimal.Type: .decimal
            case is Bool.Type: .bool
            case is String.Type: .string
            case is Double.Type: .double
            case is Float.Type: .float
            case is any FixedWidthInteger.Type: .int
            default: nil
            }
        }
    }
}

/// `Optional`, seen from a stored property's type: its wrapped type.
protocol OptionalProperty {
    static var wrappedType: Any.Type { get }
}

extension Optional: OptionalProperty {
    static var wrappedType: Any.Type { Wrapped.self }
}
