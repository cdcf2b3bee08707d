import Foundation
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
