import CellarMacros
import Foundation
import LMDB
import PropertyBased
import Testing

@testable import Cellar

/// Targets with the three kinds of id whose keys `LinkBytes` reads from bytes, and one (`Int32`) whose it does not.
enum Edited {
    struct Dog: Model, Equatable { var id: Int64 }
    struct Tag: Model, Equatable { var id: String }
    struct Badge: Model, Equatable { var id: UUID }
    struct Bone: Model, Equatable { var id: Int32 }

    /// A plain `Codable` model with every kind of link, an index on a stored property and a property whose reading
    /// is counted.
    struct Holder: Model, Equatable {
        var id: Int64
        var name: String
        var dogs: [Link<Dog>]
        var best: Link<Dog>?
        var tags: [Link<Tag>]
        var badge: Link<Badge>?
        var badges: [Link<Badge>]
        var bones: [Link<Bone>]
        var tally: Tally
        static let schema = Schema<Holder>(
            indexes: [.index(\.name)],
            links: [.link(\.dogs), .link(\.best), .link(\.tags), .link(\.badge), .link(\.badges), .link(\.bones)])
    }

    /// The same with generated record code.
    @Record
    struct RecordHolder: Model, Equatable {
        var id: Int64
        var name: String
        var dogs: [Link<Dog>]
        var best: Link<Dog>?
        var tags: [Link<Tag>]
        var badge: Link<Badge>?
        var badges: [Link<Badge>]
        var bones: [Link<Bone>]
        var tally: Tally
        static let schema = Schema<RecordHolder>(
            indexes: [.index(\.name)],
            links: [.link(\.dogs), .link(\.best), .link(\.tags), .link(\.badge), .link(\.badges), .link(\.bones)])
    }

    /// An index on a computed property that reads the links: its entry moves when a link goes, so the record is
    /// decoded to find it.
    struct Counted: Model, Equatable {
        var id: Int64
        var dogs: [Link<Dog>]
        var dogCount: Int { dogs.count }
        static let schema = Schema<Counted>(indexes: [.index(\.dogCount, name: "dogCount")], links: [.link(\.dogs)])
    }

    /// Keys that are not the property names, and a decoding of its own: its fields cannot be tied to its properties.
    struct Renamed: Model, Equatable {
        var id: Int64
        var dogs: [Link<Dog>]
        enum CodingKeys: String, CodingKey {
            case id
            case dogs = "pets"
        }
        init(id: Int64, dogs: [Link<Dog>]) { (self.id, self.dogs) = (id, dogs) }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(Int64.self, forKey: .id)
            dogs = try container.decode([Link<Dog>].self, forKey: .dogs)
        }
        static let schema = Schema<Renamed>(links: [.link(\.dogs)])
    }

    /// An id of its own type, stored as text, whose decoding folds case: a link stored as "ABC" decodes as "abc".
    struct Slug: Codable, Hashable, Sendable {
        var text: String
        init(_ text: String) { self.text = text }
        init(from decoder: any Decoder) throws {
            text = try decoder.singleValueContainer().decode(String.self).lowercased()
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
    }

    struct Page: Model, Equatable { var id: Slug }

    struct Reader: Model, Equatable {
        var id: Int64
        var pages: [Link<Page>]
        static let schema = Schema<Reader>(links: [.link(\.pages)])
    }

    /// An index of the whole record: its key holds the links too.
    struct Whole: Model, Equatable, Encodable {
        var id: Int64
        var dogs: [Link<Dog>]
        static let schema = Schema<Whole>(indexes: [.index(\.self, name: "whole")], links: [.link(\.dogs)])
    }

    /// How many `Watch` values were decoded, by this file's one test that reads it.
    static let watchReads = Lock(0)

    /// A property whose reading is counted (`Tally` is shared with suites that run alongside).
    struct Watch: RecordStorable, Equatable {
        init() {}
        init(from decoder: any Decoder) throws {
            watchReads.withLock { $0 += 1 }
            _ = try decoder.singleValueContainer().decode(Int.self)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(0)
        }
        static func read(from reader: inout RecordReader) throws -> Watch {
            watchReads.withLock { $0 += 1 }
            _ = try reader.readInteger(Int.self)
            return Watch()
        }
        func write(to writer: inout RecordWriter) { writer.writeInt(0) }
    }

    /// A holder whose reading is counted, plain `Codable` and generated.
    struct Watched: Model, Equatable {
        var id: Int64
        var dogs: [Link<Dog>]
        var best: Link<Dog>?
        var watch = Watch()
        static let schema = Schema<Watched>(links: [.link(\.dogs), .link(\.best)])
    }

    @Record
    struct RecordWatched: Model, Equatable {
        var id: Int64
        var dogs: [Link<Dog>]
        var best: Link<Dog>?
        var watch = Watch()
        static let schema = Schema<RecordWatched>(links: [.link(\.dogs), .link(\.best)])
    }

    static let models: [any Model.Type] = [
        Dog.self, Tag.self, Badge.self, Bone.self, Holder.self, RecordHolder.self, Counted.self, Renamed.self,
        Watched.self, RecordWatched.self, Page.self, Reader.self, Whole.self,
    ]
    static let badges = (0..<6).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }
    /// Tags with text that needs escaping and folding into keys: a zero byte, composed and decomposed accents.
    static let tags = ["a", "b\u{0}c", "caf\u{E9}", "long tag name with spaces", "\u{65E5}\u{672C}", "z"]
}

