import Cellar
import Foundation

// Models whose `Codable` code is written the way app code is: decoders that force-unwrap, trap on a broken rule,
// validate and throw, or branch on another field. Each stores and reads its own values perfectly; Cellar must never
// hand such a decoder a value its encoder did not write. `AppDecoderTests` runs each story in this process (the
// test helper, a child of the suite), so that a trap is a failed test and not the end of the suite.
//
// The `precondition`s and the `fatalError` below are the point, not library code: they stand for the app's own
// invariants, and stay. A trap means Cellar ran the app's decoder on a value it made up (the crash at launch of
// issue 40). This target is not a product; nothing a user builds links it.

enum Medium: String, Codable, Equatable, Sendable {
    case book, film
}

/// A raw value read back with `!`, as `Kind(rawValue:)!` is written everywhere.
struct ForcedRawValue: Model, Equatable {
    var id: Int
    var kind: Medium
    var title: String
    static let schema = Schema<ForcedRawValue>(indexes: [.index(\.title)])

    enum CodingKeys: String, CodingKey { case id, kind, title }
    init(id: Int, kind: Medium, title: String) {
        self.id = id
        self.kind = kind
        self.title = title
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        kind = Medium(rawValue: try container.decode(String.self, forKey: .kind))!
        title = try container.decode(String.self, forKey: .title)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind.rawValue, forKey: .kind)
        try container.encode(title, forKey: .title)
    }
}

/// A URL and a UUID kept as text and read back with `!`.
struct ForcedURLAndUUID: Model, Equatable {
    var id: UUID
    var homepage: URL
    var host: String

    enum CodingKeys: String, CodingKey { case id, homepage }
    init(id: UUID, homepage: URL) {
        self.id = id
        self.homepage = homepage
        host = homepage.host!
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = UUID(uuidString: try container.decode(String.self, forKey: .id))!
        homepage = URL(string: try container.decode(String.self, forKey: .homepage))!
        host = homepage.host!
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString, forKey: .id)
        try container.encode(homepage.absoluteString, forKey: .homepage)
    }
}

/// A rule of the app's checked with `precondition` as its values are decoded.
struct Checked: Model, Equatable {
    var id: Int
    var name: String
    var scores: [Int]

    init(id: Int, name: String, scores: [Int]) {
        self.id = id
        self.name = name
        self.scores = scores
    }
    enum CodingKeys: String, CodingKey { case id, name, scores }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        scores = try container.decode([Int].self, forKey: .scores)
        // App code, trapping on purpose (see the top of the file): Cellar must never hand it made-up values.
        precondition(name.first?.isLetter == true, "a name starts with a letter")
        precondition(scores.count == 3, "three scores")
        precondition(id > 0, "ids are positive")
    }
}

/// A value checked as it is decoded, refused with an error of the app's.
struct Subscriber: Model, Equatable {
    struct Invalid: Error {}
    var id: String
    var email: String

    init(id: String, email: String) {
        self.id = id
        self.email = email
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        email = try container.decode(String.self, forKey: .email)
        guard email.contains("@"), id.count == 8 else { throw Invalid() }
    }
}

/// A shape chosen by a field: what follows depends on what the first field said.
struct Drawing: Model, Equatable {
    enum Shape: Equatable, Sendable {
        case circle(radius: Double)
        case square(side: Double)
    }
    var id: Int
    var shape: Shape

    enum CodingKeys: String, CodingKey { case id, type, radius, side }
    init(id: Int, shape: Shape) {
        self.id = id
        self.shape = shape
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        switch try container.decode(String.self, forKey: .type) {
        case "circle": shape = .circle(radius: try container.decode(Double.self, forKey: .radius))
        case "square": shape = .square(side: try container.decode(Double.self, forKey: .side))
        // App code, trapping on purpose (see the top of the file).
        case let other: fatalError("unknown shape \(other)")
        }
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        switch shape {
        case .circle(let radius):
            try container.encode("circle", forKey: .type)
            try container.encode(radius, forKey: .radius)
        case .square(let side):
            try container.encode("square", forKey: .type)
            try container.encode(side, forKey: .side)
        }
    }
}

/// A nested type with its own validating decoder, behind custom coding keys, in a list and as an optional.
struct Contact: Model, Equatable {
    struct Email: Codable, Equatable, Sendable {
        let address: String
        init(_ address: String) { self.address = address }
        init(from decoder: any Decoder) throws {
            address = try decoder.singleValueContainer().decode(String.self)
            guard address.contains("@") else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no @"))
            }
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(address)
        }
    }
    struct Phone: Codable, Equatable, Sendable {
        let digits: String
        init(_ digits: String) { self.digits = digits }
        init(from decoder: any Decoder) throws {
            digits = try decoder.singleValueContainer().decode(String.self)
            // App code, trapping on purpose (see the top of the file).
            precondition(digits.count == 10 && digits.allSatisfy(\.isNumber), "ten digits")
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(digits)
        }
    }
    var id: Int
    var name: String
    var email: Email
    var backup: Email?
    var phones: [Phone]
    static let schema = Schema<Contact>(indexes: [.index(\.name)])

    enum CodingKeys: String, CodingKey {
        case id
        case name = "full_name"
        case email = "mail"
        case backup
        case phones
    }
}

