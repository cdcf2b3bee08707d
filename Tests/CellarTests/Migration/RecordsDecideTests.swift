@_spi(Sync) import Cellar
import Foundation
import LMDB
import Testing

@testable import Cellar

/// Opening describes a model from its stored properties and lets its stored records, decoded by the model itself,
/// decide what a change needs.
@Suite("Schema changes: the stored records decide")
struct RecordsDecideTests {
    enum V1 {
        struct Pet: Model, Equatable {
            var id: Int
            var name: String
            enum CodingKeys: String, CodingKey {
                case id
                case name = "n"
            }
        }
    }

    enum V2 {
        /// The same properties under another coding key: nothing in the type's metadata changed.
        struct Pet: Model, Equatable {
            var id: Int
            var name: String
        }

        /// A required property added, which its own decoder fills when a record lacks it.
        struct Filled: Model, Equatable {
            var id: Int
            var name: String
            var color: String
            static let schema = Schema<Filled>(name: "Pet")

            enum CodingKeys: String, CodingKey {
                case id
                case name = "n"
                case color
            }
            init(id: Int, name: String, color: String) {
                (self.id, self.name, self.color) = (id, name, color)
            }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                id = try container.decode(Int.self, forKey: .id)
                name = try container.decode(String.self, forKey: .name)
                color = try container.decodeIfPresent(String.self, forKey: .color) ?? "brown"
            }
        }
    }

    private func fill(_ folder: TemporaryFolder) throws {
        let store = try folder.store([V1.Pet.self])
        try store.write { tx in
            for id in 1...3 { try tx.insert(V1.Pet(id: id, name: "pet \(id)")) }
        }
    }

    @Test func codingKeysChangedAloneAreFoundAtOpeningByTheFirstRecord() throws {
        let folder = TemporaryFolder()
        try fill(folder)
        let configuration = Configuration(models: [V2.Pet.self])
        let pending = try Store.pendingChanges(at: folder.url, configuration: configuration)
        guard case .propertyUnreadable(let model, let property, let reason)? = pending.unmigratedChanges.first else {
            Issue.record("\(pending)")
            return
        }
        #expect(model == "Pet" && property == "name", "\(property)")
        #expect(reason.contains("the record with id 1") && reason.contains("'name' is missing"), "\(reason)")
        let error = #expect(throws: StoreError.self) { try Store(at: folder.url, configuration: configuration) }
        #expect(
            error?.description.contains("Property 'Pet.name' can no longer be read") == true,
            "\(String(describing: error))")
        // Read-only, the same change is refused in words.
        var readOnly = configuration
        readOnly.readOnly = true
        #expect(throws: StoreError.self) { try Store(at: folder.url, configuration: readOnly) }
        // The first version still opens and reads every record.
        #expect(try folder.store([V1.Pet.self]).objects(V1.Pet.self).count() == 3)
    }

    /// Migration steps run before any record is decoded: the first record is decoded after them, so coding keys that
    /// changed alone are still found, and the migration fails with nothing written.
    @Test func codingKeysChangedAloneAreFoundAfterAMigrationStep() throws {
        let folder = TemporaryFolder()
        try fill(folder)
        let configuration = Configuration(models: [V2.Pet.self], schemaVersion: 2, migrations: [.to(2) { _ in }])
        let error = #expect(throws: StoreError.self) { try Store(at: folder.url, configuration: configuration) }
        guard case .migrationFailed(let version, let reason)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(version == 2 && reason.contains("Property 'Pet.name' can no longer be read"), "\(reason)")
        #expect(try folder.store([V1.Pet.self]).objects(V1.Pet.self).count() == 3)
    }

    enum V3 {
        /// `V1.Pet` with an optional property added: no record can fail on that alone.
        struct Pet: Model, Equatable {
            var id: Int
            var name: String
            var nickname: String?
            enum CodingKeys: String, CodingKey {
                case id
                case name = "n"
                case nickname
            }
        }
    }

    /// An optional property added needs the first record alone: a damaged record further on neither costs a decode of
    /// every record nor stops the opening, and its read still says what is wrong.
    @Test func anOptionalPropertyAddedDecodesTheFirstRecordOnly() throws {
        let folder = TemporaryFolder()
        try fill(folder)
        do {
            let environment = try Environment(path: folder.url.path)
            defer { environment.close() }
            try environment.write { txn in
                let records = try #require(try txn.openDatabase(named: DatabaseName.records("Pet")))
                var last: ([UInt8], [UInt8])?
                try txn.walk(records) { entry in
                    last = (Array(entry.key), Array(entry.value))
                    return true
                }
                var (key, value) = try #require(last)
                value[value.count / 2] ^= 0x01
                try txn.put(records, key: key, value: value)
            }
        }
        let store = try folder.store([V3.Pet.self])
        #expect(try store.object(V3.Pet.self, id: 1) == V3.Pet(id: 1, name: "pet 1", nickname: nil))
        #expect(throws: StoreError.self) { try store.object(V3.Pet.self, id: 3) }
    }

    @Test func aRequiredPropertyTheModelsDecoderFillsNeedsNoMigration() throws {
        let folder = TemporaryFolder()
        try fill(folder)
        let configuration = Configuration(models: [V2.Filled.self])
        let pending = try Store.pendingChanges(at: folder.url, configuration: configuration)
        // The comparison names the change in Realm's words; every record reads, so nothing needs a migration.
        #expect(
            pending.changes.contains {
                $0.description == "Property 'Pet.color' has been added (required, type 'string')."
            })
        #expect(pending.unmigratedChanges == [])
        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.object(V2.Filled.self, id: 2) == V2.Filled(id: 2, name: "pet 2", color: "brown"))
        try store.write { tx in try tx.update(V2.Filled(id: 2, name: "pet 2", color: "black")) }
        #expect(try store.object(V2.Filled.self, id: 2)?.color == "black")
    }

    /// Stored under `Pet` by another type, so that this process has never seen `Reader` write.
    struct Reader: Model, Equatable {
        var id: Int
        var n: String
        static let schema = Schema<Reader>(name: "Pet")
    }

    @Test func theFirstRecordOpeningReadsTiesAModelsFieldsForConditionsOnBytes() throws {
        let folder = TemporaryFolder()
        try fill(folder)
        #expect(!CodableFields.hasSeen(Reader.self))
        let store = try folder.store([Reader.self])
        #expect(CodableFields.writtenKeys(Reader.self) == ["id", "n"])
        let query = store.objects(Reader.self).where(\.n == "pet 2")
        #expect(try query.results().map(\.id) == [2])
        let plan = try query.explain()
        #expect(plan.contains("bytes"), "\(plan)")
    }
}