/// Deleting a record drops the links to it from every record that held one: edited in the holder's bytes where
/// that gives what decoding, dropping and encoding gives, and decoded otherwise.
@Suite("Relationships: links dropped in a record's bytes", .hangGuard)
struct LinkBytesTests {
    /// A holder's links, as indexes into the targets (ids 1...6, tags and badges by position), repeats allowed.
    struct Links: CustomStringConvertible {
        let dogs: [Int]
        let best: Int?
        let tags: [Int]
        let badge: Int?
        let badges: [Int]
        let bones: [Int]
        var description: String {
            "dogs \(dogs) best \(String(describing: best)) tags \(tags) badge \(String(describing: badge)) badges \(badges) bones \(bones)"
        }
    }

    static let list = Gen.int(in: 0...5).array(of: 0...7)
    static let one = Gen.int(in: 0...6).map { $0 == 6 ? nil : $0 }
    static let links = zip(list, one, list, one, list, list).map {
        Links(dogs: $0, best: $1, tags: $2, badge: $3, badges: $4, bones: $5)
    }
    /// Which targets each step deletes: bits over the six of each model.
    static let deletes = zip(Gen.int(in: 0...63), Gen.int(in: 0...63), Gen.int(in: 0...63), Gen.int(in: 0...63))
        .array(of: 1...3)

    static func holder(_ id: Int64, _ links: Links) -> Edited.Holder {
        Edited.Holder(
            id: id, name: "holder \(id)", dogs: links.dogs.map { Link(id: Int64($0 + 1)) },
            best: links.best.map { Link(id: Int64($0 + 1)) }, tags: links.tags.map { Link(id: Edited.tags[$0]) },
            badge: links.badge.map { Link(id: Edited.badges[$0]) },
            badges: links.badges.map { Link(id: Edited.badges[$0]) },
            bones: links.bones.map { Link(id: Int32($0 + 1)) }, tally: Tally(Int(id)))
    }

    static func recordHolder(_ holder: Edited.Holder) -> Edited.RecordHolder {
        Edited.RecordHolder(
            id: holder.id, name: holder.name, dogs: holder.dogs, best: holder.best, tags: holder.tags,
            badge: holder.badge,
            badges: holder.badges, bones: holder.bones, tally: holder.tally)
    }

    /// The holder with its links to the deleted targets dropped: what the rule `.removeLink` promises.
    static func dropping(
        _ holder: Edited.Holder, dogs: Set<Int64>, tags: Set<String>, badges: Set<UUID>, bones: Set<Int32>
    ) -> Edited.Holder {
        var holder = holder
        holder.dogs.removeAll { dogs.contains($0.id) }
        if let best = holder.best, dogs.contains(best.id) { holder.best = nil }
        holder.tags.removeAll { tags.contains($0.id) }
        if let badge = holder.badge, badges.contains(badge.id) { holder.badge = nil }
        holder.badges.removeAll { badges.contains($0.id) }
        holder.bones.removeAll { bones.contains($0.id) }
        return holder
    }

    /// The stored bytes of the record of `M` with `id`.
    static func bytes<M: Model>(of _: M.Type, id: Int64, in store: Store) throws -> [UInt8]? {
        try store.read { scope in
            let info = try store.info(for: M.self)
            return try scope.lmdb.get(info.records, key: try KeyEncoding.key(id)).map(Array.init)
        }
    }

    static func fill(_ store: Store, holders: [Edited.Holder]) throws {
        try store.write { tx in
            for id in 1...6 {
                try tx.insert(Edited.Dog(id: Int64(id)))
                try tx.insert(Edited.Bone(id: Int32(id)))
            }
            for tag in Edited.tags { try tx.insert(Edited.Tag(id: tag)) }
            for badge in Edited.badges { try tx.insert(Edited.Badge(id: badge)) }
            for holder in holders {
                try tx.insert(holder)
                try tx.insert(recordHolder(holder))
            }
        }
    }