/// `ForcedRawValue` with a required property added: its stored records lack it.
struct ForcedRawValueAdded: Model, Equatable {
    var id: Int
    var kind: Medium
    var title: String
    var year: Int
    static let schema = Schema<ForcedRawValueAdded>(name: "ForcedRawValue", indexes: [.index(\.title)])

    enum CodingKeys: String, CodingKey { case id, kind, title, year }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        kind = Medium(rawValue: try container.decode(String.self, forKey: .kind))!
        title = try container.decode(String.self, forKey: .title)
        year = try container.decode(Int.self, forKey: .year)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind.rawValue, forKey: .kind)
        try container.encode(title, forKey: .title)
        try container.encode(year, forKey: .year)
    }
}

/// `ForcedRawValue` whose title became a number: its stored titles are text.
struct ForcedRawValueRetyped: Model, Equatable {
    var id: Int
    var kind: Medium
    var title: Int
    static let schema = Schema<ForcedRawValueRetyped>(name: "ForcedRawValue", indexes: [.index(\.title)])

    enum CodingKeys: String, CodingKey { case id, kind, title }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        kind = Medium(rawValue: try container.decode(String.self, forKey: .kind))!
        title = try container.decode(Int.self, forKey: .title)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind.rawValue, forKey: .kind)
        try container.encode(title, forKey: .title)
    }
}

/// A shelf of `ForcedRawValue`s whose decoder also force-unwraps, linked with a cascade, searched by its label: the
/// story where these decoders meet links, delete rules, full-text search and a migration.
struct Shelf: Model, Equatable {
    var id: Int
    var label: String
    var items: [Link<ForcedRawValue>]
    var medium: Medium
    static let schema = Schema<Shelf>(
        indexes: [.fullText(\.label)], links: [.link(\.items, deleteRule: .cascade)])

    enum CodingKeys: String, CodingKey { case id, label, items, medium }
    init(id: Int, label: String, items: [Link<ForcedRawValue>], medium: Medium) {
        (self.id, self.label, self.items, self.medium) = (id, label, items, medium)
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        label = try container.decode(String.self, forKey: .label)
        items = try container.decode([Link<ForcedRawValue>].self, forKey: .items)
        medium = Medium(rawValue: try container.decode(String.self, forKey: .medium))!
        // App code, trapping on purpose (see the top of the file).
        precondition(!label.isEmpty, "a shelf has a label")
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(label, forKey: .label)
        try container.encode(items, forKey: .items)
        try container.encode(medium.rawValue, forKey: .medium)
    }
}

