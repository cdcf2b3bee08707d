import Foundation
import Testing

@testable import Cellar

/// `migrationRequired` says first which changes need the migration and why, then what else changed.
@Suite("The words of migrationRequired")
struct MigrationMessageTests {
    enum V1 {
        struct Note: Model {
            var id: Int64
            var title: String
            static let schema = Schema<Note>(name: "Note")
        }
    }

    enum V2 {
        struct Note: Model {
            var id: Int64
            var title: String
            var wordCount: Int
            var pinned: Bool
            var subtitle: String?
            static let schema = Schema<Note>(name: "Note", indexes: [.index(\.title)])
                .property(\.pinned, default: false)
        }

        struct Tag: Model {
            var id: String
        }

        struct Folder: Model {
            var id: Int64
            var notes: [Link<Note>] = []
            static let schema = Schema<Folder>(links: [.link(\.notes, deleteRule: .cascade, exclusive: true)])
        }
    }

    @Test func theChangeThatNeedsTheMigrationComesFirstWithItsReason() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([V1.Note.self])
            try store.write { tx in try tx.insert(V1.Note(id: 1, title: "Groceries")) }
        }
        #expect {
            try folder.store([V2.Note.self, V2.Tag.self, V2.Folder.self])
        } throws: { error in
            guard case StoreError.migrationRequired = error else { return false }
            let expected = """
                Migration is required due to the following errors:
                - Property 'Note.wordCount' has been added (required, type 'int'): stored records have no value for \
                it and it has no default: set 'wordCount' in a migration step, or declare a default with Schema's \
                property(_:default:).
                Also changed, which opening applies by itself:
                - Property 'Note.pinned' has been added (required, with a default).
                - Property 'Note.subtitle' has been added.
                - Index 'title' has been added to 'Note'.
                - Model 'Tag' has been added.
                - Model 'Folder' has been added.
                Raise Configuration.schemaVersion
                """
            #expect(String(describing: error).hasPrefix(expected), "\(error)")
            return true
        }
    }

    /// Only a declared default, which opening writes into every record: an extension that may not migrate is told
    /// that, not that a change needs a migration step.
    @Test func aConfigurationThatMayNotMigrateIsToldSo() throws {
        enum Declared {
            struct Note: Model {
                var id: Int64
                var title: String
                var pinned: Bool
                static let schema = Schema<Note>(name: "Note").property(\.pinned, default: false)
            }
        }
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([V1.Note.self])
            try store.write { tx in try tx.insert(V1.Note(id: 1, title: "Groceries")) }
        }
        var configuration = Configuration(models: [Declared.Note.self])
        configuration.allowsMigration = false
        #expect {
            try Store(at: folder.url, configuration: configuration)
        } throws: { error in
            let words = String(describing: error)
            #expect(
                words.hasPrefix(
                    """
                    Migration is required: opening would rewrite stored records, and this configuration has \
                    allowsMigration set to false (an app extension leaves migrating to the app). The changes:
                    - Property 'Note.pinned' has been added (required, with a default).
                    """), "\(words)")
            return true
        }
    }

    @Test func aNestedFieldIsSetThroughItsProperty() {
        let change = SchemaChange.propertyAdded(
            model: "Person", property: "address.zip", kind: "string", isOptional: false, hasDefault: false)
        #expect(
            change.migrationReason
                == "stored records have no value for it: set 'address' with its 'zip' in a migration step")
        let typeChange = SchemaChange.propertyTypeChanged(
            model: "Person", property: "address.zip", from: "int", to: "string")
        #expect(typeChange.migrationReason == "stored values are 'int': convert 'address' in a migration step")
    }

    @Test func aLinkIsToldWithItsRulesAsTheSchemaDeclaresThem() throws {
        let link = StoredLink(
            property: "notes", target: "Note", database: "b/Folder.notes", deleteRule: "cascade",
            targetDeleteRule: "removeLink", isExclusive: true, ownsTargets: false, allowsDangling: true)
        #expect(
            link.label
                == "notes → Note (deleteRule: .cascade, targetDeleteRule: .removeLink, exclusive: true, "
                + "allowsDangling: true)")
        #expect(
            SchemaChange.linkAdded(model: "Folder", link: link.label).description
                == "Link 'Folder.notes → Note (deleteRule: .cascade, targetDeleteRule: .removeLink, exclusive: true, "
                + "allowsDangling: true)' has been added.")
    }
}