    /// After each delete, every holder (plain `Codable` and `@Record`) holds what the rule promises, and its bytes
    /// are those its coder writes for that value (a second store, where the values were written whole, holds them).
    @Test func droppedLinksLeaveTheBytesEncodingWrites() async {
        await checkProperty(count: 120, input: zip(Self.links.array(of: 1...5), Self.deletes)) { links, deletes in
            var holders = links.enumerated().map { Self.holder(Int64($0 + 1), $1) }
            let edited = TemporaryFolder()
            let written = TemporaryFolder()
            let store = try edited.store(Edited.models)
            let reference = try written.store(Edited.models)
            try Self.fill(store, holders: holders)
            try Self.fill(reference, holders: holders)
            for (dogBits, tagBits, badgeBits, boneBits) in deletes {
                let picked = { (bits: Int) in (0..<6).filter { bits & (1 << $0) != 0 } }
                let dogs = Set(picked(dogBits).map { Int64($0 + 1) })
                let tags = Set(picked(tagBits).map { Edited.tags[$0] })
                let badges = Set(picked(badgeBits).map { Edited.badges[$0] })
                let bones = Set(picked(boneBits).map { Int32($0 + 1) })
                try store.write { tx in
                    try tx.delete(Edited.Dog.self, ids: dogs)
                    try tx.delete(Edited.Tag.self, ids: tags)
                    try tx.delete(Edited.Badge.self, ids: badges)
                    try tx.delete(Edited.Bone.self, ids: bones)
                }
                holders = holders.map { Self.dropping($0, dogs: dogs, tags: tags, badges: badges, bones: bones) }
                try reference.write { tx in
                    for holder in holders {
                        try tx.update(holder)
                        try tx.update(Self.recordHolder(holder))
                    }
                    try tx.delete(Edited.Dog.self, ids: dogs)
                    try tx.delete(Edited.Tag.self, ids: tags)
                    try tx.delete(Edited.Badge.self, ids: badges)
                    try tx.delete(Edited.Bone.self, ids: bones)
                }
                for holder in holders {
                    let recordHolder = Self.recordHolder(holder)
                    #expect(try store.object(Edited.Holder.self, id: holder.id) == holder)
                    #expect(try store.object(Edited.RecordHolder.self, id: holder.id) == recordHolder)
                    let edited = try Self.bytes(of: Edited.Holder.self, id: holder.id, in: store)
                    let written = try Self.bytes(of: Edited.Holder.self, id: holder.id, in: reference)
                    #expect(edited != nil && edited == written, "\(holder)")
                    let editedRecord = try Self.bytes(of: Edited.RecordHolder.self, id: holder.id, in: store)
                    let writtenRecord = try Self.bytes(of: Edited.RecordHolder.self, id: holder.id, in: reference)
                    #expect(editedRecord != nil && editedRecord == writtenRecord, "\(recordHolder)")
                }
                #expect(try store.verifyIntegrity().problems == [])
            }
        }
    }

