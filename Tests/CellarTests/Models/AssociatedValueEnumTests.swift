import CellarMacros
import Foundation
import Testing

@testable import Cellar

/// Models holding enums with associated values, as the README's "Which property types work" and the models article
/// describe them: stored, read back, queried without an index and migrated like any other value.
enum AssociatedValueEnums {
    struct Address: Codable, Equatable, Sendable {
        var street: String
        var city: String
        var floor: Int?
    }

    /// Payloads of several kinds: a nested struct (in the first case, the one opening is offered), labelled values,
    /// an unlabelled `String`, an `Int`, and a case without a payload.
    enum Delivery: Codable, Equatable, Sendable {
        case shipped(Address)
        case tracked(code: String, parcels: Int)
        case pickup(String)
        case held(days: Int)
        case undecided
    }

    struct Order: Model, Equatable {
        var id: Int64 = 0
        var title: String
        var delivery: Delivery
        var fallback: Delivery?
        var history: [Delivery]
        static let schema = Schema<Order>(autoIncrement: true)
    }

    /// `Order` with generated record code, stored under the same name: its enums go through `Codable` at their place
    /// in the record.
    @Record
    struct RecordOrder: Model, Equatable {
        var id: Int64 = 0
        var title: String
        var delivery: Delivery
        var fallback: Delivery?
        var history: [Delivery]
        static let schema = Schema<RecordOrder>(name: "Order", autoIncrement: true)
    }

    static let orders: [Order] = [
        Order(
            title: "books", delivery: .shipped(Address(street: "1 Rue Haute", city: "Lyon", floor: 2)),
            fallback: .pickup("Lyon Part-Dieu"), history: [.undecided, .held(days: 2)]),
        Order(title: "lamp", delivery: .tracked(code: "XY-12", parcels: 2), fallback: nil, history: []),
        Order(
            title: "tea", delivery: .pickup("Gare de l'Est"), fallback: .undecided,
            history: [.tracked(code: "A1", parcels: 1), .shipped(Address(street: "", city: "Paris", floor: nil))]),
        Order(
            title: "desk", delivery: .held(days: 3),
            fallback: .shipped(Address(street: "9 Quai Nord", city: "Nantes", floor: nil)), history: [.pickup("")]),
        Order(title: "pen", delivery: .undecided, fallback: .held(days: 0), history: [.undecided, .undecided]),
    ]

    /// `orders` with the ids the store gives them.
    static var numbered: [Order] {
        var numbered = orders
        for index in numbered.indices { numbered[index].id = Int64(index + 1) }
        return numbered
    }

    /// Two cases with equal payloads, and two without a payload: their keys are alike.
    enum JobState: Codable, Equatable, Sendable {
        case failed(reason: String)
        case retried(reason: String)
        case queued
        case paused
    }

    struct Job: Model, Equatable {
        var id: Int
        var state: JobState
    }

    struct IndexedJob: Model, Equatable {
        var id: Int
        var state: JobState
        static let schema = Schema<IndexedJob>(indexes: [.index(\.state)])
    }
}

extension AssociatedValueEnums.RecordOrder {
    var order: AssociatedValueEnums.Order {
        AssociatedValueEnums.Order(id: id, title: title, delivery: delivery, fallback: fallback, history: history)
    }
}

@Suite("Enums with associated values")
struct AssociatedValueEnumTests {
    typealias Order = AssociatedValueEnums.Order
    typealias Delivery = AssociatedValueEnums.Delivery

    private func insertOrders(into store: Store) throws {
        try store.write { tx in
            for var order in AssociatedValueEnums.orders { try tx.insert(&order) }
        }
    }