/// A store whose schemas an earlier Cellar stored, when it learnt fields by decoding placeholders: it described a
/// type that refused them by name, and a struct with its own coding keys by those keys. The first opening with this
/// version finds its description changed, decodes the records, finds they read, and stores the new description.
@Suite("Schema changes: a store described by an earlier Cellar")
struct EarlierDescriptionTests {
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

    struct Member: Model, Equatable {
        var id: Int
        var fullName: String
        var email: Email
        static let schema = Schema<Member>(indexes: [.index(\.fullName)])
        enum CodingKeys: String, CodingKey {
            case id
            case fullName = "full_name"
            case email
        }
    }

    @Test func itOpensWithoutAMigrationAndTheNextOpeningIsUnchanged() throws {
        let folder = TemporaryFolder()
        let members = (1...4).map { Member(id: $0, fullName: "member \($0)", email: Email("m\($0)@x.y")) }
        do {
            let store = try folder.store([Member.self])
            try store.write { tx in for member in members { try tx.insert(member) } }
        }
        // The description the capturing Cellar stored: the coding keys, and the refusing type by name.
        var earlier = Member.describeSchema()
        earlier.properties = [
            PropertyShape(name: "id", shape: .int, isOptional: false),
            PropertyShape(name: "full_name", shape: .string, isOptional: false),
            PropertyShape(name: "email", shape: .opaque("Email"), isOptional: false),
        ]
        do {
            let environment = try Environment(path: folder.url.path)
            defer { environment.close() }
            try environment.write { txn in
                let meta = try #require(try txn.openDatabase(named: "_meta"))
                try txn.put(
                    meta, key: Array("schema/Member".utf8), value: Array(try ModelSchema.encoder.encode(earlier)))
            }
        }
        let configuration = Configuration(models: [Member.self])
        let pending = try Store.pendingChanges(at: folder.url, configuration: configuration)
        #expect(
            pending.changes == [
                .propertyAdded(
                    model: "Member", property: "fullName", kind: "string", isOptional: false, hasDefault: false),
                .propertyRemoved(model: "Member", property: "full_name"),
            ])
        #expect(pending.unmigratedChanges == [])
        // Read-only, the new description cannot be stored: refused in words until the store opens writable once.
        var readOnlyFirst = configuration
        readOnlyFirst.readOnly = true
        #expect(throws: StoreError.self) { try Store(at: folder.url, configuration: readOnlyFirst) }
        do {
            let store = try Store(at: folder.url, configuration: configuration)
            #expect(Array(try store.objects(Member.self).results()) == members)
            #expect(try store.objects(Member.self).where(\.fullName == "member 3").results().map(\.id) == [3])
            #expect(try store.verifyIntegrity().problems == [])
        }
        #expect(try Store.pendingChanges(at: folder.url, configuration: configuration).changes == [])
        var readOnly = configuration
        readOnly.readOnly = true
        #expect(try Store(at: folder.url, configuration: readOnly).objects(Member.self).count() == 4)
    }
}

