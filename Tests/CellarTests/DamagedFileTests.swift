import Foundation
import LMDB
import Testing

@testable import Cellar

/// A store with `count` dogs in `folder`, closed again.
func makeStore(in folder: TemporaryFolder, dogs count: Int, indexed: Bool = false) throws {
    let store = try folder.store([Dog.self])
    try store.write { tx in
        for number in 0..<count {
            try tx.insert(Dog(name: "dog \(number) " + String(repeating: "x", count: 40), age: number % 20))
        }
    }
}

private func dataFile(_ folder: TemporaryFolder) -> URL { folder.url.appendingPathComponent("data.mdb") }

private func truncate(_ file: URL, to length: Int) throws {
    let handle = try FileHandle(forWritingTo: file)
    try handle.truncate(atOffset: UInt64(length))
    try handle.close()
}

@Suite("Damaged and foreign files")
struct DamagedFileTests {
    // MARK: Truncation

    @Test func aStoreCutToHalfItsSizeIsCorruptedFileBeforeAnythingIsRead() throws {
        let folder = TemporaryFolder()
        try makeStore(in: folder, dogs: 5_000)
        let file = dataFile(folder)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
        try truncate(file, to: size / 2)
        do {
            _ = try folder.store([Dog.self])
            Issue.record("a truncated store opened")
        } catch let error as StoreError {
            guard case .corruptedFile(let path, let reason) = error else {
                Issue.record("expected corruptedFile, got \(error)")
                return
            }
            #expect(path == folder.url.path)
            #expect(reason.contains("is \(size / 2) bytes long"))
            #expect(reason.contains("need \(size) bytes"))
            #expect(error.description.contains("Restore it from a backup or delete it"))
        }
    }

