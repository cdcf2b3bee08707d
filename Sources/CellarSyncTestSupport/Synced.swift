// What the sync tests and their second process (`cellar-sync-helper`) share: the models they sync, a seeded
// generator, random edits, and a store's records as the server keeps them. Not a product.
import Cellar
import CellarSyncProtocol
import Foundation

/// Cards in folders (a folder's delete removes the cards' links to it), with text, optional, list and number
/// properties, and two models sync refuses.
public enum Synced {
    public struct Folder: Model, Equatable {
        public var id: UUID = UUID()
        public var name: String
        public init(id: UUID = UUID(), name: String) {
            self.id = id
            self.name = name
        }
    }

    public struct Card: Model, Equatable {
        public var id: String
        public var title: String
        public var body: String?
        public var tags: [String]
        public var rank: Int64
        public var folder: Link<Folder>?
        /// A full-text index too, so that every sync test keeps one in step with what devices pull.
        public static let schema = Schema<Card>(
            indexes: [.index(\.rank), .fullText(.field(\.title, weight: 2), .field(\.body))], links: [.link(\.folder)])

        public init(
            id: String, title: String, body: String? = nil, tags: [String] = [], rank: Int64 = 0,
            folder: Link<Folder>? = nil
        ) {
            self.id = id
            self.title = title
            self.body = body
            self.tags = tags
            self.rank = rank
            self.folder = folder
        }
    }

    /// Numbered ids: refused by sync.
    public struct Counter: Model {
        public var id: Int64 = 0
        public var value: Int
        public static let schema = Schema<Counter>(autoIncrement: true)
    }

    /// A model that links to one that does not sync in the tests that use it.
    public struct Pin: Model {
        public var id: String
        public var card: Link<Card>?
        public static let schema = Schema<Pin>(links: [.link(\.card)])
    }

    public static let models: [any Model.Type] = [Folder.self, Card.self]

    /// Every record of `store` as "Model id" → its JSON object without `null`s, as the server keeps it.
    public static func contents(of store: Store) throws -> [String: JSONValue] {
        try store.read { snapshot in
            var contents: [String: JSONValue] = [:]
            for card in try snapshot.objects(Card.self).results() { contents["Card \(card.id)"] = try json(card) }
            for folder in try snapshot.objects(Folder.self).results() {
                contents["Folder \(folder.id.uuidString)"] = try json(folder)
            }
            return contents
        }
    }

    public static func json(_ value: some Encodable) throws -> JSONValue {
        let json = try JSONValue(parsing: JSONEncoder().encode(value))
        guard case .object(let fields) = json else { return json }
        return .object(fields.filter { $0.value != .null })
    }

    /// Inserts, edits, moves and deletes cards and folders at random, each in its own transaction. Card ids come
    /// from a small pool, so that two devices make the same card; an id deleted before is refused and skipped.
    public static func randomEdits(_ store: Store, count: Int, using random: inout SplitMix) throws {
        for _ in 0..<count {
            let cards = Array(try store.read { try $0.objects(Card.self).results() })
            let folders = Array(try store.read { try $0.objects(Folder.self).results() })
            func anyFolder() -> Link<Folder>? {
                folders.isEmpty || random.next() % 3 == 0 ? nil : Link(folders[random.below(folders.count)])
            }
            let roll = random.below(100)
            do {
                try store.write { txn in
                    switch roll {
                    case 0..<25:
                        try txn.upsert(
                            Card(
                                id: "c\(random.below(40))", title: "t\(random.below(1000))",
                                body: random.below(2) == 0 ? nil : "b", tags: (0..<random.below(3)).map { "g\($0)" },
                                rank: Int64(random.below(50)), folder: anyFolder()))
                    case 25..<55 where !cards.isEmpty:
                        var card = cards[random.below(cards.count)]
                        switch random.below(4) {
                        case 0: card.title = "t\(random.below(1000))"
                        case 1: card.tags.append("g\(random.below(5))")
                        case 2: card.rank = Int64(random.below(50))
                        default: card.body = random.below(2) == 0 ? nil : "body \(random.below(9))"
                        }
                        try txn.update(card)
                    case 55..<70 where !cards.isEmpty:
                        var card = cards[random.below(cards.count)]
                        card.folder = anyFolder()
                        try txn.update(card)
                    case 70..<82 where !cards.isEmpty:
                        try txn.delete(cards[random.below(cards.count)])
                    case 82..<94:
                        let bits = (random.next(), random.next())
                        let id = withUnsafeBytes(of: bits) { UUID(uuid: $0.load(as: uuid_t.self)) }
                        try txn.insert(Folder(id: id, name: "f\(random.below(100))"))
                    case 94..<100 where !folders.isEmpty:
                        try txn.delete(folders[random.below(folders.count)])
                    default:
                        break
                    }
                }
            } catch StoreError.idReusedAfterDelete {
                // A card id deleted before: refused, as documented.
            }
        }
    }
}

/// A small seeded generator (SplitMix64), so that a failing seed replays.
public struct SplitMix: RandomNumberGenerator, Sendable {
    var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`.
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
