import CellarMacros
import Foundation
import Testing

@testable import Cellar

/// The fields the read-path tests compare, shared by a `Codable` model and its `@Record` twin.
protocol ReadPathDog: Model, Equatable {
    var id: Int64 { get }
    var name: String { get }
    var age: Int { get }
    var owner: Int64? { get }
    init(name: String, age: Int, owner: Int64?)
}

struct PlainReadPathDog: ReadPathDog {
    var id: Int64 = 0
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<PlainReadPathDog>(name: "Dog", autoIncrement: true, indexes: [.index(\.age)])

    init(name: String, age: Int, owner: Int64?) { (self.name, self.age, self.owner) = (name, age, owner) }
}

@Record
struct GeneratedReadPathDog: ReadPathDog {
    var id: Int64 = 0
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<GeneratedReadPathDog>(name: "Dog", autoIncrement: true, indexes: [.index(\.age)])

    init(name: String, age: Int, owner: Int64?) { (self.name, self.age, self.owner) = (name, age, owner) }
}

/// A query reads its records one of several ways: decoded as the walk reaches them (into storage of the known size,
/// or of a growing one when filters drop some), or gathered first and decoded on this thread or on every core.
/// Whichever it takes, the answer is the one computed from all the records in memory.
@Suite("Queries read records the same way whatever path they take")
struct QueryReadPathTests {
    static let count = ParallelDecoding.minimumRecords + 904

    func check<D: ReadPathDog>(_ type: D.Type, decodingInParallel: Bool) throws {
        var configuration = Configuration(models: [D.self])
        configuration.decodesInParallel = decodingInParallel
        let store = try Store.inMemory(configuration)
        let all = try store.write { tx in
            try (0..<Self.count).map { i in
                try tx.insert(D(name: "Dog \(i)", age: i % 20, owner: i % 7 == 0 ? nil : Int64(i % 50)))
            }
        }
        func expect(_ query: Query<D>, _ expected: [D], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let found = try query.results()
            #expect(Array(found) == expected, sourceLocation: sourceLocation)
        }
        let sevens = all.filter { $0.age == 7 }
        let fives = all.filter { $0.owner == 5 }
        try expect(store.objects(D.self), all)
        try expect(store.objects(D.self).limit(10), Array(all.prefix(10)))
        try expect(store.objects(D.self).offset(Self.count - 3), Array(all.suffix(3)))
        try expect(store.objects(D.self).where(\.age == 7), sevens)
        try expect(store.objects(D.self).where(\.age == 7).limit(3), Array(sevens.prefix(3)))
        try expect(store.objects(D.self).where(\.age == 7).offset(2).limit(3), Array(sevens.dropFirst(2).prefix(3)))
        try expect(store.objects(D.self).where(\.owner == 5), fives)
        try expect(store.objects(D.self).where(\.owner == 5).offset(1).limit(2), Array(fives.dropFirst().prefix(2)))
        try expect(store.objects(D.self).where(\.owner == nil), all.filter { $0.owner == nil })
        try expect(
            store.objects(D.self).where(\.age == 7 && \.owner != nil), all.filter { $0.age == 7 && $0.owner != nil })
        try expect(
            store.objects(D.self).filter { $0.name.hasSuffix("7") }.limit(4),
            Array(all.filter { $0.name.hasSuffix("7") }.prefix(4)))
        try expect(store.objects(D.self).distinct(by: \.age), Array(all.prefix(20)))
        try expect(
            store.objects(D.self).where(.between(\.id, Int64(100)...Int64(200))),
            all.filter { (100...200).contains($0.id) })
        try expect(
            store.objects(D.self).sorted(by: \.name).limit(5), Array(all.sorted { $0.name < $1.name }.prefix(5)))
        try expect(store.objects(D.self).where(\.age == 21), [])
        try expect(store.objects(D.self).limit(0), [])
    }

    @Test(arguments: [false, true])
    func aCodableModelGivesTheAnswerComputedInMemory(decodingInParallel: Bool) throws {
        try check(PlainReadPathDog.self, decodingInParallel: decodingInParallel)
    }

    @Test(arguments: [false, true])
    func aGeneratedModelGivesTheAnswerComputedInMemory(decodingInParallel: Bool) throws {
        try check(GeneratedReadPathDog.self, decodingInParallel: decodingInParallel)
    }

    /// A damaged record met while the walk decodes is reported with its id, and the partial result is dropped.
    @Test(arguments: [false, true])
    func aDamagedRecordMetDuringTheWalkIsReportedWithItsID(decodingInParallel: Bool) throws {
        var configuration = Configuration(models: [GeneratedReadPathDog.self])
        configuration.decodesInParallel = decodingInParallel
        let store = try Store.inMemory(configuration)
        try store.write { tx in
            for i in 0..<100 { try tx.insert(GeneratedReadPathDog(name: "Dog \(i)", age: i % 20, owner: nil)) }
        }
        let info = try store.info(for: GeneratedReadPathDog.self)
        try store.core.environment.write { txn in
            try txn.put(info.records, key: try KeyEncoding.key(Int64(60)), value: [RecordFormat.version, 0x0D, 0x7F])
        }
        for query in [store.objects(GeneratedReadPathDog.self), store.objects(GeneratedReadPathDog.self).limit(80)] {
            do {
                _ = try query.results()
                Issue.record("a damaged record was read")
            } catch {
                guard case .decodingFailed(_, let id, _, _) = error else {
                    Issue.record("expected decodingFailed, got \(error)")
                    continue
                }
                #expect(id == "60")
            }
        }
        // Before the damaged record, a page is whole.
        #expect(try store.objects(GeneratedReadPathDog.self).limit(59).results().count == 59)
    }
}
