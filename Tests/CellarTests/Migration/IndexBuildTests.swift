import Foundation
import LMDB
import PropertyBased
import Testing

@testable import Cellar

/// An index declared over records already stored is built at the opening, its entries sorted and appended
/// (`IndexLoad`): what it holds is what the writes would have made, and a unique index over repeated values is
/// refused, the store left as it was.
@Suite("Migrations: indexes built over stored records")
struct IndexBuildTests {
    enum Before {
        struct Member: Model, Equatable {
            var id: Int64
            var email: String?
            var team: Int
            static let schema = Schema<Member>(name: "Member")
        }
    }

    enum After {
        struct Member: Model, Equatable {
            var id: Int64
            var email: String?
            var team: Int
            static let schema = Schema<Member>(name: "Member", indexes: [.unique(\.email), .index(\.team)])
        }
    }

    /// The same index declared twice: one database, `i/Member.team`.
    enum Twice {
        struct Member: Model, Equatable {
            var id: Int64
            var email: String?
            var team: Int
            static let schema = Schema<Member>(name: "Member", indexes: [.index(\.team), .index(\.team)])
        }
    }

    @Test func anIndexDeclaredTwiceIsBuiltOnce() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Before.Member.self])
            try store.write { tx in
                for id in 1...20 { try tx.insert(Before.Member(id: Int64(id), email: nil, team: id % 3)) }
            }
        }
        let store = try folder.store([Twice.Member.self])
        #expect(try store.objects(Twice.Member.self).where(\.team == 1).count() == 7)
        try store.write { tx in
            try tx.delete(Twice.Member.self, id: 1)
            try tx.insert(Twice.Member(id: 21, email: nil, team: 1))
        }
        #expect(
            try store.objects(Twice.Member.self).where(\.team == 1).results().map(\.id) == [4, 7, 10, 13, 16, 19, 21])
        #expect(try store.verifyIntegrity().problems == [])
    }

    @Test func aUniqueIndexOverRepeatedValuesIsRefusedAndTheStoreLeftAsItWas() throws {
        let folder = TemporaryFolder()
        let members = [
            Before.Member(id: 1, email: "ann@example.com", team: 1), Before.Member(id: 2, email: nil, team: 2),
            Before.Member(id: 3, email: nil, team: 2), Before.Member(id: 4, email: "ann@example.com", team: 3),
        ]
        do {
            let store = try folder.store([Before.Member.self])
            try store.write { tx in for member in members { try tx.insert(member) } }
        }
        #expect {
            _ = try folder.store([After.Member.self])
        } throws: { error in
            guard case StoreError.uniqueConstraintViolated(let model, let index, let value) = error else {
                return false
            }
            return model == "Member" && index == "email" && value.contains("ann@example.com")
        }
        let store = try folder.store([Before.Member.self])
        #expect(try store.objects(Before.Member.self).results().map { $0 } == members)
        #expect(try store.verifyIntegrity().problems == [])
        // Two records without an email are no conflict: with the repeat gone, the index is built.
        try store.write { tx in try tx.delete(Before.Member.self, id: 4) }
    }

    @Test func aBuiltIndexHoldsWhatWritesWouldHaveMade() async {
        let members = zip(Gen.int(in: 0...40), Gen.int(in: 0...5)).array(of: 0...300)
        await checkProperty(count: 30, input: members) { drawn in
            let folder = TemporaryFolder()
            let values = drawn.enumerated().map { position, draw in
                // Emails unique but for nil, which repeats; teams repeat.
                Before.Member(
                    id: Int64(position * 7 % 307 + 1), email: draw.0 % 3 == 0 ? nil : "m\(position)@example.com",
                    team: draw.1)
            }
            do {
                let store = try folder.store([Before.Member.self])
                try store.write { tx in for member in values { try tx.insert(member) } }
            }
            let store = try folder.store([After.Member.self])
            #expect(try store.verifyIntegrity().problems == [])
            for team in 0...5 {
                let found = try store.objects(After.Member.self).where(\.team == team).results().map(\.id)
                #expect(found == values.filter { $0.team == team }.map(\.id).sorted())
            }
            #expect(
                try store.objects(After.Member.self).where(\.email == nil).count() == values.count { $0.email == nil })
        }
    }

    /// Entries gathered past the budget are written in parts: the first appended into the empty database, the next
    /// searched for, repeats of a pair written once and a repeated unique key refused in either part.
    @Test func entriesWrittenInPartsEndInKeyOrderEachPairOnce() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Before.Member.self])
        let writer = IndexWriter(model: "Member", core: store.core)
        var pairs: [([UInt8], [UInt8])] = []
        for number in 0..<400 {
            let key = try KeyEncoding.key("k\((number * 37) % 97)")
            let primaryKey = try KeyEncoding.key(Int64(number % 150))
            pairs.append((key, primaryKey))
        }
        pairs += pairs.prefix(20)
        let stored = try Self.loaded(pairs, budget: 256, into: store, writer: writer)
        let expected = Self.inLMDBOrder(pairs)
        #expect(stored.map(\.0) == expected.map(\.0))
        #expect(stored.map(\.1) == expected.map(\.1))

        for budget in [0, 1 << 20] {
            #expect(throws: StoreError.self, "budget \(budget)") {
                try store.core.environment.write { txn in
                    let database = try txn.createDatabase(named: "u/Test.load\(budget)", flags: .duplicateSort)
                    var load = IndexLoad(unique: "load", budget: budget)
                    // Records 1 and 4 share the key 1.
                    for (record, number) in [3, 1, 2, 1].enumerated() {
                        load.add(
                            try KeyEncoding.key(Int64(number)), primaryKey: try KeyEncoding.key(Int64(record + 1)),
                            mustBeUnique: true)
                        if load.isFull { try load.write(to: database, writer: writer, in: txn) }
                    }
                    try load.write(to: database, writer: writer, in: txn)
                }
            }
        }
    }
    /// Keys and values of any length, of bytes that make shared starts, zero padding and lengths decide the order:
    /// the sort compares their first bytes as integers, and LMDB's order must come out, each pair once, whether the
    /// entries are appended into an empty database or written in parts; a unique load refuses exactly the keys two
    /// values share.
    @Test func anyBytesAreWrittenInLMDBsOrder() async throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Before.Member.self])
        let writer = IndexWriter(model: "Member", core: store.core)
        // A shared start of a length about the compared words' edges, then a few bytes of a small alphabet.
        let alphabet: [UInt8] = [0, 1, 2, 0x7F, 0xFF]
        let keyStarts = [0, 6, 7, 8, 9, 14, 15, 16, 17, 24]
        let valueStarts = [0, 6, 7, 8, 9]
        let keys = zip(Gen.int(in: 0..<keyStarts.count), Gen.int(in: 0..<alphabet.count).array(of: 1...3)).map {
            Array(repeating: UInt8(0x41), count: keyStarts[$0]) + $1.map { alphabet[$0] }
        }
        let values = zip(Gen.int(in: 0..<valueStarts.count), Gen.int(in: 0..<alphabet.count).array(of: 1...3)).map {
            Array(repeating: UInt8(0x41), count: valueStarts[$0]) + $1.map { alphabet[$0] }
        }
        let pairs = zip(keys, values).array(of: 1...120)
        await checkProperty(count: 200, input: pairs, Gen.int(in: 0...3)) { pairs, budgetChoice in
            // Repeats of whole pairs and of keys, as a multi-entry index and a shared value make them, and keys and
            // values that differ only by a trailing zero, which pads the compared words too.
            let drawn =
                pairs + pairs.prefix(5) + pairs.prefix(5).map { ($0.0, $0.1 + [9]) }
                + pairs.prefix(3).map { ($0.0 + [0], $0.1) } + pairs.prefix(3).map { ($0.0, $0.1 + [0]) }
            let budget = [0, 64, 512, 1 << 20][budgetChoice]
            let expected = Self.inLMDBOrder(drawn)
            let stored = try Self.loaded(drawn, budget: budget, into: store, writer: writer)
            #expect(stored.map(\.0) == expected.map(\.0))
            #expect(stored.map(\.1) == expected.map(\.1))
            // Unique: refused exactly when a key has two values, found in one part (the other parts search).
            let keysWithTwoValues = Dictionary(grouping: expected, by: \.0).values.contains { $0.count > 1 }
            var refused = false
            do {
                try store.core.environment.write { txn in
                    let database = try txn.createDatabase(named: "u/Test.bytes", flags: .duplicateSort)
                    defer { try? txn.drop(database) }
                    var load = IndexLoad(unique: "bytes", budget: 1 << 20)
                    for (key, value) in drawn { load.add(key, primaryKey: value, mustBeUnique: true) }
                    try load.write(to: database, writer: writer, in: txn)
                }
            } catch StoreError.uniqueConstraintViolated {
                refused = true
            }
            #expect(refused == keysWithTwoValues)
        }
    }
    /// Key/value pairs as a DUPSORT database holds them: by key, then by value, each pair once.
    static func inLMDBOrder(_ pairs: [([UInt8], [UInt8])]) -> [([UInt8], [UInt8])] {
        var ordered: [([UInt8], [UInt8])] = []
        for pair in pairs.sorted(by: {
            $0.0 == $1.0 ? SortedKeys.precedes($0.1, $1.1) : SortedKeys.precedes($0.0, $1.0)
        })
        where ordered.last.map({ $0 != pair }) ?? true {
            ordered.append(pair)
        }
        return ordered
    }
    /// `pairs` loaded into an empty DUPSORT database through `IndexLoad`, written in parts when they pass `budget`,
    /// and read back; the database is dropped, so that every load starts from an empty one.
    static func loaded(
        _ pairs: [([UInt8], [UInt8])], budget: Int, into store: Store, writer: IndexWriter
    ) throws -> [([UInt8], [UInt8])] {
        try store.core.environment.write { txn in
            let database = try txn.createDatabase(named: "i/Test.load", flags: .duplicateSort)
            defer { try? txn.drop(database) }
            var load = IndexLoad(unique: nil, budget: budget)
            for (key, value) in pairs {
                load.add(key, primaryKey: value)
                if load.isFull { try load.write(to: database, writer: writer, in: txn) }
            }
            try load.write(to: database, writer: writer, in: txn)
            var found: [([UInt8], [UInt8])] = []
            try txn.walk(database) { entry in
                found.append((Array(entry.key), Array(entry.value)))
                return true
            }
            return found
        }
    }
}
