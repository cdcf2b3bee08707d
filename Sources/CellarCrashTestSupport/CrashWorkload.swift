// The workloads of Cellar's power-loss tests, shared by the process that runs them under the write log
// (`cellar-test-helper crash-workload`) and the tests that open every state a power cut could leave.
import Cellar
import Foundation

/// An item with an index, a unique index and a full-text index: inserts, updates and deletes keep five databases in
/// step.
public struct CrashItem: Model, Equatable {
    public var id: Int
    public var name: String
    public var group: Int
    public var note: String
    public static let schema = Schema<CrashItem>(
        indexes: [.index(\.group), .unique(\.name), .fullText(\.name, \.note)])
}

/// An owner whose pets go with it (a cascade), and whose links are rewritten as pets move.
public struct CrashOwner: Model, Equatable {
    public var id: Int
    public var name: String
    public var pets: [Link<CrashPet>] = []
    public static let schema = Schema<CrashOwner>(links: [.link(\.pets, deleteRule: .cascade, ownsTargets: true)])
}

public struct CrashPet: Model, Equatable {
    public var id: Int
    public var name: String
    public static let schema = Schema<CrashPet>(indexes: [.index(\.name)])
}

/// A record large enough that a few of them outgrow a small map.
public struct CrashBlob: Model, Equatable {
    public var id: Int
    public var bytes: Data
}

/// The item of the migration workload before it: version 1 has no `group`.
public struct CrashItemV1: Model, Equatable {
    public var id: Int
    public var name: String
    public var note: String
    public static let schema = Schema<CrashItemV1>(name: "CrashItem", indexes: [.unique(\.name)])
}

/// A sequence of numbered transactions, the same on every run: what the store holds after the first `k` of them is
/// known, so a state a power cut left is compared with each such state.
public enum CrashWorkload: String, CaseIterable, Sendable {
    /// Items inserted, updated and deleted under an index, a unique index and a full-text index.
    case inserts
    /// Owners and pets: links added, moved between owners, and owners deleted with their pets (a cascade).
    case links
    /// A migration at open (version 1 to 2, a property added and filled, an index built), then writes of version 2.
    case migration
    /// Blobs of 96 KiB in a map of 256 KiB: the map grows several times.
    case growth

    /// The count of transactions, each acknowledged once its commit returned.
    public func transactions(long: Bool) -> Int {
        switch self {
        case .inserts, .links: long ? 60 : 14
        case .migration: long ? 20 : 6
        case .growth: long ? 30 : 10
        }
    }

    /// The models the store is opened with after the workload (and during it).
    public var models: [any Model.Type] {
        switch self {
        case .inserts, .migration: [CrashItem.self]
        case .links: [CrashOwner.self, CrashPet.self]
        case .growth: [CrashBlob.self]
        }
    }

    public func configuration(_ durability: Configuration.Durability) -> Configuration {
        switch self {
        case .migration:
            Configuration(
                models: models, schemaVersion: 2, durability: durability,
                migrations: [
                    .to(2) { migration in
                        try migration.enumerateRecords(ofType: "CrashItem") { item in
                            let id = try item.value("id", as: Int.self) ?? 0
                            try item.set("group", to: id % 4)
                        }
                    }
                ])
        case .growth:
            Configuration(models: models, durability: durability, initialMapSize: 256 << 10)
        default:
            Configuration(models: models, durability: durability)
        }
    }

    /// Makes what the store holds before the workload: for the migration, items of version 1.
    public func prepare(at folder: URL) throws {
        guard self == .migration else { return }
        let store = try Store(at: folder, configuration: .init(models: [CrashItemV1.self]))
        try store.write { tx in
            for id in 1...12 {
                try tx.insert(CrashItemV1(id: id, name: "item-\(id)", note: String(repeating: "v", count: id * 20)))
            }
        }
    }

    /// Runs the workload on the store at `folder`, calling `acknowledge` with each transaction's number once its commit
    /// returned. Opening the store is transaction 1 of the migration.
    public func run(
        at folder: URL, durability: Configuration.Durability, long: Bool,
        acknowledge: (Int, Store) throws -> Void
    ) throws {
        let store = try Store(at: folder, configuration: configuration(durability))
        var number = 0
        if self == .migration {
            number = 1
            try acknowledge(1, store)
        }
        while number < transactions(long: long) {
            number += 1
            let transaction = number
            try store.write { tx in try write(transaction, tx) }
            try acknowledge(transaction, store)
        }
    }

