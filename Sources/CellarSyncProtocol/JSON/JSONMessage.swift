/// A message of the sync protocol: read from and written as JSON by this module's codec, so that the record values
/// inside travel exactly (``JSONNumber``).
public protocol JSONMessage: Sendable {
    /// Reads the message from a parsed body, or says where and why it is not one.
    init(json: JSONValue) throws(JSONShapeError)
    /// The message as JSON.
    var json: JSONValue { get }
}

extension JSONMessage {
    /// Reads the message from a body.
    public init(jsonBytes bytes: some Sequence<UInt8>) throws(JSONShapeError) {
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw JSONShapeError(path: "", reason: "not JSON: \(error)")
        }
        try self.init(json: value)
    }

    /// The message as a body.
    public var jsonBytes: [UInt8] { json.serialized() }
}

/// Why JSON is not the message a reader expected: where in it, and what was wrong there.
public struct JSONShapeError: Error, Sendable, CustomStringConvertible {
    /// Where, as `changes[3].state.stamps`; empty for the top level.
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "at \(path): \(reason)" }
}

/// The members of a JSON object, read by name with errors that say where.
public struct JSONFields: Sendable {
    public let members: [String: JSONValue]
    public let path: String

    public init(_ value: JSONValue, path: String = "") throws(JSONShapeError) {
        guard case .object(let members) = value else {
            throw JSONShapeError(path: path, reason: "expected an object, found \(value.kind)")
        }
        self.members = members
        self.path = path
    }

    public func place(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    public func value(_ key: String) throws(JSONShapeError) -> JSONValue {
        guard let value = members[key], value != .null else {
            throw JSONShapeError(path: place(key), reason: "missing")
        }
        return value
    }

    public func optional(_ key: String) -> JSONValue? {
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    public func string(_ key: String) throws(JSONShapeError) -> String {
        try Self.string(try value(key), at: place(key))
    }

    public func optionalString(_ key: String) throws(JSONShapeError) -> String? {
        guard let value = optional(key) else { return nil }
        return try Self.string(value, at: place(key))
    }

    public func integer(_ key: String) throws(JSONShapeError) -> Int64 {
        try Self.integer(try value(key), at: place(key))
    }

    public func optionalInteger(_ key: String) throws(JSONShapeError) -> Int64? {
        guard let value = optional(key) else { return nil }
        return try Self.integer(value, at: place(key))
    }

    public func int(_ key: String) throws(JSONShapeError) -> Int {
        let value = try integer(key)
        guard let int = Int(exactly: value), (Int(Int32.min)...Int(Int32.max)).contains(int) else {
            throw JSONShapeError(path: place(key), reason: "\(value) is out of range")
        }
        return int
    }

    public func bool(_ key: String) throws(JSONShapeError) -> Bool {
        guard case .bool(let value) = try value(key) else {
            throw JSONShapeError(path: place(key), reason: "expected true or false")
        }
        return value
    }

    public func array(_ key: String) throws(JSONShapeError) -> [JSONValue] {
        let value = try value(key)
        guard case .array(let values) = value else {
            throw JSONShapeError(path: place(key), reason: "expected an array, found \(value.kind)")
        }
        return values
    }

    public func object(_ key: String) throws(JSONShapeError) -> [String: JSONValue] {
        let value = try value(key)
        guard case .object(let members) = value else {
            throw JSONShapeError(path: place(key), reason: "expected an object, found \(value.kind)")
        }
        return members
    }

    public func optionalObject(_ key: String) throws(JSONShapeError) -> [String: JSONValue]? {
        guard optional(key) != nil else { return nil }
        return try object(key)
    }

    public static func string(_ value: JSONValue, at path: String) throws(JSONShapeError) -> String {
        guard case .string(let text) = value else {
            throw JSONShapeError(path: path, reason: "expected a string, found \(value.kind)")
        }
        return text
    }

    public static func integer(_ value: JSONValue, at path: String) throws(JSONShapeError) -> Int64 {
        guard case .number(let number) = value, let integer = number.int64Value else {
            throw JSONShapeError(path: path, reason: "expected an integer, found \(value.kind)")
        }
        return integer
    }
}

extension JSONValue {
    /// What kind of value this is, in words.
    public var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number(let number): "the number \(number.text.prefix(40))"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