    /// The check runs again when the file grows after the store opened (here by this process's own commits, which
    /// is what another process's commit looks like from here): a read never reaches a page past the end.
    @Test func aFileCutAfterItGrewIsRefusedAtTheNextRead() throws {
        let folder = TemporaryFolder()
        let environment = try Environment(path: folder.url.path)
        defer { environment.close() }
        let database = try environment.write { try $0.createDatabase(named: "d") }
        let checkedLength = try environment.read { _ in
            try FileManager.default.attributesOfItem(atPath: dataFile(folder).path)[.size] as? Int ?? 0
        }
        try environment.write { txn in
            for number in 0..<2_000 {
                try txn.put(database, key: Array("key \(number)".utf8), value: Array(repeating: 7, count: 500))
            }
        }
        let needed = (environment.info.lastPage + 1) * environment.pageSize
        #expect(needed > checkedLength + 8 * environment.pageSize)
        try truncate(dataFile(folder), to: needed - 4 * environment.pageSize)
        #expect(
            throws: LMDBError.truncated(expectedBytes: needed, actualBytes: needed - 4 * environment.pageSize)
        ) {
            try environment.read { txn in try txn.walk(database) { _ in true } }
        }
    }

    // MARK: Foreign files

    /// An LMDB environment of another program, with named databases or only a main database, is refused and left
    /// byte for byte as it was.
    @Test(arguments: [true, false])
    func aForeignLMDBEnvironmentIsRefusedAndLeftUnchanged(named: Bool) throws {
        let folder = TemporaryFolder()
        do {
            let environment = try Environment(path: folder.url.path)
            try environment.write { txn in
                let database =
                    named
                    ? try txn.createDatabase(named: "users") : try #require(try txn.openDatabase(named: nil))
                for number in 0..<100 {
                    try txn.put(database, key: Array("user \(number)".utf8), value: Array("name".utf8))
                }
            }
            environment.close()
        }
        let before = try Data(contentsOf: dataFile(folder))
        do {
            _ = try folder.store([Dog.self])
            Issue.record("a foreign environment opened as a store")
        } catch let error as StoreError {
            guard case .incompatibleFile(_, let reason) = error else {
                Issue.record("expected incompatibleFile, got \(error)")
                return
            }
            #expect(reason.contains("another program"))
        }
        #expect(try Data(contentsOf: dataFile(folder)) == before)
        #expect(!StoreCore.isOpen(folder.url))
    }

    /// Files that are not LMDB at all, or LMDB with a patched magic number or version, keep their typed errors and
    /// their bytes.
    @Test(arguments: ["random", "sqlite", "magic", "version"])
    func filesThatAreNotStoresAreIncompatible(kind: String) throws {
        let folder = TemporaryFolder()
        var bytes: [UInt8]
        switch kind {
        case "random":
            var generator = SeededGenerator(seed: 42)
            bytes = (0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) }
        case "sqlite":
            bytes = Array("SQLite format 3\0".utf8) + [UInt8](repeating: 0, count: 8_192)
        default:
            try makeStore(in: folder, dogs: 10)
            bytes = Array(try Data(contentsOf: dataFile(folder)))
            // Both meta pages start with a 16-byte page header, then the magic (4 bytes) and the version (4 bytes).
            let offset = kind == "magic" ? 16 : 20
            for page in [0, 4_096] { bytes[page + offset] ^= 0x5A }
            try FileManager.default.removeItem(at: folder.url.appendingPathComponent("lock.mdb"))
        }
        try Data(bytes).write(to: dataFile(folder))
        #expect {
            _ = try folder.store([Dog.self])
        } throws: { error in
            guard case .incompatibleFile = error as? StoreError else { return false }
            return true
        }
        #expect(Array(try Data(contentsOf: dataFile(folder))) == bytes)
    }

    /// Meta pages LMDB accepts (flags, magic number and version right) and then could not survive: a page size of 0
    /// (LMDB divides by it: a fuzzing run's finding, SIGFPE inside `mdb_env_open`), also in a file of 152 bytes, all
    /// LMDB reads of a meta page (a reviewer's finding: the check had read 160), one that is not a power of two or past
    /// LMDB's largest, and a last page so large that the bytes in use do not fit in an `Int` (the next finding: an overflow trap in
    /// the check of the file's length). Each is `corruptedFile` before LMDB reads the file, which is left as it was;
    /// `cellar info` says so too.
    @Test(arguments: ["page size 0", "page size 3000", "page size 2^16", "last page 2^62", "152 bytes, page size 0"])
    func metaPagesLMDBWouldTrustAndNotSurviveAreCorruptedFile(damage: String) throws {
        let folder = TemporaryFolder()
        try makeStore(in: folder, dogs: 10)
        var bytes = Array(try Data(contentsOf: dataFile(folder)))
        // After the 16-byte page header: the page size is the first field of the free list's tree record (offset
        // 40), the last page the field at offset 136.
        for page in [0, 4_096] {
            switch damage {
            case "page size 0": bytes.replaceSubrange(page + 40..<page + 44, with: [0, 0, 0, 0])
            case "page size 3000": bytes.replaceSubrange(page + 40..<page + 44, with: [0xB8, 0x0B, 0, 0])
            case "page size 2^16": bytes.replaceSubrange(page + 40..<page + 44, with: [0, 0, 1, 0])
            case "last page 2^62": bytes.replaceSubrange(page + 136..<page + 144, with: [0, 0, 0, 0, 0, 0, 0, 0x40])
            default:
                // All LMDB reads of a meta page: it then reads the same page again as the second (at 0 page sizes).
                bytes.replaceSubrange(page + 40..<page + 44, with: [0, 0, 0, 0])
                bytes = Array(bytes.prefix(152))
            }
            if bytes.count == 152 { break }
        }
        try Data(bytes).write(to: dataFile(folder))
        // In another process first: were the check gone, the crash would end that process, not this one.
        let tool = try CellarToolTests.cellar("info", folder.url.path)
        #expect(tool.status == 1, "\(tool.output) \(tool.errors)")
        #expect(tool.errors.contains("a meta page of the data file is damaged"), "\(tool.errors)")
        guard tool.status == 1 else { return }
        #expect {
            _ = try folder.store([Dog.self])
        } throws: { error in
            guard case .corruptedFile(_, let reason) = error as? StoreError else { return false }
            return reason.hasPrefix("a meta page of the data file is damaged: its ")
        }
        #expect(Array(try Data(contentsOf: dataFile(folder))) == bytes)
    }

    /// A transaction number past `Int64.max` in the meta pages (a fuzzing run's finding: a conversion trapped when
    /// the environment's numbers were read) opens or is refused in words, in `cellar` and in an app.
    @Test func aTransactionNumberPastInt64DoesNotTrap() throws {
        let folder = TemporaryFolder()
        try makeStore(in: folder, dogs: 10)
        var bytes = Array(try Data(contentsOf: dataFile(folder)))
        for page in [0, 4_096] { bytes.replaceSubrange(page + 144..<page + 152, with: [0, 0, 0, 0, 0, 0, 0xFE, 0xFF]) }
        try Data(bytes).write(to: dataFile(folder))
        let tool = try CellarToolTests.cellar("info", folder.url.path)
        #expect(tool.status == 0 || tool.status == 1, "\(tool.output) \(tool.errors)")
        guard tool.status == 0 || tool.status == 1 else { return }
        do {
            let store = try folder.store([Dog.self])
            _ = try store.objects(Dog.self).results()
        } catch {
            #expect(error is StoreError)
        }
    }

    // MARK: Paths and settings

    @Test func aFolderPathThatIsAFileSaysSo() throws {
        let folder = TemporaryFolder()
        let file = folder.url.appendingPathComponent("plain-file")
        try Data("x".utf8).write(to: file)
        #expect {
            try Store(at: file, configuration: .init(models: [Dog.self]))
        } throws: { error in
            guard case .incompatibleFile(let path, _) = error as? StoreError else { return false }
            #expect(
                "\(error)"
                    == "The file at \(file.path) cannot be opened as a Cellar store: it is a file, and a store is a "
                    + "folder: pass the URL of the folder that holds data.mdb and lock.mdb, or of a folder to create. "
                    + "Open the store in another folder; Cellar did not change this one.")
            return path == file.path
        }
        // Asking what opening it would change is told the same, not that every model would be added.
        #expect {
            try Store.pendingChanges(at: file, configuration: .init(models: [Dog.self]))
        } throws: { error in
            guard case .incompatibleFile(let path, _) = error as? StoreError else { return false }
            return path == file.path
        }
        let below = file.appendingPathComponent("store")
        #expect {
            try Store(at: below, configuration: .init(models: [Dog.self]))
        } throws: { error in
            guard case .io(let code, _, let path) = error as? StoreError else { return false }
            return code == ENOTDIR && path == file.path && "\(error)".contains("Not a directory")
        }
    }

    @Test func aSecondOpeningWithOtherSettingsIsAConflictNamingBoth() throws {
        let folder = TemporaryFolder()
        let first = try Store(at: folder.url, configuration: .init(models: [Dog.self], durability: .full))
        #expect {
            try Store(at: folder.url, configuration: .init(models: [Dog.self], durability: .none))
        } throws: { error in
            guard case .configurationConflict(_, let reason) = error as? StoreError else { return false }
            return reason.contains("durability full") && reason.contains("asks for none")
        }
        #expect {
            try Store(at: folder.url, configuration: .init(models: [Dog.self], maxReaders: 9))
        } throws: { error in
            guard case .configurationConflict(_, let reason) = error as? StoreError else { return false }
            return reason.contains("maxReaders 512") && reason.contains("asks for 9")
        }
        // The same settings share the open file; another initial map size is no conflict (the map grows anyway).
        let second = try Store(at: folder.url, configuration: .init(models: [Dog.self], initialMapSize: 1 << 20))
        #expect(second.core === first.core)
    }

    /// Two Swift types stored as one model must agree on its indexes while both are open (before, the second got
    /// the first's model info and crashed with "Index out of range" querying through its extra index).
    @Test func twoOpenConfigurationsThatDisagreeOnAModelsIndexesAreAConflict() throws {
        struct Plain: Model {
            var id: Int
            var name: String
            static var schema: Schema<Plain> { Schema(name: "Pet") }
        }
        struct Indexed: Model {
            var id: Int
            var name: String
            static var schema: Schema<Indexed> { Schema(name: "Pet", indexes: [.index(\.name)]) }
        }
        let folder = TemporaryFolder()
        let first = try folder.store([Plain.self])
        try first.write { tx in try tx.insert(Plain(id: 1, name: "Rex")) }
        #expect {
            try folder.store([Indexed.self])
        } throws: { error in
            guard case .configurationConflict(_, let reason) = error as? StoreError else { return false }
            return reason.contains("Pet is open with indexes and links []") && reason.contains("[i/Pet.name]")
        }
        #expect(try first.objects(Plain.self).results().count == 1)
    }

    @Test func readersFullNamesTheRealLimit() throws {
        let folder = TemporaryFolder()
        let store = try Store(at: folder.url, configuration: .init(models: [Dog.self], maxReaders: 2))
        #expect(throws: StoreError.readersFull(limit: 2)) {
            try store.read { _ in try store.read { _ in try store.read { _ in } } }
        }
        #expect(StoreError.readersFull(limit: 2).description.hasPrefix("All 2 reader slots are in use."))
    }

    /// Messages quote a short, escaped start of a long or damaged value.
    @Test func descriptionsQuoteOnlyAShortPrefixOfLongValues() throws {
        struct Member: Model {
            var id: Int
            var email: String
            static var schema: Schema<Member> { Schema(indexes: [.unique(\.email)]) }
        }
        let store = try Store.inMemory(.init(models: [Member.self]))
        let long = String(repeating: "é\n", count: 100)
        try store.write { tx in try tx.insert(Member(id: 1, email: long)) }
        do {
            try store.write { tx in try tx.insert(Member(id: 2, email: long)) }
            Issue.record("a duplicate unique value was accepted")
        } catch let error as StoreError {
            #expect(error.description.count < 300)
            #expect(error.description.contains("\\n"))
            #expect(error.description.contains("bytes)"))
        }
        #expect(KeyEncoding.describe([UInt8](repeating: 0xEE, count: 65_000)).count < 100)
    }
}

