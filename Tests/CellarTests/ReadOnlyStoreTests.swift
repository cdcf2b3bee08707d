import Foundation
import LMDB
import Testing

@testable import Cellar

@Suite("Read-only stores")
struct ReadOnlyStoreTests {
    typealias Pet = PageCheckTests.Pet

    static func readOnly(_ models: [any Model.Type], schemaVersion: Int = 1) -> Configuration {
        var configuration = Configuration(models: models, schemaVersion: schemaVersion)
        configuration.readOnly = true
        return configuration
    }

    /// A closed store of pets (3,000 inserted, some deleted); how many there are, and how many are aged 1.
    @discardableResult
    static func pets(in folder: TemporaryFolder) throws -> (count: Int, agedOne: Int) {
        let store = try PageCheckTests.varied(in: folder)
        return (try store.count(Pet.self), try store.objects(Pet.self).where(\.age == 1).count())
    }

    @Test func aReadOnlyStoreReadsEverythingAndRefusesWrites() throws {
        let folder = TemporaryFolder()
        let (count, agedOne) = try Self.pets(in: folder)
        let before = try Data(contentsOf: folder.url.appendingPathComponent("data.mdb"))
        do {
            let store = try Store(at: folder.url, configuration: Self.readOnly([Pet.self]))
            #expect(try store.count(Pet.self) == count)
            #expect(try store.objects(Pet.self).where(\.age == 1).explain().contains("i/Pet.age"))
            #expect(try store.objects(Pet.self).where(\.age == 1).count() == agedOne)
            #expect(try store.object(Pet.self, id: 3)?.name == "pet 2")
            #expect(try store.verifyIntegrity().isConsistent)
            #expect(throws: StoreError.readOnly(path: folder.url.path, reason: "a write was asked of it")) {
                try store.write { tx in try tx.insert(Pet(name: "new", age: 1)) }
            }
            #expect(store.configuration.readOnly)
        }
        #expect(try Data(contentsOf: folder.url.appendingPathComponent("data.mdb")) == before)
        // A writable opening afterwards finds the store as it was, and may write.
        let store = try folder.store([Pet.self])
        try store.write { tx in try tx.insert(Pet(name: "new", age: 1)) }
        #expect(try store.count(Pet.self) == count + 1)
    }

    @Test func aReadOnlyStoreMustExist() throws {
        let folder = TemporaryFolder()
        let missing = folder.url.appendingPathComponent("nothing here")
        #expect(
            throws: StoreError.io(
                errno: ENOENT, operation: "find the store's folder", path: missing.path)
        ) {
            try Store(at: missing, configuration: Self.readOnly([Pet.self]))
        }
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    @Test func aReadOnlyStoreOpensOnlyWithTheModelsItWasWrittenWith() throws {
        struct Pet: Model {
            var id: Int64 = 0
            var name: String
            var age: Int
            var photo: Data = Data()
            var color: String?
            static let schema = Schema<Pet>(autoIncrement: true, indexes: [.index(\.age), .index(\.name)])
        }
        struct Collar: Model { var id: Int }
        let folder = TemporaryFolder()
        try Self.pets(in: folder)
        let reason = "opening it with these models would change its schema: Property 'Pet.color' has been added."
        #expect(throws: StoreError.readOnly(path: folder.url.path, reason: reason)) {
            try Store(at: folder.url, configuration: Self.readOnly([Pet.self]))
        }
        #expect(throws: StoreError.self) {
            try Store(at: folder.url, configuration: Self.readOnly([PageCheckTests.Pet.self, Collar.self]))
        }
        #expect(
            throws: StoreError.readOnly(
                path: folder.url.path, reason: "its schema version is 1, and this configuration's is 2")
        ) {
            try Store(at: folder.url, configuration: Self.readOnly([PageCheckTests.Pet.self], schemaVersion: 2))
        }
        // The refusals wrote nothing: the store opens writable with its own models, with no change pending.
        #expect(try Store.pendingChanges(at: folder.url, configuration: .init(models: [Self.Pet.self])).isEmpty)
    }

    @Test func aStoreOpenForWritingIsNotOpenedReadOnlyBesideIt() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Pet.self])
        #expect(
            throws: StoreError.configurationConflict(
                path: folder.url.path,
                reason: "it is open for writing, and this configuration asks for a read-only store; share that Store")
        ) {
            try Store(at: folder.url, configuration: Self.readOnly([Pet.self]))
        }
        _ = store
    }

    @Test func aLockFileAndFolderThisUserMayNotWriteAreReadWithoutLocks() throws {
        let folder = TemporaryFolder()
        let (count, agedOne) = try Self.pets(in: folder)
        let files = FileManager.default
        let lock = folder.url.appendingPathComponent("lock.mdb")
        for (name, removesLockFile) in [("with its lock file", false), ("without a lock file", true)] {
            if removesLockFile { try files.removeItem(at: lock) }
            for file in ["data.mdb", "lock.mdb"]
            where files.fileExists(atPath: folder.url.appendingPathComponent(file).path) {
                try files.setAttributes(
                    [.posixPermissions: 0o444], ofItemAtPath: folder.url.appendingPathComponent(file).path)
            }
            try files.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.url.path)
            defer { try? files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.url.path) }
            // Another process, as a user who may read the files but not write them (root becomes nobody).
            let lines = try helperOutput(["read-only-pets", folder.url.path]).split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "\(name): \(lines)")
            #expect(lines.first?.hasPrefix("writable: Could not") == true, "\(name): \(lines)")
            #expect(lines.first?.contains("Permission denied") == true, "\(name): \(lines)")
            #expect(lines.dropFirst().first == "read-only: \(count) pets, \(agedOne) aged 1", "\(name)")
            #expect(
                lines.last?.hasPrefix("write: The store at \(folder.url.path) is open read-only") == true, "\(name)")
            #expect(files.fileExists(atPath: lock.path) == !removesLockFile, "\(name)")
        }
    }

    @Test func theReaderTableListsReadersAndTellsStaleOnes() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Pet.self])
        _ = try store.count(Pet.self)
        let readers = try store.core.environment.readers
        #expect(!readers.isEmpty)
        #expect(readers.allSatisfy { $0.process == getpid() && $0.processIsAlive })
    }
}
