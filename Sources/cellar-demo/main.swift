// cellar-demo: the stories behind Cellar, end to end on a real store in a temporary folder (kept with --keep).
import Cellar
import Foundation

struct Person: Model {
    var id: Int64 = 0  // 0 asks the store for the next id
    var name: String
    static let schema = Schema<Person>(autoIncrement: true)
}

struct Dog: Model {
    var id: String = UUID().uuidString
    var name: String
    var age: Int
    var kind: Kind = .mutt
    var chip: String? = nil  // a microchip number: no two dogs share one
    enum Kind: String, Codable { case mutt, shiba }
    static let schema = Schema<Dog>(indexes: [.index(\.age), .index(\.name), .index(\.kind), .unique(\.chip)])
}

/// A to-do list, for the queries Realm users write on lists and on text: `ANY tags == "errand"` and `==[c]`.
struct Chore: Model {
    var id: Int64 = 0
    var title: String
    var tags: [String]
    static let schema = Schema<Chore>(
        autoIncrement: true,
        indexes: [.index(\.tags), .index(\.title, options: [.caseInsensitive, .diacriticInsensitive])])
}

/// The same list as a search screen searches it: words in any case and accent, Japanese without spaces, the best
/// matches first, a title counting twice its notes.
struct Todo: Model {
    var id: Int64 = 0
    var title: String
    var notes: String
    var list: String
    static let schema = Schema<Todo>(
        autoIncrement: true, indexes: [.fullText(.field(\.title, weight: 2), .field(\.notes)), .index(\.list)])
}

/// The relationship stories' models, in a store of their own.
enum Family {
    struct Person: Model {
        var id: Int64 = 0
        var name: String
        var dogs: [Link<Dog>] = []  // Realm's List<Dog>; a dog sits in one person's list at most
        static let schema = Schema<Person>(
            autoIncrement: true, indexes: [.index(\.name)], links: [.link(\.dogs, exclusive: true)])
    }

    struct Dog: Model {
        var id: String
        var name: String
        var age: Int
        static let schema = Schema<Dog>(indexes: [.index(\.age)])
    }

    /// A breeder's puppies go with the breeder.
    struct Breeder: Model {
        var id: Int
        var name: String
        var puppies: [Link<Dog>] = []
        static let schema = Schema<Breeder>(links: [.link(\.puppies, deleteRule: .cascade)])
    }

    /// A dog a vet is treating cannot be deleted.
    struct Vet: Model {
        var id: Int
        var name: String
        var patients: [Link<Dog>] = []
        static let schema = Schema<Vet>(links: [.link(\.patients, targetDeleteRule: .deny)])
    }

    static let models: [any Model.Type] = [Person.self, Dog.self, Breeder.self, Vet.self]
}

/// The gallery story's model: properties whose decoders would refuse, or trap on, made-up values.
/// A model decoded as app code decodes: a raw value read back with `!`, a rule checked with `precondition`. Cellar
/// hands its `init(from:)` only records its own `encode(to:)` wrote, so it opens like any other.
enum Launch {
    enum Medium: String, Codable { case book, film }
    struct Item: Model, Equatable {
        var id: Int
        var title: String
        var medium: Medium
        enum CodingKeys: String, CodingKey { case id, title, medium }
        init(id: Int, title: String, medium: Medium) {
            (self.id, self.title, self.medium) = (id, title, medium)
        }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(Int.self, forKey: .id)
            title = try container.decode(String.self, forKey: .title)
            medium = Medium(rawValue: try container.decode(String.self, forKey: .medium))!
            precondition(!title.isEmpty, "every item has a title")
        }
    }
}

enum Gallery {
    enum Spot: Codable, Equatable {
        case unknown
        case circle(radius: Double)
        case named(String)
    }
    enum Daypart: String, Codable { case morning, night }

    struct Sighting: Model, Equatable {
        var id: Int64 = 0
        var spot: Spot
        var zone: TimeZone
        var seen: [Daypart: Bool]
        var serial: Int128
        var link: URLComponents
        static let schema = Schema<Sighting>(autoIncrement: true)
    }
}