/// A random number generator that gives the same numbers for the same seed (SplitMix64), so a failing damaged
/// file can be made again from the seed its test prints.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

@Suite("Page checks")
struct PageCheckTests {
    struct Pet: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var age: Int
        var photo: Data = Data()
        static let schema = Schema<Pet>(autoIncrement: true, indexes: [.index(\.age), .index(\.name)])
    }

    /// A store with every kind of page: named databases, overflow values, duplicates in sub-pages and in sub-trees,
    /// and a free list after deletes.
    static func varied(in folder: TemporaryFolder) throws -> Store {
        let store = try folder.store([Pet.self])
        try store.write { tx in
            for number in 0..<3_000 {
                let photo = number % 100 == 0 ? Data(repeating: UInt8(number % 251), count: 9_000) : Data()
                try tx.insert(Pet(name: "pet \(number % 700)", age: number % 3 == 0 ? 1 : number % 40, photo: photo))
            }
        }
        try store.write { tx in
            for id in stride(from: Int64(1), through: 3_000, by: 7) { try tx.delete(Pet.self, id: id) }
        }
        return store
    }

    @Test func aSoundStoreOfEveryPageKindIsSound() throws {
        let folder = TemporaryFolder()
        let store = try Self.varied(in: folder)
        let report = try store.verifyIntegrity()
        #expect(report.pagesInUse > 100)
        #expect(report.freePages > 0)
        #expect(report.databases == 5)  // _meta, _changes, r/Pet and its two indexes
        let pages = try store.core.environment.checkPages()
        #expect(pages.problems == [])
        #expect(2 + pages.pagesInUse + pages.freePages == pages.lastPage + 1)
    }

    /// Damage that appears while a store is open (or in a file too large to walk at open) is found by
    /// `verifyIntegrity()`, which reads pages with `pread`, never through LMDB.
    @Test func verifyIntegrityFindsDamageThatAppearsWhileTheStoreIsOpen() throws {
        let folder = TemporaryFolder()
        let store = try Self.varied(in: folder)
        let pages = try store.core.environment.checkPages()
        let handle = try FileHandle(forWritingTo: folder.url.appendingPathComponent("data.mdb"))
        // The entry-count field of every page after the meta pages: page headers no longer add up.
        for page in 2...pages.lastPage {
            try handle.seek(toOffset: UInt64(page * 4_096 + 12))
            try handle.write(contentsOf: [0xFF, 0x7F])
        }
        try handle.close()
        do {
            _ = try store.verifyIntegrity()
            Issue.record("damaged pages were found sound")
        } catch {
            guard case .corruptedFile(let path, let reason) = error else {
                Issue.record("expected corruptedFile, got \(error)")
                return
            }
            #expect(path == folder.url.path)
            #expect(reason.contains("damaged header") || reason.contains("page"))
        }
    }
}
