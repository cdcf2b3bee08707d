import CLMDB
import Foundation
import Testing

@testable import LMDB

private final class Folder {
    let path: String
    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("lmdb-tests-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
private func text(_ buffer: UnsafeRawBufferPointer?) -> String? { buffer.map { String(decoding: $0, as: UTF8.self) } }

@Suite("LMDB layer")
struct LMDBTests {
    @Test func putGetDeleteAndReopen() throws {
        let folder = Folder()
        do {
            let env = try Environment(path: folder.path)
            try env.write { txn in
                let db = try txn.createDatabase(named: "plain")
                try txn.put(db, key: bytes("a"), value: bytes("1"))
                try txn.put(db, key: bytes("b"), value: bytes("2"))
                #expect(text(try txn.get(db, key: bytes("a"))) == "1")
                #expect(try txn.delete(db, key: bytes("b")))
                #expect(try !txn.delete(db, key: bytes("b")))
            }
            try env.read { txn in
                let db = try #require(try txn.openDatabase(named: "plain"))
                #expect(try txn.openDatabase(named: "missing") == nil)
                #expect(try txn.statistics(db).entries == 1)
            }
        }
        let env = try Environment(path: folder.path)
        try env.read { txn in
            let db = try #require(try txn.openDatabase(named: "plain"))
            #expect(text(try txn.get(db, key: bytes("a"))) == "1")
            #expect(try txn.get(db, key: bytes("b")) == nil)
        }
    }

    @Test func aThrowAbortsTheWrite() throws {
        struct Stop: Error {}
        let folder = Folder()
        let env = try Environment(path: folder.path)
        let db = try env.write { try $0.createDatabase(named: "d") }
        #expect(throws: Stop.self) {
            try env.write { txn in
                try txn.put(db, key: bytes("k"), value: bytes("v"))
                throw Stop()
            }
        }
        try env.read { (txn) throws in #expect(try txn.get(db, key: bytes("k")) == nil) }
    }

    @Test func noOverwriteReportsKeyExists() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        #expect(throws: LMDBError.keyExists) {
            try env.write { txn in
                let db = try txn.createDatabase(named: "d")
                try txn.put(db, key: bytes("k"), value: bytes("1"), flags: .noOverwrite)
                try txn.put(db, key: bytes("k"), value: bytes("2"), flags: .noOverwrite)
            }
        }
    }