/// The migration story's pet as three app versions ship it; each Swift type is stored as "Pet".
enum Shelter {
    struct PetV1: Model {
        var id: Int64 = 0
        var name: String
        var age: Int
        static let schema = Schema<PetV1>(name: "Pet", autoIncrement: true)
    }

    /// Version 2 adds a required color: old records have none, so a migration computes it.
    struct PetV2: Model {
        var id: Int64 = 0
        var name: String
        var age: Int
        var color: String
        static let schema = Schema<PetV2>(name: "Pet", autoIncrement: true)
    }

    /// Version 3 renames `name` to `fullName` and indexes the color: declared in the schema, no migration step.
    struct PetV3: Model {
        var id: Int64 = 0
        var fullName: String
        var age: Int
        var color: String
        static let schema = Schema<PetV3>(name: "Pet", autoIncrement: true, indexes: [.index(\.color)])
            .property(\.fullName, renamedFrom: "name")
    }

    static let toVersion2 = MigrationStep.to(2) { migration in
        try migration.enumerateRecords(ofType: "Pet") { pet in
            let age = try pet.value("age", as: Int.self) ?? 0
            try pet.set("color", to: age < 5 ? "brown" : "grey")
        }
    }
}

func heading(_ title: String) { print("\n== \(title)") }
func say(_ line: String) { print("   \(line)") }