/// What type metadata says differently from synthesized `Codable`, and the keys learnt from stored records.
@Suite("Schema description: wrappers, classes, keys from records")
struct DescriptionEdgeTests {
    @propertyWrapper
    struct Clamped: Codable, Equatable, Sendable {
        var value: Int
        var wrappedValue: Int {
            get { value }
            set { value = min(max(newValue, 0), 10) }
        }
        init(wrappedValue: Int) { value = min(max(wrappedValue, 0), 10) }
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    struct Rated: Model, Equatable {
        var id: Int
        @Clamped var score: Int
    }

    /// A class model (mutable `id`, as `Model` asks): its metadata lists no struct fields.
    final class Boxed: Model, Equatable, @unchecked Sendable {
        var id: Int
        let label: String
        init(id: Int, label: String) { (self.id, self.label) = (id, label) }
        static func == (lhs: Boxed, rhs: Boxed) -> Bool { lhs.id == rhs.id && lhs.label == rhs.label }
    }

    @Test func aWrappedPropertyIsDescribedByItsNameAndAClassByItsRecords() throws {
        #expect(Rated.describeSchema().properties.map(\.name) == ["id", "score"])
        #expect(Boxed.describeSchema().properties.isEmpty)
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Rated.self, Boxed.self])
            try store.write { tx in
                try tx.insert(Rated(id: 1, score: 42))
                try tx.insert(Boxed(id: 1, label: "a"))
            }
        }
        let store = try folder.store([Rated.self, Boxed.self])
        #expect(try store.object(Rated.self, id: 1)?.score == 10)
        #expect(try store.object(Boxed.self, id: 1) == Boxed(id: 1, label: "a"))
        #expect(try store.objects(Rated.self).where(\.score == 10).count() == 1)
    }

    /// Stored under `Pet` by `RecordsDecideTests.V1.Pet`, so that this process never saw this type write.
    struct KeysReader: Model {
        var id: Int
        var name: String
        static let schema = Schema<KeysReader>(name: "Pet")
        enum CodingKeys: String, CodingKey {
            case id
            case name = "n"
        }
    }

    @Test func syncNamesAModelsPropertiesByTheKeysItsStoredRecordsShow() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([RecordsDecideTests.V1.Pet.self])
            try store.write { tx in try tx.insert(RecordsDecideTests.V1.Pet(id: 1, name: "a")) }
        }
        let store = try Store(
            at: folder.url,
            configuration: .init(models: [KeysReader.self], schemaVersion: 2, migrations: [.to(2) { _ in }]))
        #expect(try store.propertyNames(of: KeysReader.self) == ["id", "n", "name"])
    }
}
