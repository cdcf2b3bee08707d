import CellarMacros
import Foundation

@testable import Cellar

/// The benchmark's `Dog` with generated record code, stored under the same name as `Dog`: either type reads
/// the other's records.
@Record
struct FastDog: Model, Equatable {
    var id: Int64 = 0
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<FastDog>(name: "Dog", autoIncrement: true)
}

/// Every kind of property generated code handles, directly or through `Codable`.
@Record
struct Everything: Equatable {
    @Record
    struct Inner: Equatable, Hashable {
        var label: String
        var weights: [Double]
    }

    /// Stored through `Codable`: no `@Record`.
    struct Plain: Codable, Equatable {
        var x: Int
        var y: String?
    }

    enum Color: String, Codable {
        case red, green
    }

    var flag: Bool
    var int: Int
    var int8: Int8
    var int16: Int16
    var int32: Int32
    var int64: Int64
    var uint: UInt
    var uint8: UInt8
    var uint16: UInt16
    var uint32: UInt32
    var uint64: UInt64
    var float: Float
    var double: Double
    var text: String
    var data: Data
    var date: Date
    var uuid: UUID
    var url: URL
    var decimal: Decimal
    var maybe: Int?
    var list: [String]
    var optionals: [Int?]
    var tags: Set<String>
    var matrix: [[Int]]
    var inner: Inner
    var inners: [Inner]
    var maybeInner: Inner?
    var plain: Plain
    var color: Color
    var maybeColor: Color?
    var table: [String: Int]
    var `default`: String
    var observed: Int = 0 {
        didSet { _ = oldValue }
    }
    var computed: Int { int * 2 }
    static let shared = 0

    static func sample(_ seed: Int) -> Everything {
        Everything(
            flag: seed % 2 == 0, int: seed, int8: Int8(truncatingIfNeeded: seed), int16: -16, int32: 32,
            int64: Int64(seed) << 40, uint: 1, uint8: 8, uint16: 16, uint32: 32, uint64: .max, float: 1.5,
            double: Double(seed) / 3, text: "héllo \(seed)", data: Data([1, 2, UInt8(truncatingIfNeeded: seed)]),
            date: Date(timeIntervalSinceReferenceDate: Double(seed)), uuid: UUID(),
            url: URL(string: "https://x.y/\(seed)")!,
            decimal: Decimal(string: "12.34")!, maybe: seed % 3 == 0 ? nil : seed, list: ["a", "b"],
            optionals: [1, nil, 3], tags: ["t\(seed % 4)"], matrix: [[1], [], [2, 3]],
            inner: Inner(label: "in", weights: [0.5]),
            inners: [Inner(label: "a", weights: []), Inner(label: "b", weights: [1])],
            maybeInner: seed % 2 == 0 ? nil : Inner(label: "m", weights: [2]), plain: Plain(x: seed, y: nil),
            color: .green, maybeColor: seed % 2 == 0 ? .red : nil, table: ["k": seed], default: "d")
    }
}

/// Encodes `value` through its generated code.
func generatedBytes<T: RecordCodable>(_ value: T, dictionary: KeyDictionary = .empty) throws -> (
    [UInt8], KeyDictionary
) {
    let encoder = RecordEncoder(dictionary: dictionary)
    let bytes = try encoder.encodeRecord(value) { encoder in
        var writer = RecordWriter(encoder: encoder)
        try value.write(record: &writer)
    }
    return (bytes, encoder.absorbAddedNames())
}

/// Reads `bytes` through `T`'s generated code.
func readGenerated<T: RecordCodable>(_ type: T.Type, _ bytes: [UInt8], dictionary: KeyDictionary) throws -> T {
    let decoder = RecordDecoder()  // held here: a reader does not keep its decoder alive
    return try bytes.withUnsafeBytes { raw in
        var reader = RecordReader(
            decoder: decoder, dictionary: dictionary, bytes: try RecordFormat.body(of: raw), offset: 1)
        return try withExtendedLifetime(decoder) { try T(record: &reader) }
    }
}
/// Writes differently through its record code than through `Codable` (which no real type may do), to tell which ran.
struct Marker: RecordStorable, Equatable {
    var n: Int
    init(n: Int) { self.n = n }
    init(from decoder: any Decoder) throws { n = try decoder.singleValueContainer().decode(Int.self) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(n)
    }
    static func read(from reader: inout RecordReader) throws -> Marker { Marker(n: try reader.readString().count) }
    func write(to writer: inout RecordWriter) { writer.writeString(String(repeating: "x", count: n)) }
}

@Record
struct Probed: Model, Equatable {
    var id: Int
    var marker: Marker
}

/// Keys renamed in an extension, where `@Record` cannot see them: `Codable` stores `full_name`.
@Record
struct RenamedInExtension: Model {
    var id: Int
    var name: String
}

extension RenamedInExtension {
    enum CodingKeys: String, CodingKey {
        case id
        case name = "full_name"
    }
}

/// Encoding changed in an extension: `Codable` writes the name in capitals, which generated code does not.
@Record
struct EncodedInExtension: Model {
    var id: Int
    var name: String
}

extension EncodedInExtension {
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name.uppercased(), forKey: .name)
    }
}

/// The cross-feature suite's owner: generated code, an index, a cascading owned list of pets of a plain `Codable`
/// model whose properties are of the kinds capture must not decode from placeholders.
@Record
struct CrossOwner: Model, Equatable {
    var id: Int64 = 0
    var name: String
    var pets: [Link<CrossPet>] = []
    static let schema = Schema<CrossOwner>(
        autoIncrement: true, indexes: [.unique(\.name)], links: [.link(\.pets, deleteRule: .cascade, ownsTargets: true)]
    )
}

struct CrossPet: Model, Equatable {
    var id: String
    var age: Int
    var shape: PropertyTypes.Shape
    var zone: TimeZone
    var flavours: [PropertyTypes.Flavour: Bool]
    var huge: Int128
    var tags: [String]
    var note: String?
    static let schema = Schema<CrossPet>(indexes: [.index(\.age), .index(\.tags)])
}
