// A second process for Cellar's tests: inserts auto-numbered tickets into a store that the test process is
// writing at the same time, and prints the ids it was given, one per line.
//
// Usage: cellar-test-helper <store folder> <count>
import Cellar
import Foundation

struct Ticket: Model {
    var id: Int64 = 0
    var writer: String
    static let schema = Schema<Ticket>(autoIncrement: true)
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: cellar-test-helper <store folder> <count>\n".utf8))
    exit(2)
}

do {
    let store = try Store(at: URL(fileURLWithPath: arguments[1]), configuration: .init(models: [Ticket.self]))
    var ids: [Int64] = []
    for _ in 0..<count {
        ids.append(try store.write { tx in try tx.insert(Ticket(writer: "helper")).id })
    }
    print(ids.map(String.init).joined(separator: "\n"))
} catch {
    FileHandle.standardError.write(Data("cellar-test-helper: \(error)\n".utf8))
    exit(1)
}
