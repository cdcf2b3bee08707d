import Dispatch
import Foundation
import LMDB
import Observation
import Testing

@testable import Cellar

@Suite("Observation: callbacks and live results", .hangGuard)
struct LiveResultsTests {
    struct Dog: Model, Equatable {
        var id: String
        var name: String
    }

    let folder = TemporaryFolder()

    @Test func aCallbackOnAQueueUntilTheTokenIsCancelled() async throws {
        let store = try folder.store([Dog.self])
        let queue = DispatchQueue(label: "observer")
        let (deliveries, continuation) = AsyncStream<[String]>.makeStream()
        let token = store.observe(store.objects(Dog.self).sorted(by: \.name), on: queue) { change in
            dispatchPrecondition(condition: .onQueue(queue))
            if case .success(let change) = change { continuation.yield(change.results.map(\.name)) }
        }
        var received = deliveries.makeAsyncIterator()
        #expect(await received.next() == [])
        try await store.write { tx in try tx.insert(Dog(id: "1", name: "Taro")) }
        #expect(await received.next() == ["Taro"])
        token.cancel()
        try await store.write { tx in try tx.insert(Dog(id: "2", name: "Hachi")) }
        // A write after the cancel is not delivered: the next thing the stream yields is the marker below.
        try await Task.sleep(for: .milliseconds(100))
        continuation.yield(["cancelled"])
        #expect(await received.next() == ["cancelled"])
    }

    @Test func aDeliveryQueuedBeforeTheTokenWasCancelledOnItsQueueDoesNotCallTheHandler() async throws {
        let store = try folder.store([Dog.self])
        let queue = DispatchQueue(label: "observer")
        // Deliveries wait here until the test puts them on the queue.
        let submitted = Lock<[@Sendable () -> Void]>([])
        let handled = Lock<[[String]]>([])
        let token = Store.deliver(store.changes(of: store.objects(Dog.self))) { change in
            dispatchPrecondition(condition: .onQueue(queue))
            if case .success(let change) = change { handled.withLock { $0.append(change.results.map(\.name)) } }
        } submittingTo: { delivery in
            submitted.withLock { $0.append(delivery) }
        }
        /// The next delivery, once the observation has submitted it (within ten seconds, see `holds`).
        func nextDelivery() async throws -> @Sendable () -> Void {
            try #require(await holds(within: .seconds(10)) { submitted.withLock { !$0.isEmpty } }, "no delivery came")
            return submitted.withLock { $0.removeFirst() }
        }
        queue.async(execute: try await nextDelivery())
        queue.sync {}
        #expect(handled.withLock { $0 } == [[]])

        try await store.write { tx in try tx.insert(Dog(id: "1", name: "Taro")) }
        let queued = try await nextDelivery()
        // The token is cancelled on the delivery queue while the delivery waits behind: cancel() has returned when
        // the delivery runs.
        queue.async { token.cancel() }
        queue.async(execute: queued)
        queue.sync {}
        #expect(handled.withLock { $0 } == [[]], "the handler is not called after cancel() returned")
    }

    @Test @MainActor func aConsumerOnTheMainActorDoesNotRunTheQueryThere() async throws {
        let store = try folder.store([Dog.self])
        try await store.write { tx in try tx.insert(Dog(id: "1", name: "Taro")) }
        let onMain = Lock(0)
        let checked = Lock(0)
        // The closure runs wherever the query runs: once per record read, at the first delivery and at the next.
        let query = store.objects(Dog.self).filter { _ in
            checked.withLock { $0 += 1 }
            if Thread.isMainThread { onMain.withLock { $0 += 1 } }
            return true
        }
        var changes = store.changes(of: query).makeAsyncIterator()
        _ = try await changes.next()
        try await store.write { tx in try tx.insert(Dog(id: "2", name: "Hachi")) }
        #expect(try await changes.next()?.insertedIDs == ["2"])
        #expect(checked.withLock { $0 } == 2 && onMain.withLock { $0 } == 0)
    }

    @Test @MainActor func liveResultsRedrawAViewAfterEachChange() async throws {
        let store = try folder.store([Dog.self])
        try await store.write { tx in try tx.insert(Dog(id: "1", name: "Taro")) }
        let live = LiveResults(store.objects(Dog.self).sorted(by: \.name), in: store)
        #expect(!live.isLoaded && live.results.isEmpty)
        try await changed(live) {}
        #expect(live.isLoaded && live.results.map(\.name) == ["Taro"])
        try await changed(live) {
            try await store.write { tx in try tx.insert(Dog(id: "2", name: "Hachi")) }
        }
        #expect(live.results.map(\.name) == ["Hachi", "Taro"])
        #expect(live.lastChange?.insertions == [0])
    }

    /// Runs `body` and waits until `live.results` changes, as a SwiftUI view would notice it.
    @MainActor
    func changed(_ live: LiveResults<Dog>, after body: () async throws -> Void) async throws {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        withObservationTracking {
            _ = live.results
        } onChange: {
            continuation.yield()
        }
        try await body()
        for await _ in stream { break }
        // `onChange` runs before the new value is set; let the main actor finish the assignment.
        await Task.yield()
    }
}