    @Test func theyReadBackEqualBeforeAndAfterTheStoreIsReopened() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Order.self])
            try insertOrders(into: store)
            let read = try store.objects(Order.self).results()
            #expect(Array(read) == AssociatedValueEnums.numbered)
        }
        let reopened = try folder.store([Order.self])
        let read = try reopened.objects(Order.self).results()
        #expect(Array(read) == AssociatedValueEnums.numbered)
        for order in AssociatedValueEnums.numbered {
            #expect(try reopened.object(Order.self, id: order.id) == order)
        }
        #expect(try reopened.verifyIntegrity().problems == [])
    }

    @Test func aConditionNoIndexAnswersComparesDecodedValues() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Order.self])
        try insertOrders(into: store)
        let orders = store.objects(Order.self)
        let tracked = try orders.where(\.delivery == .tracked(code: "XY-12", parcels: 2)).results()
        #expect(tracked.map(\.title) == ["lamp"])
        let decided = try orders.where(\.delivery != .undecided).results()
        #expect(decided.map(\.title) == ["books", "lamp", "tea", "desk"])
        let either = try orders.where(.in(\.delivery, [.pickup("Gare de l'Est"), .held(days: 3)])).results()
        #expect(either.map(\.title) == ["tea", "desk"])
        let undecidedFallback = try orders.where(\.fallback == Delivery.undecided).results()
        #expect(undecidedFallback.map(\.title) == ["tea"])
        let onceUndecided = try orders.where(.matching { $0.history.contains(.undecided) }).results()
        #expect(onceUndecided.map(\.title) == ["books", "pen"])
    }

    @Test func aMigrationStepReadsAndWritesThem() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Order.self])
            try insertOrders(into: store)
        }
        // The step moves each order's delivery to its fallback and leaves the order undecided.
        let store = try Store(
            at: folder.url,
            configuration: .init(
                models: [Order.self], schemaVersion: 2,
                migrations: [
                    .to(2) { migration in
                        try migration.enumerateRecords(ofType: "Order") { order in
                            if let delivery = try order.value("delivery", as: Delivery.self) {
                                try order.set("fallback", to: delivery)
                            }
                            try order.set("delivery", to: Delivery.undecided)
                        }
                    }
                ]))
        let expected = AssociatedValueEnums.numbered.map { order in
            var migrated = order
            migrated.fallback = order.delivery
            migrated.delivery = .undecided
            return migrated
        }
        let read = try store.objects(Order.self).results()
        #expect(Array(read) == expected)
    }

    @Test func generatedRecordCodeReadsWhatCodableWrote() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Order.self])
            try insertOrders(into: store)
        }
        typealias RecordOrder = AssociatedValueEnums.RecordOrder
        let store = try folder.store([RecordOrder.self])
        let read = try store.objects(RecordOrder.self).results()
        #expect(read.map(\.order) == AssociatedValueEnums.numbered)
        let held = try store.objects(RecordOrder.self).where(\.delivery == .held(days: 3)).results()
        #expect(held.map(\.title) == ["desk"])
    }

    // A key names the case, then its payload: cases with equal payloads, and cases without one, have keys of their own.

    @Test func distinctAndSortingTellCasesWithEqualPayloadsApart() throws {
        typealias Job = AssociatedValueEnums.Job
        let folder = TemporaryFolder()
        let store = try folder.store([Job.self])
        try store.write { tx in
            try tx.insert(Job(id: 1, state: .failed(reason: "disk")))
            try tx.insert(Job(id: 2, state: .retried(reason: "disk")))
            try tx.insert(Job(id: 3, state: .queued))
            try tx.insert(Job(id: 4, state: .paused))
        }
        // Without an index, a condition compares decoded values.
        let failed = try store.objects(Job.self).where(\.state == .failed(reason: "disk")).results()
        #expect(failed.map(\.id) == [1])
        let states = try store.objects(Job.self).distinct(by: \.state).results()
        #expect(states.map(\.id) == [1, 2, 3, 4])
        // By case name, then payload.
        let sorted = try store.objects(Job.self).sorted(by: \.state).results()
        #expect(sorted.map(\.id) == [1, 4, 3, 2])
    }

    @Test func anIndexOnOneTellsItsCasesApart() throws {
        typealias Job = AssociatedValueEnums.IndexedJob
        let folder = TemporaryFolder()
        let store = try folder.store([Job.self])
        try store.write { tx in
            try tx.insert(Job(id: 1, state: .failed(reason: "disk")))
            try tx.insert(Job(id: 2, state: .retried(reason: "disk")))
        }
        let failed = try store.objects(Job.self).where(\.state == .failed(reason: "disk")).results()
        #expect(failed.map(\.id) == [1])
        try store.write { tx in try tx.insert(Job(id: 3, state: .queued)) }
        let queued = try store.objects(Job.self).where(\.state == .queued).results()
        #expect(queued.map(\.id) == [3])
        #expect(try store.objects(Job.self).where(\.state == .failed(reason: "disk")).explain().hasPrefix("use index"))
        #expect(try store.verifyIntegrity().problems == [])
    }
}