    /// Dropping a link neither decodes nor encodes the holder: its counted property is never read, for the plain
    /// `Codable` model and the generated one alike.
    @Test func aHolderIsEditedWithoutBeingDecoded() throws {
        let folder = TemporaryFolder()
        let store = try folder.store(Edited.models)
        try store.write { tx in
            for id in 1...3 { try tx.insert(Edited.Dog(id: Int64(id))) }
            try tx.insert(Edited.Watched(id: 1, dogs: [Link(id: 1), Link(id: 2), Link(id: 1)], best: Link(id: 1)))
            try tx.insert(Edited.RecordWatched(id: 1, dogs: [Link(id: 3), Link(id: 1)], best: Link(id: 2)))
        }
        // Which fields hold the links is learnt from the first record the model wrote, once per process.
        for fields in [LinkBytes.fields(of: Edited.Watched.self), LinkBytes.fields(of: Edited.RecordWatched.self)] {
            #expect(fields.map { $0?.name } == ["dogs", "best"])
        }
        let before = Edited.watchReads.withLock { $0 }
        try store.write { tx in try tx.delete(Edited.Dog.self, ids: [1, 2]) }
        #expect(Edited.watchReads.withLock { $0 } == before)
        #expect(try store.object(Edited.Watched.self, id: 1) == Edited.Watched(id: 1, dogs: [], best: nil))
        #expect(
            try store.object(Edited.RecordWatched.self, id: 1)
                == Edited.RecordWatched(id: 1, dogs: [Link(id: 3)], best: nil))
        #expect(try store.verifyIntegrity().problems == [])
    }

    /// An observer of a holder hears of the edit as of any update: the holder without the link, and the link's
    /// property named as the one that changed; observers of a query over the holders see it too.
    @Test func observersOfTheHolderSeeTheEdit() async throws {
        let folder = TemporaryFolder()
        let store = try folder.store(Edited.models)
        try await store.write { tx in
            for id in 1...3 { try tx.insert(Edited.Dog(id: Int64(id))) }
            try tx.insert(Edited.Watched(id: 1, dogs: [Link(id: 1), Link(id: 2)], best: Link(id: 3)))
        }
        var object = store.changes(of: Edited.Watched.self, id: 1).makeAsyncIterator()
        var list = store.changes(of: store.objects(Edited.Watched.self)).makeAsyncIterator()
        _ = try await object.next()
        _ = try await list.next()
        try await store.write { tx in try tx.delete(Edited.Dog.self, id: 2) }
        guard case .changed(let changed, let properties) = try await object.next() else {
            Issue.record("no change")
            return
        }
        #expect(changed == Edited.Watched(id: 1, dogs: [Link(id: 1)], best: Link(id: 3)))
        #expect(properties == ["dogs"])
        let change = try #require(try await list.next())
        #expect(change.modifiedIDs == [1])
        #expect(Array(change.results) == [changed])
    }

    /// Where the bytes alone cannot do it, the holder is decoded, and the result is the same: an index on a computed
    /// property that counts the links moves with them; a model with its own keys and decoding loses its link.
    @Test func aComputedIndexOrUnknownFieldsTakeTheDecodedPath() throws {
        let folder = TemporaryFolder()
        let store = try folder.store(Edited.models)
        try store.write { tx in
            for id in 1...3 { try tx.insert(Edited.Dog(id: Int64(id))) }
            try tx.insert(Edited.Counted(id: 1, dogs: [Link(id: 1), Link(id: 2), Link(id: 3)]))
            try tx.insert(Edited.Renamed(id: 1, dogs: [Link(id: 2), Link(id: 1)]))
            // A record the model wrote is what ties its properties to its fields.
            try tx.insert(
                Edited.Holder(
                    id: 9, name: "h", dogs: [], best: nil, tags: [], badge: nil, badges: [], bones: [], tally: Tally(1))
            )
        }
        #expect(LinkBytes.fields(of: Edited.Counted.self).allSatisfy { $0 == nil })
        #expect(LinkBytes.fields(of: Edited.Renamed.self).allSatisfy { $0 == nil })
        // `bones` link to Int32 ids: the bytes would do, but the rule is the four id types whose keys are read.
        #expect(
            LinkBytes.fields(of: Edited.Holder.self).map { $0?.name } == [
                "dogs", "best", "tags", "badge", "badges", nil,
            ])
        try store.write { tx in try tx.delete(Edited.Dog.self, id: 2) }
        #expect(try store.object(Edited.Counted.self, id: 1)?.dogs == [Link(id: 1), Link(id: 3)])
        #expect(try store.objects(Edited.Counted.self).where(\.dogCount == 2).count() == 1)
        #expect(try store.objects(Edited.Counted.self).where(\.dogCount == 3).count() == 0)
        #expect(try store.object(Edited.Renamed.self, id: 1)?.dogs == [Link(id: 1)])
        #expect(try store.verifyIntegrity().problems == [])
    }

    /// A target whose id is of a type of its own is decoded through it: its decoding may read stored bytes as another
    /// id (a link written as "ABC" leads to the page "abc"), which the bytes alone would not know.
    @Test func anIDOfItsOwnTypeTakesTheDecodedPath() throws {
        let folder = TemporaryFolder()
        let store = try folder.store(Edited.models)
        #expect(LinkBytes.fields(of: Edited.Reader.self).allSatisfy { $0 == nil })
        try store.write { tx in
            try tx.insert(Edited.Page(id: Edited.Slug("abc")))
            try tx.insert(Edited.Page(id: Edited.Slug("xyz")))
            try tx.insert(Edited.Reader(id: 1, pages: [Link(id: Edited.Slug("abc")), Link(id: Edited.Slug("xyz"))]))
        }
        try store.write { tx in try tx.delete(Edited.Page.self, id: Edited.Slug("abc")) }
        #expect(try store.object(Edited.Reader.self, id: 1)?.pages == [Link(id: Edited.Slug("xyz"))])
        #expect(try store.verifyIntegrity().problems == [])
    }

    /// An index of `\.self` reads every property: its entry moves when a link goes.
    @Test func anIndexOfTheWholeRecordTakesTheDecodedPath() throws {
        let folder = TemporaryFolder()
        let store = try folder.store(Edited.models)
        #expect(LinkBytes.fields(of: Edited.Whole.self).allSatisfy { $0 == nil })
        try store.write { tx in
            for id in 1...2 { try tx.insert(Edited.Dog(id: Int64(id))) }
            try tx.insert(Edited.Whole(id: 1, dogs: [Link(id: 1), Link(id: 2)]))
        }
        try store.write { tx in try tx.delete(Edited.Dog.self, id: 1) }
        #expect(try store.object(Edited.Whole.self, id: 1)?.dogs == [Link(id: 2)])
        #expect(try store.verifyIntegrity().problems == [])
    }
}
