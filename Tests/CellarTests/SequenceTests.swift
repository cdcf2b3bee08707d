import Foundation
import Testing

@testable import Cellar

/// The model `cellar-test-helper` writes from a second process.
struct Ticket: Model {
    var id: Int64 = 0
    var writer: String
    static let schema = Schema<Ticket>(autoIncrement: true)
}

/// Ids of each width the sequence numbers: `Int` and `Int64` directly, other integers through the schema's mapping.
struct IntTicket: Model {
    var id: Int = 0
    static let schema = Schema<IntTicket>(autoIncrement: true)
}

struct SmallTicket: Model {
    var id: UInt8 = 0
    static let schema = Schema<SmallTicket>(autoIncrement: true)
}

@Suite("Auto-increment sequences")
struct SequenceTests {
    @Test func eachIdWidthIsNumberedMovedAndExhausted() throws {
        let store = try Store.inMemory(.init(models: [Ticket.self, IntTicket.self, SmallTicket.self]))
        try store.write { tx in
            #expect(try tx.insert(Ticket(writer: "a")).id == 1)
            #expect(try tx.insert(IntTicket()).id == 1)
            #expect(try tx.insert(SmallTicket()).id == 1)
            // An explicit id moves the sequence past it; a negative one does not.
            try tx.insert(Ticket(id: 41, writer: "b"))
            try tx.insert(Ticket(id: -7, writer: "c"))
            try tx.insert(IntTicket(id: 41))
            try tx.insert(SmallTicket(id: 41))
            #expect(try tx.insert(Ticket(writer: "d")).id == 42)
            #expect(try tx.insert(IntTicket()).id == 42)
            #expect(try tx.insert(SmallTicket()).id == 42)
            // At the end of the id type's range, or of the sequence's, an insert is refused, not wrapped.
            try tx.insert(Ticket(id: .max - 1, writer: "e"))
            try tx.insert(IntTicket(id: .max - 1))
            try tx.insert(SmallTicket(id: .max))
        }
        func expectExhausted(_ insert: (WriteTransaction) throws -> Void) {
            #expect {
                try store.write { tx in try insert(tx) }
            } throws: { error in
                guard case StoreError.sequenceExhausted = error else { return false }
                return true
            }
        }
        expectExhausted { tx in try tx.insert(Ticket(writer: "f")) }
        expectExhausted { tx in try tx.insert(IntTicket()) }
        expectExhausted { tx in try tx.insert(SmallTicket()) }
        expectExhausted { tx in try tx.insert(Ticket(id: .max, writer: "g")) }
    }

    @Test func idsAreNeverReusedAfterDeletesOrReopening() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Dog.self])
            var rex = Dog(name: "Rex", age: 3)
            try store.write { tx in
                try tx.insert(&rex)
                try tx.insert(Dog(name: "Pochi", age: 5))
            }
            #expect(rex.id == 1)
            try store.write { tx in
                try tx.delete(Dog.self, id: 2)
                try tx.deleteAll(Dog.self)
            }
            #expect(try store.write { tx in try tx.insert(Dog(name: "Hachi", age: 1)).id } == 3)
        }
        let store = try folder.store([Dog.self])
        #expect(try store.write { tx in try tx.insert(Dog(name: "Shiro", age: 2)).id } == 4)
    }

    @Test func anExplicitLargerIdMovesTheSequence() throws {
        let store = try Store.inMemory(.init(models: [Dog.self]))
        try store.write { tx in
            try tx.insert(Dog(id: 100, name: "Explicit", age: 1))
            #expect(try tx.insert(Dog(name: "Next", age: 1)).id == 101)
            try tx.insert(Dog(id: 50, name: "Smaller", age: 1))  // below the sequence: allowed, no move
            #expect(try tx.insert(Dog(name: "After", age: 1)).id == 102)
            var upserted = Dog(name: "Upserted", age: 1)
            try tx.upsert(&upserted)
            #expect(upserted.id == 103)
        }
        #expect(try store.objects(Dog.self).results().map(\.id) == [50, 100, 101, 102, 103])
    }

    @Test func idsStayUniqueAcrossThreads() async throws {
        let store = try await Store.inMemory(.init(models: [Ticket.self]))
        let perThread = 200
        let ids = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for thread in 0..<4 {
                group.addTask {
                    try (0..<perThread).map { _ in
                        try store.write { tx in try tx.insert(Ticket(writer: "thread \(thread)")).id }
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(ids.count == 4 * perThread)
        #expect(Set(ids) == Set(1...Int64(4 * perThread)))
    }

    @Test func idsStayUniqueAcrossTwoProcesses() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([Ticket.self])
        let helper = Process()
        helper.executableURL = try builtExecutable()
        let perProcess = 300
        helper.arguments = [folder.url.path, String(perProcess)]
        let output = Pipe()
        helper.standardOutput = output
        try helper.run()
        // Both processes insert at the same time.
        var mine: [Int64] = []
        for _ in 0..<perProcess {
            mine.append(try store.write { tx in try tx.insert(Ticket(writer: "test")).id })
        }
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        helper.waitUntilExit()
        #expect(helper.terminationStatus == 0)
        let theirs = String(decoding: printed, as: UTF8.self).split(separator: "\n").compactMap { Int64($0) }
        #expect(theirs.count == perProcess)
        #expect(Set(mine).isDisjoint(with: theirs))
        #expect(Set(mine + theirs) == Set(1...Int64(2 * perProcess)))
        let stored = try store.objects(Ticket.self).results()
        #expect(stored.count == 2 * perProcess)
        #expect(stored.filter { $0.writer == "helper" }.map(\.id).sorted() == theirs.sorted())
    }

    @Test func readsRecordsWhoseKeyNamesAnotherProcessAdded() throws {
        let folder = TemporaryFolder()
        // This process opens the store first, so the key dictionary it loads is empty.
        let store = try folder.store([Ticket.self])
        let helper = Process()
        helper.executableURL = try builtExecutable()
        helper.arguments = [folder.url.path, "5"]
        helper.standardOutput = Pipe()
        try helper.run()
        helper.waitUntilExit()
        #expect(helper.terminationStatus == 0)
        let tickets = try store.objects(Ticket.self).results()
        #expect(tickets.map(\.id) == [1, 2, 3, 4, 5])
        #expect(tickets.allSatisfy { $0.writer == "helper" })
    }
}
