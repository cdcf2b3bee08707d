import Foundation

// The standard types generated code reads and writes directly, each as `RecordEncoder` writes it through
// `Codable`.

/// A `Bool` reads and writes itself in a `@Record` type's record as `Codable` stores it.
extension Bool: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Bool { try reader.readBool() }
    public func write(to writer: inout RecordWriter) { writer.writeBool(self) }
}

/// A `String` reads and writes itself in a `@Record` type's record as `Codable` stores it.
extension String: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> String { try reader.readString() }
    public func write(to writer: inout RecordWriter) { writer.writeString(self) }
}

/// A `Double` reads and writes itself in a `@Record` type's record as `Codable` stores it.
extension Double: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Double { try reader.readDouble() }
    public func write(to writer: inout RecordWriter) { writer.writeDouble(self) }
}

/// A `Float` reads and writes itself in a `@Record` type's record as `Codable` stores it.
extension Float: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Float { try reader.readFloat() }
    public func write(to writer: inout RecordWriter) { writer.writeFloat(self) }
}

/// An `Int` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension Int: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Int { try reader.readInteger(Int.self) }
    public func write(to writer: inout RecordWriter) { writer.writeInt(self) }
}

/// An `Int8` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension Int8: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Int8 { try reader.readInteger(Int8.self) }
    public func write(to writer: inout RecordWriter) { writer.writeInt8(self) }
}

/// An `Int16` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension Int16: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Int16 { try reader.readInteger(Int16.self) }
    public func write(to writer: inout RecordWriter) { writer.writeInt16(self) }
}

/// An `Int32` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension Int32: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Int32 { try reader.readInteger(Int32.self) }
    public func write(to writer: inout RecordWriter) { writer.writeInt32(self) }
}

/// An `Int64` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension Int64: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Int64 { try reader.readInteger(Int64.self) }
    public func write(to writer: inout RecordWriter) { writer.writeInt64(self) }
}

/// An `UInt` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension UInt: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> UInt { try reader.readInteger(UInt.self) }
    public func write(to writer: inout RecordWriter) { writer.writeUInt(self) }
}

/// An `UInt8` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension UInt8: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> UInt8 { try reader.readInteger(UInt8.self) }
    public func write(to writer: inout RecordWriter) { writer.writeUInt8(self) }
}

/// An `UInt16` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension UInt16: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> UInt16 {
        try reader.readInteger(UInt16.self)
    }
    public func write(to writer: inout RecordWriter) { writer.writeUInt16(self) }
}

/// An `UInt32` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension UInt32: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> UInt32 {
        try reader.readInteger(UInt32.self)
    }
    public func write(to writer: inout RecordWriter) { writer.writeUInt32(self) }
}

/// An `UInt64` reads and writes itself in a `@Record` type's record as `Codable` stores it; a stored integer of another width reads when its value fits.
extension UInt64: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> UInt64 {
        try reader.readInteger(UInt64.self)
    }
    public func write(to writer: inout RecordWriter) { writer.writeUInt64(self) }
}

/// A `Data` reads and writes itself in a `@Record` type's record in the form `RecordEncoder` gives it.
extension Data: RecordStorable {
    public static func read(from reader: inout RecordReader) throws -> Data { try reader.readData() }
    public func write(to writer: inout RecordWriter) { writer.writeData(self) }
}

/// A `Date` reads and writes itself in a `@Record` type's record in the form `RecordEncoder` gives it.
extension Date: RecordStorable {
    public static func read(from reader: inout RecordReader) throws -> Date { try reader.readDate() }
    public func write(to writer: inout RecordWriter) { writer.writeDate(self) }
}

/// A `UUID` reads and writes itself in a `@Record` type's record in the form `RecordEncoder` gives it.
extension UUID: RecordStorable {
    public static func read(from reader: inout RecordReader) throws -> UUID { try reader.readUUID() }
    public func write(to writer: inout RecordWriter) { writer.writeUUID(self) }
}

/// A `URL` reads and writes itself in a `@Record` type's record in the form `RecordEncoder` gives it.
extension URL: RecordStorable {
    public static func read(from reader: inout RecordReader) throws -> URL { try reader.readURL() }
    public func write(to writer: inout RecordWriter) { writer.writeURL(self) }
}

/// A `Decimal` reads and writes itself in a `@Record` type's record in the form `RecordEncoder` gives it.
extension Decimal: RecordStorable {
    public static func read(from reader: inout RecordReader) throws -> Decimal { try reader.readDecimal() }
    public func write(to writer: inout RecordWriter) { writer.writeDecimal(self) }
}

/// `nil` is stored as a null value, in a list as in a property.
extension Optional: RecordStorable where Wrapped: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Wrapped? {
        try reader.readNil() ? nil : try Wrapped.read(from: &reader)
    }
    @inlinable
    public func write(to writer: inout RecordWriter) throws {
        if let self { try self.write(to: &writer) } else { writer.writeNil() }
    }
}

/// An array is stored as an unkeyed container of its elements.
extension Array: RecordStorable where Element: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> [Element] {
        var elements: [Element] = []
        try reader.readElements { reader, count in
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(try Element.read(from: &reader)) }
        }
        return elements
    }
    @inlinable
    public func write(to writer: inout RecordWriter) throws {
        try writer.writeElements(count: count) { writer in
            for element in self { try element.write(to: &writer) }
        }
    }
}

/// A set is stored as an unkeyed container of its elements, as an array is.
extension Set: RecordStorable where Element: RecordStorable {
    @inlinable @inline(__always)
    public static func read(from reader: inout RecordReader) throws -> Set<Element> {
        var elements: Set<Element> = []
        try reader.readElements { reader, count in
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.insert(try Element.read(from: &reader)) }
        }
        return elements
    }
    @inlinable
    public func write(to writer: inout RecordWriter) throws {
        try writer.writeElements(count: count) { writer in
            for element in self { try element.write(to: &writer) }
        }
    }
}
