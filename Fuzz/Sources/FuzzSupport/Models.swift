import Cellar
import Foundation

/// A model with every kind of property the README says works, read through `Codable`: indexes of one value, a
/// unique one, one of list elements, a full-text index and a link.
public struct FuzzPet: Model, Equatable {
    public var id: String
    public var age: Int
    public var name: String
    public var tags: [String]
    public var born: Date
    public var photo: Data
    public var owner: Link<FuzzOwner>?
    public var shape: Shape
    public var scores: [String: Double]
    public var huge: Int128
    public var chip: UUID?
    public var home: URL?
    public var price: Decimal
    public var flags: Set<UInt16>
    public var weight: Float

    public enum Shape: Codable, Equatable, Sendable {
        case circle(radius: Double)
        case label(String, size: Int8)
        case none
    }

    public static let schema = Schema<FuzzPet>(
        indexes: [.index(\.age), .unique(\.name), .index(\.tags), .fullText(\.name)],
        links: [.link(\.owner, allowsDangling: true)])

    public static func sample(_ n: Int) -> FuzzPet {
        FuzzPet(
            id: "pet-\(n)", age: n % 12, name: "Pet number \(n)", tags: ["t\(n % 3)", "all"],
            born: Date(timeIntervalSinceReferenceDate: Double(n) * 86_400), photo: Data([UInt8(n), 0, 255]),
            owner: n % 2 == 0 ? Link(id: Int64(n % 3 + 1)) : nil,
            shape: n % 3 == 0 ? .circle(radius: Double(n)) : n % 3 == 1 ? .label("l\(n)", size: Int8(n % 100)) : .none,
            scores: ["speed": Double(n) / 3], huge: Int128(n) << 80, chip: n % 2 == 0 ? nil : UUID(),
            home: URL(string: "https://example.com/\(n)"), price: Decimal(n) / 4, flags: [UInt16(n), 7],
            weight: Float(n) * 1.5)
    }
}

/// A model read through generated record code: what `@Record` writes for it (the macro's tests pin this expansion),
/// written out here so that fuzzing builds no swift-syntax.
public struct FuzzOwner: Model, Equatable {
    public var id: Int64 = 0
    public var name: String
    public var pets: [Link<FuzzPet>]
    public var address: Address?

    public struct Address: Codable, Equatable, Sendable {
        public var street: String
        public var zip: Int32
    }

    public static let schema = Schema<FuzzOwner>(
        autoIncrement: true, indexes: [.index(\.name)], links: [.link(\.pets, deleteRule: .cascade)])

    public static func sample(_ n: Int) -> FuzzOwner {
        FuzzOwner(
            id: Int64(n), name: "Owner \(n)", pets: (0..<n).map { Link(id: "pet-\($0)") },
            address: n % 2 == 0 ? Address(street: "Elm \(n)", zip: Int32(10_000 + n)) : nil)
    }
}

extension FuzzOwner: Cellar.RecordCodable {
    public static let recordKeys = Cellar.RecordKeys(["id", "name", "pets", "address"])

    public init(record reader: inout Cellar.RecordReader) throws {
        var fields = try reader.beginFields(of: Self.recordKeys)
        self.id = try reader.value(field: 0, of: &fields)
        self.name = try reader.value(field: 1, of: &fields)
        self.pets = try reader.value(field: 2, of: &fields)
        self.address = try reader.value(field: 3, of: &fields)
        reader.endFields(fields)
    }

    public func write(record writer: inout Cellar.RecordWriter) throws {
        var fields = try writer.beginFields(of: Self.recordKeys)
        try writer.write(self.id, field: 0, in: &fields)
        try writer.write(self.name, field: 1, in: &fields)
        try writer.write(self.pets, field: 2, in: &fields)
        try writer.write(self.address, field: 3, in: &fields)
        writer.endFields(fields)
    }

    public static func recordField(for keyPath: PartialKeyPath<Self>) -> Int? {
        if keyPath == \Self.id {
            return 0
        }
        if keyPath == \Self.name {
            return 1
        }
        if keyPath == \Self.pets {
            return 2
        }
        if keyPath == \Self.address {
            return 3
        }
        return nil
    }
}

/// The models every store of the fuzz targets holds.
let fuzzModels: [any Model.Type] = [FuzzPet.self, FuzzOwner.self]
