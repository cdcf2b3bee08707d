import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Cellar

/// Where each `AwaitPup` was decoded: `true` on Cellar's async read queue, `false` anywhere else.
private let decodedOnReadQueue = Mutex<[Bool]>([])
private let readQueueKey = DispatchSpecificKey<Bool>()

/// A dog whose decoding notes the queue it runs on, so that a test can tell an async form from a blocking one.
private struct AwaitPup: Model, Equatable {
    var id: Int64
    var age: Int
    var weight: Double
    static let schema = Schema<AwaitPup>(indexes: [.index(\.age)])

    init(id: Int64, age: Int, weight: Double) {
        (self.id, self.age, self.weight) = (id, age, weight)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        age = try container.decode(Int.self, forKey: .age)
        weight = try container.decode(Double.self, forKey: .weight)
        let onReadQueue = DispatchQueue.getSpecific(key: readQueueKey) ?? false
        decodedOnReadQueue.withLock { $0.append(onReadQueue) }
    }
}

private struct AwaitWalker: Model, Equatable {
    var id: Int64
    var pups: [Link<AwaitPup>] = []
    var favourite: Link<AwaitPup>?
    static let schema = Schema<AwaitWalker>(links: [.link(\.pups), .link(\.favourite, exclusive: true)])

    init(id: Int64, pups: [Link<AwaitPup>], favourite: Link<AwaitPup>?) {
        (self.id, self.pups, self.favourite) = (id, pups, favourite)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        pups = try container.decode([Link<AwaitPup>].self, forKey: .pups)
        favourite = try container.decodeIfPresent(Link<AwaitPup>.self, forKey: .favourite)
        let onReadQueue = DispatchQueue.getSpecific(key: readQueueKey) ?? false
        decodedOnReadQueue.withLock { $0.append(onReadQueue) }
    }
}

/// The README's rule: every call that opens, reads or writes a store has an `async` form of the same name, which Swift
/// picks in async code. Each call below is written as a user writes it in an async function; the decodes it causes
/// must run on Cellar's read queue, not on the caller's thread. A call with no async form still compiles here (an
/// `await` before a blocking call is allowed), so the queue is what tells: without `Store.resolve`'s async form, the
/// `resolve(_:)` line fails. Calls that decode nothing are checked for their results only.
@Suite("One rule for await")
struct AwaitRuleTests {
    /// Runs `call`, and expects that it decoded at least one pup and did every decode on the read queue (or, for
    /// `onReadQueue: false`, on none of them).
    func expectDecodes<R>(
        _ what: String, onReadQueue: Bool = true, _ call: () async throws -> R,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> R {
        decodedOnReadQueue.withLock { $0.removeAll() }
        let result = try await call()
        let queues = decodedOnReadQueue.withLock { $0 }
        #expect(!queues.isEmpty, "\(what) decoded nothing", sourceLocation: sourceLocation)
        #expect(queues.allSatisfy { $0 == onReadQueue }, "\(what): \(queues)", sourceLocation: sourceLocation)
        return result
    }

    @Test func everyReadAndWriteHasAnAsyncFormOfTheSameName() async throws {
        asyncReads.setSpecific(key: readQueueKey, value: true)
        let folder = TemporaryFolder()
        let configuration = Configuration(models: [AwaitPup.self, AwaitWalker.self])
        // Opening never decodes a value it did not read from the store: a new store's pending changes decode nothing.
        decodedOnReadQueue.withLock { $0.removeAll() }
        let pending = try await Store.pendingChanges(at: folder.url, configuration: configuration)
        #expect(decodedOnReadQueue.withLock { $0 }.isEmpty)
        #expect(pending.changes.count == 2)
        let store = try await Store(at: folder.url, configuration: configuration)
        try await store.write { tx in
            for id in Int64(1)...6 { try tx.insert(AwaitPup(id: id, age: Int(id % 3), weight: Double(id))) }
            try tx.insert(AwaitWalker(id: 1, pups: [Link(id: 1), Link(id: 2)], favourite: Link(id: 3)))
        }
        let query = store.objects(AwaitPup.self).where(\.age == 1)

        // The blocking forms decode on the caller's thread: the check below can tell them apart.
        _ = try await expectDecodes("the blocking results()", onReadQueue: false) {
            try (query.results() as Results<AwaitPup>)
        }

        let results = try await expectDecodes("results()") { try await query.results() }
        #expect(results.map(\.id) == [1, 4])
        #expect(try await expectDecodes("first()") { try await query.first() }?.id == 1)
        #expect(try await expectDecodes("latest()") { try await results.latest() }.count == 2)
        #expect(try await expectDecodes("min(_:)") { try await query.min(\.weight) } == 1)
        #expect(try await expectDecodes("max(_:)") { try await query.max(\.weight) } == 4)
        #expect(try await expectDecodes("sum(_:)") { try await query.sum(\.weight) } == 5)
        #expect(try await expectDecodes("average(_:)") { try await query.average(\.weight) } == 2.5)
        #expect(try await expectDecodes("average(_:) of integers") { try await query.average(\.age) } == 1)
        #expect(try await expectDecodes("object(_:id:)") { try await store.object(AwaitPup.self, id: 2) }?.age == 2)
        #expect(try await expectDecodes("object(link)") { try await store.object(Link<AwaitPup>(id: 5)) }?.id == 5)
        let optionalLink: Link<AwaitPup>? = Link(id: 6)
        #expect(try await expectDecodes("object(optional link)") { try await store.object(optionalLink) }?.id == 6)
        #expect(try await expectDecodes("resolve(_:)") { try await store.resolve([Link<AwaitPup>(id: 3)]) }.count == 1)
        let walkers = try await expectDecodes("backlinks(to:via:)") {
            try await store.backlinks(to: AwaitPup(id: 1, age: 1, weight: 1), via: \AwaitWalker.pups)
        }
        #expect(walkers.map(\.id) == [1])
        let walker = try await expectDecodes("backlink(to:via:)") {
            try await store.backlink(to: AwaitPup(id: 3, age: 0, weight: 3), via: \AwaitWalker.favourite)
        }
        #expect(walker?.id == 1)
        let walking = store.objects(AwaitWalker.self).including(\.pups)
        #expect(try await expectDecodes("including(_:).results()") { try await walking.results() }.count == 1)
        #expect(try await expectDecodes("including(_:).first()") { try await walking.first() }?.included.count == 2)
        // count() with a condition no index answers decodes each record to check it.
        let heavy = store.objects(AwaitPup.self).filter { $0.weight > 4 }
        #expect(try await expectDecodes("count() of a filter") { try await heavy.count() } == 2)
        #expect(try await expectDecodes("verifyIntegrity()") { try await store.verifyIntegrity() }.problems == [])

        // Reads that decode nothing, and the files: the same names, awaited.
        #expect(try await query.count() == 2)
        #expect(try await store.count(AwaitPup.self) == 6)
        #expect(try await query.explain() == "use index i/AwaitPup.age for age == 1")
        #expect(try await store.read { snapshot in try snapshot.count(AwaitWalker.self) } == 1)
        let copy = TemporaryFolder()
        try await store.compact(to: copy.url.appendingPathComponent("copy"))
        let memory = try await Store.inMemory(configuration)
        #expect(try await memory.count(AwaitPup.self) == 0)
        try await Store.delete(at: copy.url.appendingPathComponent("copy"))
        #expect(!FileManager.default.fileExists(atPath: copy.url.appendingPathComponent("copy/data.mdb").path))
    }
}
