import CellarMacros
import Foundation
import Testing

@testable import Cellar

/// A SwiftData `#Predicate` where it meets the rest: generated record code, values of enums, dates and UUIDs,
/// a folded index, transactions, read-only stores, and observation.
@Suite("#Predicate across features")
struct PredicateAcrossFeaturesTests {
    enum Kind: String, Codable, Sendable, CaseIterable { case mutt, shiba }

    struct Pup: Model, Equatable {
        var id: Int
        var name: String
        var kind: Kind
        var born: Date
        var chip: UUID
        static let schema = Schema<Pup>(
            indexes: [.index(\.kind), .index(\.born), .index(\.name, options: .caseInsensitive)])
    }

    @Record
    struct FastPup: Model, Equatable {
        var id: Int
        var name: String
        var kind: Kind
        var born: Date
        var chip: UUID
        static let schema = Schema<FastPup>(name: "Pup", indexes: [.index(\.kind), .index(\.born)])
    }

    static let epoch = Date(timeIntervalSince1970: 1_700_000_000)
    static func chip(_ number: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", number)) ?? UUID()
    }
    static let pups = (1...30).map { number in
        Pup(
            id: number, name: ["Taro", "hachi", "Pochi", "Hachi"][number % 4], kind: number % 4 == 0 ? .shiba : .mutt,
            born: epoch.addingTimeInterval(Double(number) * 86_400), chip: chip(number))
    }

    static func filled(_ folder: TemporaryFolder) throws -> Store {
        let store = try folder.store([Pup.self])
        try store.write { tx in for pup in pups { try tx.insert(pup) } }
        return store
    }

    @Test func capturedValuesOfEnumsDatesAndUUIDsAnswerAsTheirConditions() throws {
        let folder = TemporaryFolder()
        let store = try Self.filled(folder)
        let pups = store.objects(Pup.self)
        let shiba = Kind.shiba
        let cutoff = Self.epoch.addingTimeInterval(10 * 86_400)
        let wanted = Self.chip(7)
        let cases: [(String, Predicate<Pup>, Condition<Pup>)] = [
            ("enum", #Predicate { $0.kind == shiba }, \.kind == .shiba),
            ("enum on the left", #Predicate { shiba == $0.kind }, \.kind == .shiba),
            ("date", #Predicate { $0.born < cutoff }, \.born < cutoff),
            ("uuid", #Predicate { $0.chip == wanted }, \.chip == wanted),
            ("and", #Predicate { $0.kind == shiba && $0.born >= cutoff }, \.kind == .shiba && \.born >= cutoff),
        ]
        for (name, predicate, condition) in cases {
            let (got, expected) = (pups.where(predicate), pups.where(condition))
            #expect(try got.results().map(\.id) == expected.results().map(\.id), "\(name)")
            #expect(try got.explain() == expected.explain(), "\(name)")
        }
        let plan = try pups.where(#Predicate { $0.kind == shiba }).explain()
        #expect(plan == "use index i/Pup.kind for kind == .shiba", "\(plan)")
        // A folded index answers the folded condition; a #Predicate's == compares exactly, as Swift does.
        let exact = try pups.where(#Predicate { $0.name == "hachi" }).results().map(\.id)
        #expect(exact == Self.pups.filter { $0.name == "hachi" }.map(\.id))
        let folded = try pups.where(.equals(\.name, "hachi", options: .caseInsensitive)).results().map(\.id)
        #expect(folded.count > exact.count && Set(exact).isSubset(of: Set(folded)))
    }

    @Test func generatedRecordCodeGivesTheSameRecords() throws {
        let folder = TemporaryFolder()
        do { _ = try Self.filled(folder) }
        let store = try folder.store([FastPup.self])
        let shiba = Kind.shiba
        let cutoff = Self.epoch.addingTimeInterval(10 * 86_400)
        let fast = store.objects(FastPup.self).where(#Predicate { $0.kind == shiba && $0.born < cutoff })
        let expected = Self.pups.filter { $0.kind == .shiba && $0.born < cutoff }.map(\.id)
        #expect(try fast.results().map(\.id) == expected)
        let arithmetic = try store.objects(FastPup.self).where(#Predicate { $0.id * 2 > 50 }).results()
        #expect(arithmetic.map(\.id) == Array(26...30))
    }

    @Test func insideATransactionAndInAReadOnlyStore() throws {
        let folder = TemporaryFolder()
        do {
            let store = try Self.filled(folder)
            let shiba = Kind.shiba
            let counted = try store.write { tx in
                try tx.insert(Pup(id: 99, name: "Kuro", kind: .shiba, born: Self.epoch, chip: Self.chip(99)))
                return try tx.objects(Pup.self).where(#Predicate { $0.kind == shiba }).count()
            }
            #expect(counted == Self.pups.filter { $0.kind == .shiba }.count + 1)
        }
        var configuration = Configuration(models: [Pup.self])
        configuration.readOnly = true
        let readOnly = try Store(at: folder.url, configuration: configuration)
        #expect(try readOnly.objects(Pup.self).where(#Predicate { $0.id > 28 }).results().map(\.id) == [29, 30, 99])
    }

    @Test func anObservedQueryWithAPredicatePartWakesForItsChanges() async throws {
        let folder = TemporaryFolder()
        let store = try Self.filled(folder)
        // The arithmetic part has no key path: the query is re-run on each commit to Pup.
        let query = store.objects(Pup.self).where(#Predicate { $0.id * 2 > 56 })
        var changes = store.changes(of: query).makeAsyncIterator()
        let initial = try #require(try await changes.next())
        #expect(initial.results.map(\.id) == [29, 30])
        try await store.write { tx in
            try tx.insert(Pup(id: 31, name: "Kuro", kind: .shiba, born: Self.epoch, chip: Self.chip(31)))
            try tx.delete(Pup.self, id: 29)
        }
        let next = try #require(try await changes.next())
        #expect(next.results.map(\.id) == [30, 31])
        #expect(next.deletions == [0] && next.insertions == [1])
    }
}
