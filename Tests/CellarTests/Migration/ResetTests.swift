import Foundation
import LMDB
import Testing

@testable import Cellar

@Suite("Resetting a store")
struct ResetTests {
    let folder = TemporaryFolder()

    func fillVersion1() throws {
        let store = try Store(at: folder.url, configuration: petConfiguration(1))
        try store.write { tx in
            for index in 0..<10 { try tx.insert(V1.Pet(name: "pet \(index)", age: index)) }
        }
    }

    /// Version 2 of the pets without its migration: opening a version 1 file needs one.
    func unmigrated() -> Configuration {
        var configuration = petConfiguration(2)
        configuration.migrations = []
        return configuration
    }

    @Test func deleteStoreIfMigrationNeededStartsEmptyAfterOnReset() throws {
        try fillVersion1()
        let seen = Lock<[String]>([])
        var configuration = unmigrated()
        configuration.deleteStoreIfMigrationNeeded = true
        configuration.onReset = { reset in
            // The files are still there when the hook runs: an app can copy them away.
            let exists = FileManager.default.fileExists(atPath: reset.directory.appendingPathComponent("data.mdb").path)
            seen.withLock { $0.append("\(exists) \(reset.reason)") }
        }
        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.count(V2.Pet.self) == 0)
        let messages = seen.withLock { $0 }
        #expect(messages.count == 1)
        #expect(messages.first?.hasPrefix("true Migration is required") == true)
        try store.write { tx in try tx.insert(V2.Pet(name: "new", age: 1, color: "red")) }
        #expect(try store.objects(V2.Pet.self).results().map(\.id) == [1])
    }

    @Test func deleteStoreIfMigrationFailsResetsOnlyWhenAStepThrows() throws {
        try fillVersion1()
        struct Unconvertible: Error {}
        var configuration = petConfiguration(2)
        configuration.deleteStoreIfMigrationFails = true
        // A change that needs a migration and has none is not a failed migration: no reset.
        var missing = unmigrated()
        missing.deleteStoreIfMigrationFails = true
        #expect(throws: StoreError.self) { try Store(at: folder.url, configuration: missing) }
        #expect(try Store(at: folder.url, configuration: petConfiguration(1)).count(V1.Pet.self) == 10)
        configuration.migrations = [.to(2) { _ in throw Unconvertible() }]
        let store = try Store(at: folder.url, configuration: configuration)
        #expect(try store.count(V2.Pet.self) == 0)
    }

    @Test func anOnResetThatThrowsKeepsTheStore() throws {
        try fillVersion1()
        struct BackupFailed: Error, CustomStringConvertible {
            var description: String { "the disk is full" }
        }
        var configuration = unmigrated()
        configuration.deleteStoreIfMigrationNeeded = true
        configuration.onReset = { _ in throw BackupFailed() }
        #expect(
            throws: StoreError.migrationFailed(
                version: 2, reason: "onReset threw the disk is full, so the store was not deleted")
        ) {
            try Store(at: folder.url, configuration: configuration)
        }
        #expect(try Store(at: folder.url, configuration: petConfiguration(1)).count(V1.Pet.self) == 10)
    }

    @Test func aStoreOpenInThisProcessIsNeverReset() throws {
        try fillVersion1()
        let open = try Store(at: folder.url, configuration: .init(models: []))
        var configuration = unmigrated()
        configuration.deleteStoreIfMigrationNeeded = true
        #expect(throws: StoreError.storeInUse(path: folder.url.path, process: nil)) {
            try Store(at: folder.url, configuration: configuration)
        }
        withExtendedLifetime(open) {}
        #expect(try Store(at: folder.url, configuration: petConfiguration(1)).count(V1.Pet.self) == 10)
    }

    @Test func aStoreAnotherProcessHasOpenIsNeverDeleted() throws {
        try fillVersion1()
        let (helper, input) = try holdingProcess(folder.url)
        defer {
            try? input.fileHandleForWriting.close()
            helper.waitUntilExit()
        }
        let process = helper.processIdentifier

        #expect(throws: StoreError.storeInUse(path: folder.url.path, process: process)) {
            try Store.delete(at: folder.url)
        }
        var configuration = unmigrated()
        configuration.deleteStoreIfMigrationNeeded = true
        #expect(throws: StoreError.storeInUse(path: folder.url.path, process: process)) {
            try Store(at: folder.url, configuration: configuration)
        }
        #expect(try Store(at: folder.url, configuration: petConfiguration(1)).count(V1.Pet.self) == 10)

        // Once the other process has closed the store, the reset goes ahead.
        try input.fileHandleForWriting.close()
        helper.waitUntilExit()
        #expect(try Store(at: folder.url, configuration: configuration).count(V2.Pet.self) == 0)
    }
}
