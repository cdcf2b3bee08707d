import Foundation
import LMDB
import Testing

@testable import Cellar

/// A large query of a plain `Codable` model decodes on every core, each worker into its own part of the result's
/// storage; records a condition drops leave gaps that are closed afterwards, and a chunk that fails is decoded again
/// on the caller's thread. Every record decoded is counted while it lives: whatever the path, the result holds exactly
/// the records it should, in order, and every other record decoded is freed once (none leaked, none freed twice).
@Suite("Queries decoded on every core", .serialized, .enabled(if: ParallelDecoding.workers > 1))
struct ParallelDecodingTests {
    /// Counts its live instances.
    final class Tracked: Codable, Sendable {
        static let live = Lock(0)
        let number: Int

        init(_ number: Int) {
            self.number = number
            Self.live.withLock { $0 += 1 }
        }

        required init(from decoder: any Decoder) throws {
            number = try decoder.singleValueContainer().decode(Int.self)
            Self.live.withLock { $0 += 1 }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(number)
        }

        deinit { Self.live.withLock { $0 -= 1 } }
    }

    struct Crate: Model {
        var id: Int64
        var weight: Int
        var tag: Tracked
        static let schema = Schema<Crate>(name: "TrackedCrate")
    }

    static let count = ParallelDecoding.minimumRecords * 3 + 11

    /// The instances of `Tracked` alive now. The suite's tests run one at a time, and compare the count with what it
    /// was before their queries (the schema's capture keeps a sample for the process).
    static var live: Int { Tracked.live.withLock { $0 } }

    func filled() throws -> Store {
        let store = try Store.inMemory(.init(models: [Crate.self]))
        try store.write { tx in
            for number in 1...Self.count {
                try tx.insert(Crate(id: Int64(number), weight: number % 7, tag: Tracked(number)))
            }
        }
        return store
    }

    @Test func everyRecordDecodedIsKeptInOrderOrFreedOnce() throws {
        let store = try filled()
        let before = Self.live
        do {
            let all = try store.objects(Crate.self).results()
            #expect(all.map(\.tag.number) == Array(1...Self.count))
            #expect(Self.live == before + Self.count)
            // A condition the index does not decide drops records after they are decoded: gaps in every chunk.
            let light = try store.objects(Crate.self).filter { $0.weight < 2 }.results()
            #expect(light.map(\.tag.number) == (1...Self.count).filter { $0 % 7 < 2 })
            #expect(Self.live == before + Self.count + light.count)
        }
        #expect(Self.live == before)
    }

    /// A record in the first chunk, at the start of the second, and in the last.
    @Test(arguments: [3, (count + ParallelDecoding.workers - 1) / ParallelDecoding.workers + 1, count - 2])
    func aDamagedRecordInAnyChunkIsReportedAndNothingLeaks(damaged: Int) throws {
        let store = try filled()
        let info = try store.info(for: Crate.self)
        let before = Self.live
        try store.core.environment.write { txn in
            try txn.put(
                info.records, key: try KeyEncoding.key(Int64(damaged)), value: [RecordFormat.version, 0x0D, 0x7F])
        }
        for query in [store.objects(Crate.self), store.objects(Crate.self).filter { $0.weight != 3 }] {
            do {
                _ = try query.results()
                Issue.record("a damaged record was read")
            } catch {
                guard case .decodingFailed(_, let id, _, _) = error else {
                    Issue.record("expected decodingFailed, got \(error)")
                    continue
                }
                #expect(id == "\(damaged)")
            }
            #expect(Self.live == before, "damaged \(damaged)")
        }
    }
}