    /// Transaction `number` of the workload.
    private func write(_ number: Int, _ tx: WriteTransaction) throws {
        switch self {
        case .inserts:
            for id in (3 * number - 2)...(3 * number) {
                try tx.insert(
                    CrashItem(
                        id: id, name: "item-\(id)", group: id % 5,
                        note: "walk \(id % 7) " + String(repeating: "n", count: (id * 37) % 900)))
            }
            if var earlier = try tx.object(CrashItem.self, id: 3 * (number - 1)) {
                earlier.group += 10
                earlier.note += " updated in \(number)"
                try tx.update(earlier)
            }
            if number % 3 == 0 { try tx.delete(CrashItem.self, id: 3 * number - 5) }
        case .migration:
            let id = 100 + number
            try tx.insert(CrashItem(id: id, name: "item-\(id)", group: id % 4, note: "new in \(number)"))
            if var first = try tx.object(CrashItem.self, id: number) {
                first.note = "rewritten in \(number)"
                try tx.update(first)
            }
        case .links:
            let pets = [
                CrashPet(id: 2 * number - 1, name: "pet-\(number)a"), CrashPet(id: 2 * number, name: "pet-\(number)b"),
            ]
            for pet in pets { try tx.insert(pet) }
            var owner = CrashOwner(id: number, name: "owner-\(number)", pets: pets.map(Link.init))
            // One pet of the owner before moves to the new one.
            if var previous = try tx.object(CrashOwner.self, id: number - 1), let moved = previous.pets.first {
                previous.pets.removeFirst()
                try tx.update(previous)
                owner.pets.append(moved)
            }
            try tx.insert(owner)
            if number % 4 == 0 { try tx.delete(CrashOwner.self, id: number - 2) }
        case .growth:
            var bytes = Data(count: 96 << 10)
            for index in stride(from: 0, to: bytes.count, by: 61) {
                bytes[index] = UInt8(truncatingIfNeeded: number &* index)
            }
            try tx.insert(CrashBlob(id: number, bytes: bytes))
            if number % 4 == 0 { try tx.delete(CrashBlob.self, id: number - 2) }
        }
    }

    /// Every record of the workload's models, each a line of its model's name and its JSON: two stores hold the same
    /// records when their descriptions are equal.
    public func describe(_ store: Store) throws -> [String] {
        var lines: [String] = []
        for type in models { lines += try Self.describe(type, in: store) }
        return lines
    }

    private static func describe<M: Model>(_ type: M.Type, in store: Store) throws -> [String] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try store.objects(M.self).results().map { value in
            M.schema.name + " " + String(decoding: try encoder.encode(value), as: UTF8.self)
        }
    }

    /// What the store holds after each count of transactions, from none to all: the workload run in `folder`.
    public func expectedStates(in folder: URL, long: Bool) throws -> [[String]] {
        try prepare(at: folder)
        var states = [try open(at: folder, durability: .full).description]
        try run(at: folder, durability: .full, long: long) { _, store in states.append(try describe(store)) }
        return states
    }

    /// A store that would not open, and why: told apart from errors reading a store that opened.
    public struct Refused: Error {
        public var error: StoreError
    }

    /// Opens the store at `folder` as an app would at launch, and describes what it held: for the migration, items of
    /// version 1 (lines starting "v1 ") when the migration had not committed, read before opening migrates them.
    ///
    /// - Throws: `Refused` when the store does not open; any error of reading it once open.
    public func open(
        at folder: URL, durability: Configuration.Durability
    ) throws -> (description: [String], store: Store) {
        var description: [String]?
        if self == .migration {
            var before = Configuration(models: [CrashItemV1.self])
            before.readOnly = true
            let store: Store?
            do {
                store = try Store(at: folder, configuration: before)
            } catch StoreError.schemaVersionTooLow {
                store = nil  // migrated already
            } catch {
                throw Refused(error: error)
            }
            if let store { description = try Self.describe(CrashItemV1.self, in: store).map { "v1 " + $0 } }
        }
        let store: Store
        do { store = try Store(at: folder, configuration: configuration(durability)) } catch {
            throw Refused(error: error)
        }
        return (try description ?? describe(store), store)
    }
}