/// The stories `AppDecoderTests` runs, each by name: open an empty store, store values, reopen, read them back
/// equal (by id, by scan, by a query), and print "ok".
enum AppDecoderStories {
    static func run(_ name: String, in folder: URL) throws -> String {
        switch name {
        case "forced-raw-value":
            return try roundTrip(
                [
                    ForcedRawValue(id: 1, kind: .book, title: "Dune"),
                    ForcedRawValue(id: 2, kind: .film, title: "Alien"),
                ], in: folder, query: { $0.objects(ForcedRawValue.self).where(\.title == "Alien") })
        case "forced-url-uuid":
            let values = [
                ForcedURLAndUUID(
                    id: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
                    homepage: URL(string: "https://example.com/a")!),
                ForcedURLAndUUID(
                    id: UUID(uuidString: "F621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
                    homepage: URL(string: "https://swift.org")!),
            ]
            return try roundTrip(
                values, in: folder, query: { $0.objects(ForcedURLAndUUID.self).where(\.host == "swift.org") })
        case "precondition":
            return try roundTrip(
                [Checked(id: 1, name: "Ann", scores: [1, 2, 3]), Checked(id: 2, name: "Bo", scores: [4, 5, 6])],
                in: folder, query: { $0.objects(Checked.self).where(\.name == "Bo") })
        case "validating":
            return try roundTrip(
                [
                    Subscriber(id: "abcdefgh", email: "a@b.c"),
                    Subscriber(id: "ijklmnop", email: "d@e.f"),
                ], in: folder, query: { $0.objects(Subscriber.self).where(\.email == "d@e.f") })
        case "conditional":
            return try roundTrip(
                [Drawing(id: 1, shape: .circle(radius: 2)), Drawing(id: 2, shape: .square(side: 3))], in: folder,
                query: { $0.objects(Drawing.self).where(\.id == 2) })
        case "nested-validating":
            return try roundTrip(
                [
                    Contact(id: 1, name: "Ann", email: .init("a@b.c"), backup: nil, phones: [.init("0123456789")]),
                    Contact(id: 2, name: "Bo", email: .init("d@e.f"), backup: .init("g@h.i"), phones: []),
                ], in: folder, query: { $0.objects(Contact.self).where(\.name == "Bo") })
        case "crossing":
            return try crossing(in: folder)
        case "migration-added", "migration-retyped", "migration-new-version":
            // Records written by the first version, then the store opened by a later one whose decoder also
            // force-unwraps: what opening says is printed.
            do {
                let store = try Store(at: folder, configuration: .init(models: [ForcedRawValue.self]))
                try store.write { tx in try tx.insert(ForcedRawValue(id: 1, kind: .film, title: "Alien")) }
            }
            do {
                switch name {
                case "migration-added":
                    _ = try Store(at: folder, configuration: .init(models: [ForcedRawValueAdded.self]))
                case "migration-retyped":
                    _ = try Store(at: folder, configuration: .init(models: [ForcedRawValueRetyped.self]))
                default:
                    let store = try Store(
                        at: folder,
                        configuration: .init(
                            models: [ForcedRawValueAdded.self], schemaVersion: 2,
                            migrations: [
                                .to(2) { migration in
                                    try migration.enumerateRecords(ofType: "ForcedRawValue") { record in
                                        try record.set("year", to: 1979)
                                    }
                                }
                            ]))
                    return "migrated: \(try store.objects(ForcedRawValueAdded.self).results().map(\.year))"
                }
                return "opened"
            } catch {
                return "\(error)"
            }
        default:
            return "unknown story \(name)"
        }
    }

    /// Shelves and items: a search, a cascade, a migration that renames a label, every step reopened.
    private static func crossing(in folder: URL) throws -> String {
        let models: [any Model.Type] = [Shelf.self, ForcedRawValue.self]
        do {
            let store = try Store(at: folder, configuration: .init(models: models))
            try store.write { tx in
                for id in 1...4 {
                    try tx.insert(ForcedRawValue(id: id, kind: id.isMultiple(of: 2) ? .film : .book, title: "t\(id)"))
                }
                try tx.insert(Shelf(id: 1, label: "science fiction", items: [Link(id: 1), Link(id: 2)], medium: .book))
                try tx.insert(Shelf(id: 2, label: "horror films", items: [Link(id: 3)], medium: .film))
            }
        }
        do {
            let store = try Store(at: folder, configuration: .init(models: models))
            let found = try store.objects(Shelf.self).where(.matches(\.label, "fiction")).results().map(\.id)
            guard found == [1] else { return "the search found \(found)" }
            try store.write { tx in try tx.delete(Shelf.self, id: 1) }
            let left = try store.objects(ForcedRawValue.self).results().map(\.id)
            guard left == [3, 4] else { return "the cascade left \(left)" }
            let problems = try store.verifyIntegrity().problems
            guard problems.isEmpty else { return "verifyIntegrity: \(problems)" }
        }
        let migrated = Configuration(
            models: models, schemaVersion: 2,
            migrations: [
                .to(2) { migration in
                    try migration.enumerateRecords(ofType: "Shelf") { shelf in
                        let label = try shelf.value("label", as: String.self) ?? ""
                        try shelf.set("label", to: label.uppercased())
                    }
                }
            ])
        let store = try Store(at: folder, configuration: migrated)
        let labels = try store.objects(Shelf.self).results().map(\.label)
        guard labels == ["HORROR FILMS"] else { return "the migration left \(labels)" }
        guard try store.objects(Shelf.self).where(.matches(\.label, "horror")).count() == 1 else {
            return "the search after the migration missed"
        }
        return "ok"
    }

    /// Opens an empty store of `M`, writes `values`, reopens it (read-write, then read-only) and reads them back.
    private static func roundTrip<M: Model & Equatable>(
        _ values: [M], in folder: URL, query: (Store) -> Query<M>
    ) throws -> String {
        let configuration = Configuration(models: [M.self])
        do {
            let store = try Store(at: folder, configuration: configuration)
            try store.write { tx in
                for value in values { try tx.insert(value) }
            }
        }
        for readOnly in [false, true] {
            var reopened = configuration
            reopened.readOnly = readOnly
            let store = try Store(at: folder, configuration: reopened)
            for value in values where try store.object(M.self, id: value.id) != value {
                return "\(value.id) read back as \(String(describing: try store.object(M.self, id: value.id)))"
            }
            let all = try store.objects(M.self).results()
            guard Array(all) == values else { return "the scan read \(Array(all))" }
            guard try query(store).results().map(\.id) == [values[1].id] else { return "the query missed" }
        }
        return "ok"
    }
}