    @Test func cursorRangesAndDuplicates() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        try env.write { txn in
            let db = try txn.createDatabase(named: "index", flags: .duplicateSort)
            for (key, value) in [("age3", "rex"), ("age3", "alf"), ("age5", "bo"), ("age7", "cy"), ("age7", "al")] {
                try txn.put(db, key: bytes(key), value: bytes(value))
            }
            try txn.withCursor(db) { cursor in
                // Duplicates come back sorted by value.
                let age3 = bytes("age3")
                var entry = try age3.withUnsafeBytes { try cursor.seek(to: $0) }
                #expect(try cursor.duplicateCount() == 2)
                var values: [String] = []
                while let (_, value) = entry {
                    values.append(text(value)!)
                    entry = try cursor.nextDuplicate()
                }
                #expect(values == ["alf", "rex"])
                // A range from age4: the next key at or after it.
                let ranged = try bytes("age4").withUnsafeBytes { try cursor.seek(atLeast: $0) }
                #expect(text(ranged?.key) == "age5")
                #expect(text(try cursor.nextKey()?.key) == "age7")
                #expect(text(try cursor.last()?.value) == "cy")
                #expect(text(try cursor.previous()?.value) == "al")
                #expect(text(try cursor.first()?.value) == "alf")
            }
            let (age7, al) = (bytes("age7"), bytes("al"))
            let removed = try age7.withUnsafeBytes { key in
                try al.withUnsafeBytes { try txn.delete(db, key: key, value: $0) }
            }
            #expect(removed)
            #expect(try txn.statistics(db).entries == 4)
        }
    }

    @Test func duplicateCountIsOneOutsideDuplicateSortedDatabases() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        try env.write { txn in
            let db = try txn.createDatabase(named: "plain")
            try txn.put(db, key: bytes("k"), value: bytes("v"))
            try txn.withCursor(db) { cursor in
                _ = try cursor.first()
                #expect(try cursor.duplicateCount() == 1)
            }
        }
    }

    @Test func createDatabaseRefusesOtherFlags() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        _ = try env.write { try $0.createDatabase(named: "d", flags: .duplicateSort) }
        #expect(throws: LMDBError.incompatible) { try env.write { try $0.createDatabase(named: "d") } }
    }

    @Test func everyReturnCodeMapsToItsCase() {
        for code in MDB_KEYEXIST...MDB_LAST_ERRCODE {
            let error = LMDBError(code: code)
            #expect(error.code == code)
            if case .system = error { Issue.record("code \(code) has no case of its own") }
            #expect(!error.description.isEmpty)
        }
        #expect(LMDBError(code: ENOENT) == .system(errno: ENOENT))
    }

    @Test func readTransactionsAreReused() throws {
        let folder = Folder()
        var options = EnvironmentOptions()
        options.maxReaders = 4
        let env = try Environment(path: folder.path, options: options)
        let db = try env.write { txn in
            let db = try txn.createDatabase(named: "d")
            try txn.put(db, key: bytes("k"), value: bytes("v"))
            return db
        }
        for _ in 0..<10_000 {
            try env.read { (txn) throws in #expect(try txn.get(db, key: bytes("k")) != nil) }
        }
        // One reset transaction is renewed for every read: one slot in all.
        #expect(env.info.readersInUse == 1)
    }

    @Test func theMapGrowsWhenAWriteNeedsRoom() throws {
        let folder = Folder()
        var options = EnvironmentOptions()
        options.mapSize = 256 << 10
        let env = try Environment(path: folder.path, options: options)
        let value = [UInt8](repeating: 7, count: 4_096)
        var runs = 0
        try env.write { txn in
            runs += 1
            let db = try txn.createDatabase(named: "d")
            for i in 0..<2_000 { try txn.put(db, key: bytes("key\(i)"), value: value) }
        }
        #expect(runs > 1)  // the first run hit the full map and was run again
        #expect(env.info.mapSize > 8 << 20)
        try env.read { txn in
            let db = try #require(try txn.openDatabase(named: "d"))
            #expect(try txn.statistics(db).entries == 2_000)
        }
    }

    @Test func aNestedWriteFailsInsteadOfHanging() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        #expect(throws: LMDBError.system(errno: EDEADLK)) {
            try env.write { _ in try env.write { _ in } }
        }
    }

    @Test func readersSeeOneVersion() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        let db = try env.write { try $0.createDatabase(named: "d") }
        try env.read { (reader) throws in
            let before = reader.id
            let writer = Thread {
                _ = try? env.write { (txn) throws in try txn.put(db, key: bytes("k"), value: bytes("v")) }
            }
            writer.start()
            while !writer.isFinished { usleep(1_000) }
            #expect(try reader.get(db, key: bytes("k")) == nil)
            #expect(reader.id == before)
        }
        try env.read { (txn) throws in #expect(try txn.get(db, key: bytes("k")) != nil) }
    }

    @Test func copyCompacts() throws {
        let folder = Folder()
        let copy = Folder()
        let env = try Environment(path: folder.path)
        try env.write { txn in
            let db = try txn.createDatabase(named: "d")
            for i in 0..<5_000 { try txn.put(db, key: bytes("k\(i)"), value: [UInt8](repeating: 1, count: 100)) }
        }
        try env.write { txn in try txn.empty(try txn.createDatabase(named: "d")) }
        try env.copy(to: copy.path, compacting: true)
        let copied = try Environment(path: copy.path)
        try copied.read { txn in
            let db = try #require(try txn.openDatabase(named: "d"))
            #expect(try txn.statistics(db).entries == 0)
        }
        #expect(copied.info.lastPage < env.info.lastPage)
    }

    /// A write that allocates pages and frees them again before it commits leaves them "loose": LMDB lists them as
    /// free without ever writing them, so the data file ends before the last page the meta page counts.
    @Test func pagesFreedInTheirOwnWriteAreNotTruncation() throws {
        let folder = Folder()
        do {
            let env = try Environment(path: folder.path)
            let db = try env.write { txn in
                let db = try txn.createDatabase(named: "d")
                try txn.put(db, key: bytes("kept"), value: bytes("1"))
                return db
            }
            // Pages freed by earlier writes, so that the last write's free list is kept in reused pages.
            try env.write { txn in
                for i in 0..<2_000 { try txn.put(db, key: bytes("k\(i)"), value: [UInt8](repeating: 7, count: 200)) }
            }
            try env.write { txn in
                for i in 0..<2_000 { _ = try txn.delete(db, key: bytes("k\(i)")) }
            }
            try env.write { txn in
                for i in 0..<4_000 { try txn.put(db, key: bytes("k\(i)"), value: [UInt8](repeating: 7, count: 200)) }
                for i in (0..<4_000).reversed() { _ = try txn.delete(db, key: bytes("k\(i)")) }
            }
            let needed = (env.info.lastPage + 1) * env.pageSize
            #expect(try env.dataFileLength < needed, "the write left no loose pages past the end of the file")
            try env.read { (txn) throws in #expect(text(try txn.get(db, key: bytes("kept"))) == "1") }
            let report = try env.checkPages()
            #expect(report.isSound, "\(report.problems)")
            #expect(report.unwrittenFreePages == report.lastPage + 1 - (try env.dataFileLength) / env.pageSize)
        }
        let env = try Environment(path: folder.path)
        #expect(try env.checkPages(databases: []).isSound)
        try env.write { txn in try txn.put(try txn.createDatabase(named: "d"), key: bytes("more"), value: bytes("2")) }
        let copy = Folder()
        try env.copy(to: copy.path, compacting: false)
        let copied = try Environment(path: copy.path)
        #expect(try copied.checkPages().isSound)

        // Cut past the free pages, the file is damaged.
        copied.close()
        #expect(truncate(copy.path + "/data.mdb", off_t(3 * env.pageSize)) == 0)
        #expect {
            _ = try Environment(path: copy.path)
        } throws: { error in
            guard case LMDBError.truncated = error else { return false }
            return true
        }
    }
    /// A walk rewrites each value where its cursor stands, smaller, equal, larger and past a page (an overflow
    /// page); the cursor goes on to the next key, and every key holds what was written.
    @Test func replaceCurrentRewritesTheEntryTheCursorStandsOn() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        let keys = (0..<300).map { String(format: "k%03d", $0) }
        func value(_ number: Int, _ round: Int) -> [UInt8] {
            [UInt8](repeating: UInt8(truncatingIfNeeded: number &+ round), count: [1, 16, 16, 300, 5_000][number % 5])
        }
        try env.write { txn in
            let db = try txn.createDatabase(named: "plain")
            for (number, key) in keys.enumerated() { try txn.put(db, key: bytes(key), value: bytes("v\(number)")) }
            var visited: [String] = []
            try txn.withCursor(db) { cursor in
                var entry = try cursor.first()
                while let found = entry {
                    let key = Array(found.key)
                    visited.append(String(decoding: key, as: UTF8.self))
                    let replaced = try key.withUnsafeBytes { key in
                        try value(visited.count - 1, 1).withUnsafeBytes {
                            try txn.replaceCurrent(of: cursor, key: key, value: $0)
                        }
                    }
                    #expect(replaced)
                    entry = try cursor.next()
                }
            }
            #expect(visited == keys)
            for (number, key) in keys.enumerated() {
                #expect(try txn.get(db, key: bytes(key)).map(Array.init) == value(number, 1))
            }
        }
    }

    /// When another write deleted the cursor's entry, or emptied its database, `replaceCurrent` writes nothing and
    /// says so: LMDB's `MDB_CURRENT` would rewrite the next entry, or a slot past the page's last one.
    @Test func replaceCurrentRefusesAnEntryDeletedUnderTheCursor() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        try env.write { txn in
            let db = try txn.createDatabase(named: "plain")
            for key in ["a", "b", "c"] { try txn.put(db, key: bytes(key), value: bytes("value of \(key)")) }
            func replace(_ key: String, after change: () throws -> Void) throws -> Bool {
                try txn.withCursor(db) { cursor in
                    _ = try bytes(key).withUnsafeBytes { try cursor.seek(to: $0) }
                    try change()
                    return try bytes(key).withUnsafeBytes { key in
                        try bytes("new").withUnsafeBytes { try txn.replaceCurrent(of: cursor, key: key, value: $0) }
                    }
                }
            }
            // The middle entry, then the last (the cursor past the page's last node), then a key not the cursor's.
            #expect(try !replace("b") { try txn.delete(db, key: bytes("b")) })
            #expect(try !replace("c") { try txn.delete(db, key: bytes("c")) })
            #expect(try !replace("zz") {})
            var entries: [String] = []
            try txn.walk(db) { entry in
                entries.append("\(text(entry.key) ?? "")=\(text(entry.value) ?? "")")
                return true
            }
            #expect(entries == ["a=value of a"])
            #expect(try !replace("a") { try txn.empty(db) })
            #expect(try txn.statistics(db).entries == 0)
            let duplicates = try txn.createDatabase(named: "dups", flags: .duplicateSort)
            try txn.put(duplicates, key: bytes("a"), value: bytes("1"))
            #expect(throws: LMDBError.incompatible) {
                try txn.withCursor(duplicates) { cursor in
                    _ = try cursor.first()
                    return try bytes("a").withUnsafeBytes { key in
                        try bytes("2").withUnsafeBytes { try txn.replaceCurrent(of: cursor, key: key, value: $0) }
                    }
                }
            }
        }
    }

    /// A sorted load through one cursor, appending keys and their duplicates, holds what plain puts would.
    @Test func putThroughOneCursorAppendsKeysAndDuplicates() throws {
        let folder = Folder()
        let env = try Environment(path: folder.path)
        try env.write { txn in
            let db = try txn.createDatabase(named: "dups", flags: .duplicateSort)
            let pairs = (0..<2_000).map { (String(format: "key%04d", $0 / 7), String(format: "v%05d", $0)) }
            try txn.withCursor(db) { cursor in
                var previous: String?
                for (key, value) in pairs {
                    let flags: PutFlags = previous == key ? .appendDuplicate : .append
                    try bytes(key).withUnsafeBytes { key in
                        try bytes(value).withUnsafeBytes {
                            try txn.put(through: cursor, key: key, value: $0, flags: flags)
                        }
                    }
                    previous = key
                }
            }
            var stored: [String] = []
            try txn.walk(db) { entry in
                stored.append("\(text(entry.key) ?? "") \(text(entry.value) ?? "")")
                return true
            }
            #expect(stored == pairs.map { "\($0) \($1)" })
            // Out of order, an append is refused, not stored out of place.
            #expect(throws: LMDBError.self) {
                try txn.withCursor(db) { cursor in
                    try bytes("key0000").withUnsafeBytes { key in
                        try bytes("late").withUnsafeBytes {
                            try txn.put(through: cursor, key: key, value: $0, flags: .append)
                        }
                    }
                }
            }
        }
    }
}
