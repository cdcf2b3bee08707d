import Foundation
import LMDB
import Testing

@testable import Cellar

@Suite("Store: primary-key CRUD, transactions, files")
struct StoreTests {
    @Test func insertFetchUpdateUpsertDelete() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Note.self])
        try store.write { tx in
            try tx.insert(Note(id: "b", text: "second"))
            try tx.insert(Note(id: "a", text: "first"))
        }
        #expect(try store.object(Note.self, id: "a") == Note(id: "a", text: "first"))
        #expect(try store.object(Note.self, id: "zzz") == nil)
        #expect(try store.count(Note.self) == 2)
        // Results come back in primary-key order, not insertion order.
        #expect(try store.objects(Note.self).results().map(\.id) == ["a", "b"])

        try store.write { tx in try tx.update(Note(id: "a", text: "changed")) }
        #expect(try store.object(Note.self, id: "a")?.text == "changed")

        try store.write { tx in
            try tx.upsert(Note(id: "a", text: "upserted"))
            try tx.upsert(Note(id: "c", text: "new"))
        }
        #expect(try store.objects(Note.self).results().map(\.text) == ["upserted", "second", "new"])

        let deleted = try store.write { tx in
            (try tx.delete(Note.self, id: "b"), try tx.delete(Note.self, id: "b"))
        }
        #expect(deleted == (true, false))
        #expect(try store.objects(Note.self).count() == 2)
        #expect(try store.write { tx in try tx.deleteAll(Note.self) } == 2)
        #expect(try store.count(Note.self) == 0)
        #expect(try store.objects(Note.self).first() == nil)
    }

    @Test func typedErrorsForDuplicatesAndMissingRecords() throws {
        let store = try Store.inMemory(.init(models: [Note.self]))
        try store.write { tx in try tx.insert(Note(id: "a", text: "x")) }
        #expect(throws: StoreError.duplicatePrimaryKey(model: "Note", id: "\"a\"")) {
            try store.write { tx in try tx.insert(Note(id: "a", text: "again")) }
        }
        #expect(throws: StoreError.objectNotFound(model: "Note", id: "\"nope\"")) {
            try store.write { tx in try tx.update(Note(id: "nope", text: "x")) }
        }
        #expect(throws: StoreError.modelNotRegistered(model: "Dog")) { try store.count(Dog.self) }
        let long = String(repeating: "k", count: 600)
        #expect(throws: StoreError.keyTooLong(model: "Note", property: "id", length: 602, limit: 511)) {
            try store.write { tx in try tx.insert(Note(id: long, text: "")) }
        }
        let description = StoreError.duplicatePrimaryKey(model: "Note", id: "\"a\"").description
        #expect(description.contains("upsert"))
    }

    @Test func aThrowAbortsTheWholeTransaction() throws {
        struct Abort: Error {}
        let store = try Store.inMemory(.init(models: [Note.self, Dog.self]))
        #expect(throws: Abort.self) {
            try store.write { tx in
                try tx.insert(Note(id: "a", text: "never"))
                try tx.insert(Dog(name: "Ghost", age: 1))
                throw Abort()
            }
        }
        // A failed insert in the middle also rolls back what came before it.
        try store.write { tx in try tx.insert(Note(id: "x", text: "kept")) }
        #expect(throws: StoreError.self) {
            try store.write { tx in
                try tx.insert(Note(id: "y", text: "rolled back"))
                try tx.insert(Note(id: "x", text: "duplicate"))
            }
        }
        #expect(try store.objects(Note.self).results().map(\.id) == ["x"])
        #expect(try store.count(Dog.self) == 0)
        // The aborted auto-increment id was not consumed either.
        #expect(try store.write { tx in try tx.insert(Dog(name: "First", age: 1)).id } == 1)
    }

    @Test func aTransactionKnowsWhatItChanged() throws {
        let store = try Store.inMemory(.init(models: [Note.self]))
        try store.write { tx in try tx.insert(Note(id: "kept", text: "")) }
        let log = try store.write { tx in
            try tx.insert(Note(id: "a", text: "1"))
            try tx.upsert(Note(id: "kept", text: "2"))
            try tx.delete(Note.self, id: "a")
            try tx.delete(Note.self, id: "never there")
            return (tx.changes.byModel["Note"] ?? []) ?? []
        }
        #expect(log.map(\.kind) == [.inserted, .updated, .deleted])
        #expect(log.map { KeyEncoding.describe($0.key) } == ["\"a\"", "\"kept\"", "\"a\""])
    }

    @Test func transactionsSeeTheirOwnWrites() throws {
        let store = try Store.inMemory(.init(models: [Note.self]))
        try store.write { tx in
            try tx.insert(Note(id: "a", text: "1"))
            #expect(try tx.object(Note.self, id: "a")?.text == "1")
            #expect(try tx.count(Note.self) == 1)
            #expect(try tx.objects(Note.self).results().count == 1)
            // Other readers still see the last committed version.
            #expect(try store.count(Note.self) == 0)
        }
        #expect(try store.count(Note.self) == 1)
    }

    @Test func aTransactionQueryCannotEscapeItsClosure() throws {
        let store = try Store.inMemory(.init(models: [Note.self]))
        let escaped = try store.write { tx in tx.objects(Note.self) }
        #expect(throws: StoreError.transactionEnded) { try escaped.results() }
        let fromSnapshot = try store.read { snapshot in snapshot.objects(Note.self) }
        #expect(throws: StoreError.transactionEnded) { try fromSnapshot.count() }
    }

    @Test func nestedWriteIsAnErrorNotADeadlock() throws {
        let store = try Store.inMemory(.init(models: [Note.self]))
        #expect(throws: StoreError.nestedWrite) {
            try store.write { _ in try store.write { tx in try tx.insert(Note(id: "n", text: "")) } }
        }
    }

    @Test func snapshotsAgreeAcrossReads() throws {
        let store = try Store.inMemory(.init(models: [Note.self]))
        try store.write { tx in try tx.insert(Note(id: "a", text: "1")) }
        try store.read { snapshot in
            let before = try snapshot.count(Note.self)
            // A write committed meanwhile (from another thread) is not visible inside this snapshot.
            let writer = Thread { _ = try? store.write { tx in try tx.insert(Note(id: "b", text: "2")) } }
            writer.start()
            while !writer.isFinished { usleep(1_000) }
            #expect(try snapshot.count(Note.self) == before)
            #expect(try snapshot.objects(Note.self).results().count == before)
        }
        #expect(try store.count(Note.self) == 2)
    }

    @Test func reopenAfterReleaseFindsEverything() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Dog.self, Note.self])
            try store.write { tx in
                for i in 0..<100 { try tx.insert(Dog(name: "Dog \(i)", age: i % 15, owner: i % 3 == 0 ? nil : 7)) }
                try tx.insert(Note(id: "n", text: "note"))
            }
        }
        #expect(!StoreCore.isOpen(folder.url))
        let reopened = try folder.store([Dog.self, Note.self])
        let dogs = try reopened.objects(Dog.self).results()
        #expect(dogs.count == 100)
        #expect(dogs[43] == Dog(id: 44, name: "Dog 43", age: 43 % 15, owner: 7))
        #expect(dogs[42].owner == nil)
        #expect(try reopened.object(Note.self, id: "n")?.text == "note")
    }

    @Test func openingOneFolderTwiceSharesTheEnvironment() throws {
        let folder = TemporaryFolder()
        let first = try folder.store([Note.self])
        let second = try folder.store([Note.self, Dog.self])
        #expect(first.core === second.core)
        try first.write { tx in try tx.insert(Note(id: "a", text: "from first")) }
        #expect(try second.object(Note.self, id: "a")?.text == "from first")
        #expect(throws: StoreError.storeInUse(path: folder.url.path, process: nil)) { try Store.delete(at: folder.url) }
    }

    @Test func aFolderReachedThroughALinkOrDotsSharesTheEnvironment() throws {
        let folder = TemporaryFolder()
        let links = TemporaryFolder()
        let store = folder.url.appendingPathComponent("store", isDirectory: true)
        let link = links.url.appendingPathComponent("link")
        // The store's folder does not exist yet: the first opening creates it, and the key it is known by is the
        // resolved path of what it created.
        let first = try Store(at: store, configuration: .init(models: [Note.self]))
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: store)
        let throughLink = try Store(at: link, configuration: .init(models: [Note.self]))
        let throughDots = try Store(
            at: URL(fileURLWithPath: store.path + "/../store/."), configuration: .init(models: [Note.self]))
        #expect(first.core === throughLink.core)
        #expect(first.core === throughDots.core)
        try throughLink.write { tx in try tx.insert(Note(id: "a", text: "through the link")) }
        #expect(try first.object(Note.self, id: "a")?.text == "through the link")
        #expect(StoreCore.isOpen(link))
        // A folder created through a linked parent, then opened by its real path.
        let linkedParent = links.url.appendingPathComponent("parent")
        try FileManager.default.createSymbolicLink(at: linkedParent, withDestinationURL: folder.url)
        let created = try Store(
            at: linkedParent.appendingPathComponent("second", isDirectory: true),
            configuration: .init(models: [Note.self]))
        let real = try Store(
            at: folder.url.appendingPathComponent("second", isDirectory: true),
            configuration: .init(models: [Note.self]))
        #expect(created.core === real.core)
    }

    @Test func aStoreWhoseFolderWasMovedWhileOpenIsNotDeletedUnderIt() throws {
        let folder = TemporaryFolder()
        let before = folder.url.appendingPathComponent("before", isDirectory: true)
        let after = folder.url.appendingPathComponent("after", isDirectory: true)
        let store = try Store(at: before, configuration: .init(models: [Note.self]))
        try store.write { tx in try tx.insert(Note(id: "a", text: "kept")) }
        try FileManager.default.moveItem(at: before, to: after)
        #expect(throws: StoreError.storeInUse(path: after.path, process: nil)) { try Store.delete(at: after) }
        #expect(FileManager.default.fileExists(atPath: after.appendingPathComponent("data.mdb").path))
        #expect(try store.object(Note.self, id: "a")?.text == "kept")
    }

    @Test func schemaVersionIsNeverDowngraded() throws {
        let folder = TemporaryFolder()
        do { _ = try folder.store([Note.self], schemaVersion: 3) }
        #expect(throws: StoreError.schemaVersionTooLow(stored: 3, requested: 2)) {
            try folder.store([Note.self], schemaVersion: 2)
        }
        _ = try folder.store([Note.self], schemaVersion: 3)
    }

    @Test func deleteAndCompactFiles() throws {
        let folder = TemporaryFolder()
        let copy = TemporaryFolder()
        do {
            let store = try folder.store([Note.self])
            try store.write { tx in
                for i in 0..<2_000 { try tx.insert(Note(id: "n\(i)", text: String(repeating: "x", count: 200))) }
            }
            try store.write { tx in for i in 0..<1_900 { try tx.delete(Note.self, id: "n\(i)") } }
            try store.compact(to: copy.url)
            #expect(throws: StoreError.self) { try store.compact(to: copy.url) }
        }
        let size = { (url: URL) in
            (try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent("data.mdb").path)[.size]
                as? Int)
                ?? 0
        }
        #expect(size(copy.url) < size(folder.url))
        let compacted = try Store(at: copy.url, configuration: .init(models: [Note.self]))
        #expect(try compacted.count(Note.self) == 100)

        try Store.delete(at: folder.url)
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("data.mdb").path))
        try Store.delete(at: folder.url)  // deleting what is not there does nothing
    }

    @Test func inMemoryStoreRemovesItsFolder() throws {
        var store: Store? = try Store.inMemory(.init(models: [Note.self]))
        let directory = try #require(store?.directory)
        try store?.write { tx in try tx.insert(Note(id: "a", text: "")) }
        #expect(FileManager.default.fileExists(atPath: directory.path))
        store = nil
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    @Test(arguments: [Configuration.Durability.full, .relaxed, .none])
    func everyDurabilityWritesAndReopens(durability: Configuration.Durability) throws {
        let folder = TemporaryFolder()
        do {
            let store = try Store(at: folder.url, configuration: .init(models: [Note.self], durability: durability))
            try store.write { tx in try tx.insert(Note(id: "a", text: "\(durability)")) }
        }
        let store = try folder.store([Note.self])
        #expect(try store.object(Note.self, id: "a")?.text == "\(durability)")
    }

    @Test func asyncWriteRunsOnTheWriterQueue() async throws {
        let store = try await Store.inMemory(.init(models: [Dog.self]))
        let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
            for i in 0..<50 {
                group.addTask { try await store.write { tx in try tx.insert(Dog(name: "d\(i)", age: i)).id } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(ids) == Set(1...50))
        #expect(DispatchQueue.getSpecific(key: StoreCore.writerQueueKey) == nil)
        let onWriterQueue = try await store.write { _ in DispatchQueue.getSpecific(key: StoreCore.writerQueueKey) != nil
        }
        #expect(onWriterQueue)
    }

    @Test func damagedRecordsAreErrorsNotCrashes() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in
            try tx.insert(Dog(name: "Good", age: 1))
            try tx.insert(Dog(name: "Bad", age: 2))
        }
        // Damage the second record's bytes behind Cellar's back.
        let info = try store.info(for: Dog.self)
        let key = try KeyEncoding.key(Int64(2))
        try store.core.environment.write { txn in
            try txn.put(info.records, key: key, value: [RecordFormat.version, 0x13, 0xFF, 0xFF, 0, 0, 9, 0, 0, 0])
        }
        #expect(try store.object(Dog.self, id: 1)?.name == "Good")
        do {
            _ = try store.object(Dog.self, id: 2)
            Issue.record("a damaged record must not decode")
        } catch {
            guard case .decodingFailed(let model, let id, _, _) = error else {
                Issue.record("expected decodingFailed, got \(error)")
                return
            }
            #expect(model == "Dog")
            #expect(id == "2")
        }
        #expect(throws: StoreError.self) { try store.objects(Dog.self).results() }
    }

    @Test func thousandsOfMutatedStoredRecordsAreDecodingErrors() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in try tx.insert(Dog(name: "Original", age: 7, owner: 3)) }
        let info = try store.info(for: Dog.self)
        let original = try store.core.environment.read { txn in
            Array(try #require(try txn.get(info.records, key: KeyEncoding.key(Int64(1)))))
        }
        let seed = UInt64.random(in: 0...UInt64(UInt32.max))
        print("mutated stored records: seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        var mutated: [[UInt8]] = []
        for round in 0..<2_000 {
            var bytes = original
            if round % 2 == 0 {
                bytes = Array(bytes.prefix(Int.random(in: 1..<bytes.count, using: &generator)))
            } else {
                bytes[Int.random(in: 1..<bytes.count, using: &generator)] = .random(in: 0...255, using: &generator)
            }
            mutated.append(bytes)
        }
        try store.core.environment.write { txn in
            for (index, bytes) in mutated.enumerated() {
                try txn.put(info.records, key: KeyEncoding.key(Int64(index + 2)), value: bytes)
            }
        }
        var failures = 0
        for index in mutated.indices {
            let id = Int64(index + 2)
            do {
                _ = try store.object(Dog.self, id: id)
            } catch {
                guard case .decodingFailed(let model, let reportedID, _, _) = error else {
                    Issue.record("expected decodingFailed, got \(error)")
                    continue
                }
                #expect(model == "Dog" && reportedID == "\(id)")
                if index % 2 == 0 { failures += 1 }
            }
        }
        // Every truncation (the even rounds) fails; a changed byte inside a string or number can still decode.
        #expect(failures == 1_000)
    }

    @Test func aRequiredFieldTheRecordsLackIsAMigrationNotADecodingErrorLater() throws {
        struct Before: Model {
            var id: Int
            var name: String
            static var schema: Schema<Before> { Schema(name: "Pet") }
        }
        struct After: Model {
            var id: Int
            var name: String
            var age: Int
            static var schema: Schema<After> { Schema(name: "Pet") }
        }
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Before.self])
            try store.write { tx in try tx.insert(Before(id: 7, name: "Rex")) }
        }
        #expect(
            throws: StoreError.migrationRequired(changes: [
                .propertyAdded(model: "Pet", property: "age", kind: "int", isOptional: false, hasDefault: false)
            ])
        ) {
            try folder.store([After.self])
        }
    }
}
