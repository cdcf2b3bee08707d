// Observation. What a commit pays while observers of another model wait (0, 10, 1,000 of them), and how long one
// changed row of a 100,000-record sorted query takes from the commit to its delivery: Cellar's `changes(of:)` beside
// GRDB's `ValueObservation` (what a GRDB user writes). Raw LMDB has no observation to compare with.
import Benchmark
import Cellar
import Foundation
import GRDB

/// A model no benchmark writes: what the idle observers watch.
struct Kennel: Model {
    var id: Int
}

/// Starts `count` observers of `Kennel`, each waiting after its initial results; cancel the tasks to stop them.
func idleObservers(_ count: Int, of store: Store) async throws -> [Task<Void, any Error>] {
    guard count > 0 else { return [] }
    let (ready, signal) = AsyncStream<Void>.makeStream()
    let tasks = (0..<count).map { _ in
        Task {
            var changes = store.changes(of: store.objects(Kennel.self)).makeAsyncIterator()
            _ = try await changes.next()
            signal.yield()
            _ = try await changes.next()
        }
    }
    var started = 0
    for await _ in ready {
        started += 1
        if started == count { break }
    }
    return tasks
}

let observedCommits = 1_000

/// Commits each dog in its own transaction, on the calling thread (the synchronous `write`).
func commitEach(_ dogs: ArraySlice<Dog>, to store: Store) throws {
    for dog in dogs { try store.write { tx in try tx.insert(dog) } }
}

/// Updates one dog, on the calling thread.
func update(_ dog: Dog, in store: Store) throws {
    try store.write { tx in try tx.update(dog) }
}

func observationBenchmarks() {
    for observers in [0, 10, 1_000] {
        Benchmark("commit \(observedCommits) one-record transactions, \(observers) observers of another model: Cellar")
        {
            benchmark in
            let store = try Store.inMemory(.init(models: [Dog.self, Kennel.self], durability: .none))
            let tasks = try await idleObservers(observers, of: store)
            benchmark.startMeasurement()
            try commitEach(dogs.prefix(observedCommits), to: store)
            benchmark.stopMeasurement()
            for task in tasks { task.cancel() }
        }
    }

    Benchmark("deliver one changed row of a \(recordCount)-record sorted query: Cellar") { benchmark in
        let store = try cellarStore(filled: true)
        var changes = store.changes(of: store.objects(Dog.self).sorted(by: \.name)).makeAsyncIterator()
        _ = try await changes.next()
        benchmark.startMeasurement()
        try update(Dog(id: 7, name: "Dog 7", age: 99, owner: nil), in: store)
        let change = try await changes.next()
        benchmark.stopMeasurement()
        precondition(change?.modifications.count == 1)
    }
    Benchmark("deliver one changed row of a \(recordCount)-record sorted query: GRDB") { benchmark in
        let store = try GRDBStore(filled: true)
        let observation = ValueObservation.tracking { db in try Dog.order(Column("name")).fetchAll(db) }
        var values = observation.values(in: store.queue).makeAsyncIterator()
        _ = try await values.next()
        benchmark.startMeasurement()
        try await store.queue.write { db in try Dog(id: 7, name: "Dog 7", age: 99, owner: nil).update(db) }
        let dogs = try await values.next()
        benchmark.stopMeasurement()
        precondition(dogs?.count == recordCount)
    }
}