// `cellar-demo sync --server URL --token TOKEN [--other-token TOKEN]`: the sync story (SyncStory.swift), against a
// running server; the other token, another user's, shows a store refusing to change hands without a sign-out.
if CommandLine.arguments.dropFirst().first == "sync" {
    let arguments = CommandLine.arguments
    func value(_ name: String) -> String? {
        arguments.firstIndex(of: name).map { $0 + 1 < arguments.count ? arguments[$0 + 1] : "" }
    }
    guard let server = value("--server").flatMap(URL.init(string:)), let token = value("--token") else {
        print(
            "usage: cellar-demo sync --server URL --token TOKEN [--other-token TOKEN]   "
                + "(Server/demo starts a server and runs this)")
        exit(2)
    }
    do {
        try await syncStory(server: server, token: token, otherUsersToken: value("--other-token"))
        exit(0)
    } catch {
        print("sync demo failed: \(error)")
        exit(1)
    }
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cellar-demo-\(UUID().uuidString)")
// `swift run cellar-demo --keep` leaves the stores behind, for `swift run cellar` to look into.
let keepsStores = CommandLine.arguments.contains("--keep")
defer { if !keepsStores { try? FileManager.default.removeItem(at: folder) } }
let configuration = Configuration(models: [Person.self, Dog.self], schemaVersion: 1)

do {
    print("Cellar demo: a store in \(folder.path)")

    heading("Auto-increment ids are never reused")
    do {
        let store = try Store(at: folder, configuration: configuration)
        var alice = Person(name: "Alice")
        var bob = Person(name: "Bob")
        try store.write { tx in
            try tx.insert(&alice)
            try tx.insert(&bob)
        }
        say("inserted Alice as #\(alice.id) and Bob as #\(bob.id)")
        try store.write { tx in try tx.delete(Person.self, id: bob.id) }
        say("deleted Bob (#\(bob.id))")
        let carol = try store.write { tx in try tx.insert(Person(name: "Carol")) }
        say("inserted Carol as #\(carol.id): Bob's #\(bob.id) is not handed out again")
    }
    say("closed the store (released every Store value)")
    let store = try Store(at: folder, configuration: configuration)
    let dave = try store.write { tx in try tx.insert(Person(name: "Dave")) }
    say("reopened it and inserted Dave as #\(dave.id): the sequence survived the restart")
    let people = try store.objects(Person.self).results()
    say("people now: " + people.map { "#\($0.id) \($0.name)" }.joined(separator: ", "))

    heading("A result survives the delete of its rows")
    try store.write { tx in
        for (name, age) in [("Taro", 3), ("Hachi", 5), ("Pochi", 1), ("Shiro", 8)] {
            try tx.insert(Dog(name: name, age: age, kind: name == "Hachi" ? .shiba : .mutt))
        }
    }
    let dogs = try store.objects(Dog.self).results()
    say("a view holds \(dogs.count) dogs (version \(dogs.version)): " + dogs.map(\.name).joined(separator: ", "))
    let deleted = dogs[dogs.count - 1]
    try store.write { tx in
        try tx.delete(Dog.self, id: dogs[dogs.count - 2].id)
        try tx.delete(Dog.self, id: deleted.id)
    }
    say("another transaction deleted the last two of them")
    say(
        "the held result still has \(dogs.count) dogs; its last is still \(dogs[dogs.count - 1].name), age \(deleted.age)"
    )
    say("  (Realm: 'Object has been deleted or invalidated' or 'Index 3 is out of bounds')")
    let latest = try dogs.latest()
    say(
        "latest() runs the query again on version \(latest.version): \(latest.count) dogs, "
            + latest.map(\.name).joined(separator: ", "))

    heading("Queries are answered from indexes")
    try store.write { tx in
        for i in 0..<1_000 {
            try tx.insert(Dog(name: "Dog \(i)", age: i % 16, kind: i % 3 == 0 ? .shiba : .mutt, chip: "C-\(i)"))
        }
    }
    let shibas = store.objects(Dog.self).where(\.age >= 14 && \.kind == .shiba).sorted(by: \.name).limit(3)
    say("shibas aged 14 or more, first three by name: " + (try shibas.results()).map(\.name).joined(separator: ", "))
    say("how: \(try shibas.explain())")
    let sevens = store.objects(Dog.self).where(\.age == 7)
    say("dogs aged 7: \(try sevens.count()), counted in the index without reading a record")
    say(
        "the oldest is \(try store.objects(Dog.self).max(\.age) ?? 0); their average age is "
            + String(format: "%.2f", try store.objects(Dog.self).average(\.age) ?? 0))
    let byName = store.objects(Dog.self).sorted(by: \.name, ascending: false).limit(2)
    say("last two by name: \((try byName.results()).map(\.name).joined(separator: ", ")) (\(try byName.explain()))")
    do {
        try store.write { tx in try tx.insert(Dog(name: "Copycat", age: 2, chip: "C-42")) }
    } catch {
        say("a second dog with chip C-42 was refused: \(error)")
    }
    let retired = store.objects(Dog.self).where(\.age == 15 && \.kind == .mutt)
    let retiredCount = try store.write { tx in try tx.delete(tx.objects(Dog.self).where(\.age == 15 && \.kind == .mutt))
    }
    say(
        "deleted the \(retiredCount) mutts aged 15 by query, as Realm's realm.delete(results) (\(try retired.explain()))"
    )
    let someID = try store.objects(Dog.self).first()?.id ?? ""
    say("a condition on the id needs no index: \(try store.objects(Dog.self).where(\.id == someID).explain())")
    // A plain Codable struct: its conditions read the stored field, and only the records that may match are decoded.
    let unchipped = store.objects(Dog.self).where(.contains(\.name, "99") && \.age != 3)
    say(
        "a condition no index answers reads each record's field: \(try unchipped.count()) dogs (\(try unchipped.explain()))"
    )

    heading("The query syntax a Realm or SwiftData user already types")
    let realmStyle = store.objects(Dog.self).where { $0.age >= 14 && $0.name.starts(with: "Dog 9") }
    say("Realm's where { $0.age >= 14 && $0.name.starts(with: \"Dog 9\") }: \(try realmStyle.count()) dogs")
    say("  the same plan as the key-path form: \(try realmStyle.explain())")
    let shiba = Dog.Kind.shiba
    let swiftDataStyle = store.objects(Dog.self).where(#Predicate { $0.age == 3 && $0.kind == shiba })
    say("SwiftData's #Predicate { $0.age == 3 && $0.kind == shiba }: \(try swiftDataStyle.count()) dogs")
    say("  \(try swiftDataStyle.explain())")
    let arithmetic = store.objects(Dog.self).where(#Predicate { $0.age > 10 && $0.age * 2 < 26 })
    say("a #Predicate part no condition can say is evaluated by Foundation: \(try arithmetic.count()) dogs")
    say("  \(try arithmetic.explain())")

    heading("Errors are values you can catch, never crashes")
    do {
        try store.write { tx in
            try tx.insert(Person(name: "Eve"))
            try tx.insert(Person(id: alice(in: people).id, name: "Alice again"))
        }
    } catch let error as StoreError {
        say("insert with a taken id threw StoreError: \(error)")
        say("and the whole transaction was rolled back: \(try store.count(Person.self)) people, no Eve")
    }
    do {
        try store.write { tx in try tx.update(Dog(id: "no-such-dog", name: "Ghost", age: 1)) }
    } catch {
        say("update of a missing record threw: \(error)")
    }
    do {
        _ = try Store(at: folder, configuration: .init(models: [Person.self, Dog.self], schemaVersion: 0))
    } catch {
        say("opening with an older schema version threw: \(error)")
    }

    heading("Damaged and foreign files are errors, never crashes")
    let report = try store.verifyIntegrity()
    say(
        "verifyIntegrity() walked every page of version \(report.version): \(report.pagesInUse) in use, "
            + "\(report.freePages) free, \(report.databases) databases, all sound")
    let copy = folder.appendingPathComponent("copy")
    try store.compact(to: copy)
    let copyFile = copy.appendingPathComponent("data.mdb")
    let size = (try FileManager.default.attributesOfItem(atPath: copyFile.path)[.size] as? Int) ?? 0
    let handle = try FileHandle(forWritingTo: copyFile)
    try handle.truncate(atOffset: UInt64(size / 2))
    try handle.close()
    do {
        _ = try Store(at: copy, configuration: configuration)
    } catch {
        say("a copy cut to half its size (a full disk) is refused before a page is read: \(error)")
    }
    let stranger = folder.appendingPathComponent("stranger")
    try FileManager.default.createDirectory(at: stranger, withIntermediateDirectories: true)
    try Data("SQLite format 3\0".utf8 + [UInt8](repeating: 0, count: 4_096)).write(
        to: stranger.appendingPathComponent("data.mdb"))
    do {
        _ = try Store(at: stranger, configuration: configuration)
    } catch {
        say("a SQLite file where a store should be: \(error)")
    }
    // A failing disk flips one bit inside a record; the page around it stays sound. Each record's checksum says so.
    let flipped = folder.appendingPathComponent("flipped")
    try Store(at: flipped, configuration: .init(models: [Dog.self])).write { tx in
        try tx.insert(Dog(id: "kuro", name: "Kuro the brave", age: 4))
    }
    let flippedFile = flipped.appendingPathComponent("data.mdb")
    var onDisk = try Data(contentsOf: flippedFile)
    // The name as the record stores it: its type byte and length, then the text ("t" of "the" becomes "u").
    if let found = onDisk.range(of: Data([0x0D, 14] + Array("Kuro the brave".utf8))) {
        onDisk[found.lowerBound + 7] ^= 0x01
        try onDisk.write(to: flippedFile)
    }
    let reopened = try Store(at: flipped, configuration: .init(models: [Dog.self]))
    do {
        _ = try reopened.object(Dog.self, id: "kuro")
        say("a flipped bit in a record went unnoticed")
    } catch {
        say("one bit of a stored name flipped on the disk (\"the\" would read \"uhe\") is named: \(error)")
    }
    say("verifyIntegrity() lists it too: \(try reopened.verifyIntegrity().problems.joined(separator: "; "))")
    do {
        _ = try Store(at: folder, configuration: .init(models: [Person.self, Dog.self], durability: .none))
    } catch {
        say("opening the open store again with other settings: \(error)")
    }

    heading("Links and backlinks: who owns which dog")
    let family = try Store(
        at: folder.appendingPathComponent("family"), configuration: .init(models: Family.models))
    try family.write { tx in
        let taro = try tx.insert(Family.Dog(id: "taro", name: "Taro", age: 3))
        let hanako = try tx.insert(Family.Dog(id: "hanako", name: "Hanako", age: 5))
        let wanko = try tx.insert(Family.Dog(id: "wanko", name: "Wanko", age: 1))
        try tx.insert(Family.Person(name: "Alice", dogs: [Link(taro), Link(hanako)]))
        try tx.insert(Family.Person(name: "Bob", dogs: [Link(wanko)]))
    }
    say("Alice owns Taro and Hanako; Bob owns Wanko")
    try family.write { tx in
        guard var bob = try tx.objects(Family.Person.self).where(\.name == "Bob").first() else { return }
        bob.dogs.append(Link(id: "wataru"))  // the list first: links are checked when the transaction commits
        try tx.update(bob)
        try tx.insert(Family.Dog(id: "wataru", name: "Wataru", age: 4))
    }
    func ownerName(_ id: String) throws -> String {
        guard let dog = try family.object(Family.Dog.self, id: id) else { return "nobody: no such dog" }
        return try family.backlink(to: dog, via: \Family.Person.dogs)?.name ?? "nobody"
    }
    say("Bob adopted Wataru through his own list; Wataru's owner is \(try ownerName("wataru"))")
    say("Taro's owner is \(try ownerName("taro")): one Person?, with no LinkingObjects.first to puzzle over")
    let oldDogs = family.objects(Family.Dog.self).where(\.age >= 3)
    let oldDogOwners = family.objects(Family.Person.self).backlinking(oldDogs, via: \.dogs)
    say("owners of dogs aged 3 or more: " + (try oldDogOwners.results()).map(\.name).joined(separator: ", "))
    say("how: \(try oldDogOwners.explain())")
    let withDogs = try family.objects(Family.Person.self).sorted(by: \.name).including(\.dogs).results()
    say(
        "everyone with their dogs, from one version (including(\\.dogs), \(withDogs.targetsRead) dogs read once each): "
            + withDogs.map { "\($0.name): \($0.included.map(\.name).joined(separator: ", "))" }
            .joined(separator: "; "))

    heading("Deleting a dog a screen still shows")
    let screen = try family.objects(Family.Dog.self).sorted(by: \.name).results()
    say("a screen holds \(screen.count) dogs: " + screen.map(\.name).joined(separator: ", "))
    try family.write { tx in try tx.delete(Family.Dog.self, id: "hanako") }
    say("Hanako was deleted; the screen still holds \(screen.count) dogs and \(screen[0].name) is still readable")
    if let alice = try family.objects(Family.Person.self).where(\.name == "Alice").first() {
        say(
            "Alice's list lost her in the same transaction: "
                + (try family.resolve(alice.dogs)).map(\.name).joined(separator: ", "))
    }
    let check = try family.verifyIntegrity()
    say(
        "verifyIntegrity(): \(check.problems.isEmpty ? "every index and backlink agrees, no link dangles" : check.problems.joined(separator: "; "))"
    )

    heading("Delete rules: a cascade and a refusal")
    try family.write { tx in
        try tx.insert(Family.Dog(id: "pochi", name: "Pochi", age: 0))
        try tx.insert(Family.Dog(id: "koro", name: "Koro", age: 0))
        try tx.insert(Family.Breeder(id: 1, name: "Kumi", puppies: [Link(id: "pochi"), Link(id: "koro")]))
        try tx.insert(Family.Vet(id: 1, name: "Dr. Sato", patients: [Link(id: "taro")]))
    }
    try family.write { tx in try tx.delete(Family.Breeder.self, id: 1) }
    say(
        "the breeder Kumi was deleted, and her puppies with her (.cascade): "
            + "Pochi \(try family.object(Family.Dog.self, id: "pochi") == nil ? "is gone" : "is still here")")
    do {
        try family.write { tx in try tx.delete(Family.Dog.self, id: "taro") }
    } catch {
        say("deleting Taro, whom Dr. Sato is treating, was refused: \(error)")
    }

    heading("An app extension that opens the dogs alone")
    // The widget's Store names Dog only; the file says Person.dogs links to dogs, so its delete cannot follow the rule.
    let widget = try Store(
        at: folder.appendingPathComponent("family"), configuration: .init(models: [Family.Dog.self]))
    do {
        try widget.write { tx in try tx.delete(Family.Dog.self, id: "wanko") }
    } catch {
        say("deleting Wanko from the widget's Store was refused, nothing written: \(error)")
    }
    say("the app's Store still finds Wanko's owner: \(try ownerName("wanko"))")

    heading("Any Codable property opens: enums with payloads, Foundation types, Int128")
    let gallery = try Store(
        at: folder.appendingPathComponent("gallery"), configuration: .init(models: [Gallery.Sighting.self]))
    var sighting = Gallery.Sighting(
        spot: .circle(radius: 2.5), zone: TimeZone(identifier: "Asia/Tokyo") ?? .gmt,
        seen: [.morning: true, .night: false], serial: Int128(1) << 100,
        link: URLComponents(string: "https://example.com/dogs?age=3") ?? URLComponents())
    try gallery.write { tx in try tx.insert(&sighting) }
    if let stored = try gallery.object(Gallery.Sighting.self, id: sighting.id) {
        say(
            "an enum with a payload, a TimeZone, [Daypart: Bool], an Int128 and URLComponents read back equal: "
                + "\(stored == sighting) (\(stored.spot), \(stored.zone.identifier), \(stored.serial))")
    }

    heading("A decoder that force-unwraps opens: Cellar decodes only what the model wrote")
    let shelf = folder.appendingPathComponent("launch")
    do {
        let store = try Store(at: shelf, configuration: .init(models: [Launch.Item.self]))
        try store.write { tx in try tx.insert(Launch.Item(id: 1, title: "Dune", medium: .book)) }
    }
    let launched = try Store(at: shelf, configuration: .init(models: [Launch.Item.self]))
    say(
        "Kind(rawValue:)! and precondition in init(from:): opened empty, stored, reopened and read back "
            + "\(try launched.object(Launch.Item.self, id: 1).map { "\($0.title) (\($0.medium))" } ?? "nothing") "
            + "(opening decoded one stored record with the model itself, and no made-up value)")

    heading("A changed model: an error in words, then a migration")
    let shelter = folder.appendingPathComponent("shelter")
    do {
        let version1 = try Store(at: shelter, configuration: .init(models: [Shelter.PetV1.self]))
        try version1.write { tx in
            for (name, age) in [("Mugi", 2), ("Sora", 7), ("Kuro", 4)] {
                try tx.insert(Shelter.PetV1(name: name, age: age))
            }
        }
        say("app version 1 stored 3 pets")
    }
    do {
        _ = try Store(at: shelter, configuration: .init(models: [Shelter.PetV2.self]))
    } catch {
        say("version 2 adds a required color and forgets to migrate. Realm's try! Realm() would crash; Cellar throws:")
        for line in "\(error)".split(separator: "\n") { say("  \(line)") }
    }
    let version2 = Configuration(models: [Shelter.PetV2.self], schemaVersion: 2, migrations: [Shelter.toVersion2])
    let pending = try Store.pendingChanges(at: shelter, configuration: version2)
    say(
        "with schemaVersion 2 and a step, pendingChanges says: run steps \(pending.migrationSteps), rewrite records: "
            + "\(pending.rewritesRecords) (time to show \"Updating…\")")
    do {
        let store = try Store(at: shelter, configuration: version2)
        say(
            "migrated in one transaction: "
                + (try store.objects(Shelter.PetV2.self).results()).map { "\($0.name) is \($0.color)" }
                .joined(separator: ", "))
    }
    let version3 = Configuration(models: [Shelter.PetV3.self], schemaVersion: 3, migrations: [Shelter.toVersion2])
    say(
        "version 3 renames name to fullName in its Schema: "
            + (try Store.pendingChanges(at: shelter, configuration: version3)).changes.map(\.description).joined(
                separator: " "))
    // A cache whose model changed without a migration: it may start empty instead (Realm's
    // deleteRealmIfMigrationNeeded), never while a Store has the file open.
    var cache = Configuration(models: [Shelter.PetV2.self], schemaVersion: 3)
    cache.deleteStoreIfMigrationNeeded = true
    cache.onReset = { reset in say("onReset runs first, the files still there: \(reset.reason.description.prefix(49))…")
    }
    do {
        let renamed = try Store(at: shelter, configuration: version3)
        let grey = renamed.objects(Shelter.PetV3.self).where(\.color == "grey")
        say("grey pets: \((try grey.results()).map(\.fullName).joined(separator: ", ")) (\(try grey.explain()))")
        let next = try renamed.write { tx in
            try tx.insert(Shelter.PetV3(fullName: "Hana", age: 1, color: "white")).id
        }
        say("the id sequence survived both migrations: Hana is #\(next)")
        do {
            _ = try Store(at: shelter, configuration: cache)
        } catch {
            say(
                "a cache configuration with the version 2 model and deleteStoreIfMigrationNeeded, while version 3 is open:"
            )
            say("  \(error)")
        }
    }
    let emptied = try Store(at: shelter, configuration: cache)
    say("once version 3 is closed, the cache starts empty: \(try emptied.count(Shelter.PetV2.self)) pets, no crash")

    heading("A screen that follows the store")
    var listScreen = family.changes(of: family.objects(Family.Dog.self).sorted(by: \.name)).makeAsyncIterator()
    var detail = family.changes(of: Family.Dog.self, id: "wataru").makeAsyncIterator()
    if let shown = try await listScreen.next(), case .initial(let wataru) = try await detail.next() {
        say(
            "a list screen shows " + shown.results.map(\.name).joined(separator: ", ")
                + "; a detail screen shows \(wataru.name)")
    }
    try family.write { tx in
        try tx.insert(Family.Dog(id: "kuro", name: "Kuro", age: 2))
        try tx.update(Family.Dog(id: "taro", name: "Taro", age: 4))
        try tx.delete(Family.Dog.self, id: "wataru")
    }
    say("a write inserted Kuro, made Taro 4 and deleted Wataru, in one commit")
    if let change = try await listScreen.next() {
        say(
            "the list got one change: deletions \(change.deletions) (old indexes), insertions \(change.insertions) (new), "
                + "modifications \(change.modifications) (old); it now shows "
                + change.results.map(\.name).joined(separator: ", "))
    }
    if case .deleted = try await detail.next() {
        say("the detail screen got .deleted and can say so: no 'object has been deleted or invalidated'")
    }
    let dogsByName = family.objects(Family.Dog.self).sorted(by: \.name)
    var badges = family.changes(of: dogsByName, keyPaths: [\.name]).makeAsyncIterator()
    _ = try await badges.next()
    try family.write { tx in try tx.update(Family.Dog(id: "taro", name: "Taro", age: 5)) }
    try family.write { tx in try tx.update(Family.Dog(id: "kuro", name: "Kuroko", age: 2)) }
    if let change = try await badges.next() {
        say(
            "name badges (keyPaths: [\\.name]) let Taro's birthday pass and got one change: "
                + "\(change.modifiedIDs) renamed, modifications \(change.modifications); they show "
                + change.results.map(\.name).joined(separator: ", "))
    }

    heading("A read-only store, as an app ships one in its bundle")
    let shipped = folder.appendingPathComponent("shipped")
    try store.compact(to: shipped)
    var readOnly = configuration
    readOnly.readOnly = true
    let catalog = try Store(at: shipped, configuration: readOnly)
    say(
        "opened a compacted copy with readOnly: \(try catalog.count(Person.self)) people and "
            + "\(try catalog.count(Dog.self)) dogs, queried as usual")
    do {
        try catalog.write { tx in try tx.insert(Person(name: "Mallory")) }
    } catch {
        say("a write is refused: \(error)")
    }
    say("to look inside any store without the app: swift run cellar info \(shipped.path)")
    say(keepsStores ? "(--keep: the stores stay there)" : "(run the demo with --keep to keep the stores for that)")

    say("@Record, generated record code, has its own story: swift run cellar-demo-record")

    heading("Lists and text, queried as Realm users do")
    let chores = try Store(at: folder.appendingPathComponent("chores"), configuration: .init(models: [Chore.self]))
    try chores.write { tx in
        try tx.insert(Chore(title: "Buy milk", tags: ["errand", "home"]))
        try tx.insert(Chore(title: "Café bill", tags: ["errand", "paper"]))
        try tx.insert(Chore(title: "Water plants", tags: ["home"]))
    }
    let errands = chores.objects(Chore.self).where(.contains(\.tags, "errand"))
    say("errands: \(try errands.results().map(\.title).joined(separator: ", ")) (\(try errands.explain()))")
    let cafe = chores.objects(Chore.self)
        .where(.hasPrefix(\.title, "CAFE", options: [.caseInsensitive, .diacriticInsensitive]))
    say(
        "titles starting with CAFE, ignoring case and accents: \(try cafe.results().map(\.title)) (\(try cafe.explain()))"
    )
    say(
        "done by query: \(try chores.write { tx in try tx.delete(tx.objects(Chore.self).where(.contains(\.tags, "home"))) }) chores deleted"
    )

    heading("Searching the to-do list, in English and Japanese")
    let todos = try Store(at: folder.appendingPathComponent("todos"), configuration: .init(models: [Todo.self]))
    try todos.write { tx in
        try tx.insert(
            Todo(title: "Book the café", notes: "A table for four near the park, on Friday evening", list: "home"))
        try tx.insert(Todo(title: "Walk the dog", notes: "A long walk in the dog park before the rain", list: "home"))
        try tx.insert(
            Todo(title: "Parking permit", notes: "Renew the residents' parking permit online", list: "errands"))
        try tx.insert(Todo(title: "牛乳を買う", notes: "帰りにスーパーで牛乳と卵を買う", list: "errands"))
        try tx.insert(Todo(title: "東京の友達に電話", notes: "来週の京都旅行について話す", list: "home"))
        for (title, notes) in [
            ("Pay the rent", "Before the first of the month"), ("Call the plumber", "The kitchen tap drips"),
            ("Return the books", "Three novels, due on Monday"), ("Fix the bike", "A new chain and brakes"),
            ("Plan the garden", "Tomatoes, basil and beans this year"),
        ] {
            try tx.insert(Todo(title: title, notes: notes, list: "home"))
        }
    }
    for text in ["park", "par*", "\"dog park\"", "CAFE OR 牛乳", "京都", "park NOT dog"] {
        let hits = try todos.objects(Todo.self).where(.matches(text)).searchResults()
        let found = hits.map { hit in
            "\(hit.value.title) (\((hit.score * 100).rounded() / 100)): \(hit.snippet(of: \.notes, words: 6).marked())"
        }
        say("\(text) → " + (found.isEmpty ? "nothing" : found.joined(separator: "; ")))
    }
    let atHome = todos.objects(Todo.self).where(.matches("park") && \.list == "home")
    say("park, at home: \(try atHome.results().map(\.title)) (\(try atHome.explain()))")

    heading("Async writes run on the store's writer queue")
    let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
        for name in ["Frank", "Grace", "Heidi"] {
            group.addTask { try await store.write { tx in try tx.insert(Person(name: name)).id } }
        }
        var ids: [Int64] = []
        for try await id in group { ids.append(id) }
        return ids.sorted()
    }
    say("three tasks inserted concurrently and got ids \(ids.map(String.init).joined(separator: ", "))")
    say(try await readsInAsyncCode(store, id: ids[0]))
    print("\nDone.")
} catch {
    print("cellar-demo failed: \(error)")
    exit(1)
}

func alice(in people: Results<Person>) -> Person { people.first { $0.name == "Alice" } ?? people[0] }

/// One rule for await: every call that opens, reads or writes a store has an async form of the same name, which an
/// async function picks. (Top-level code, as here in main.swift, may await but picks the blocking forms.)
func readsInAsyncCode(_ store: Store, id: Int64) async throws -> String {
    let grace = try await store.objects(Person.self).where(\.name == "Grace").first()
    let total = try await store.count(Person.self)
    let byID = try await store.object(Person.self, id: id)
    return "in an async function every read is awaited, as every write is: first() found \(grace?.name ?? "nobody"), "
        + "count(_:) says \(total) people, object(_:id:) found #\(byID?.id ?? 0)"
}
