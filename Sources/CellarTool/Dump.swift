import ArgumentParser
import Cellar
import Foundation

extension CellarCommand {
    struct Dump: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a model's records, in primary-key order, as text or JSON lines.",
            discussion: """
                Records are read from one snapshot and printed as they are read: a store of any size starts \
                printing at once and is never loaded whole. A record that cannot be decoded is named on standard \
                error, and the exit status is then 1.
                """)

        @OptionGroup var store: StoreArgument

        @Argument(help: "The model's stored name, as `cellar info` lists it.")
        var model: String

        @Option(
            name: .customLong("where"),
            help: ArgumentHelp(
                "Only records whose field equals the value (text as is, numbers, true/false, nil); "
                    + "a dotted path reaches a nested field. Repeat to require several.",
                valueName: "field=value"))
        var conditions: [Condition] = []

        @Option(help: "Print at most this many records.")
        var limit: Int?

        @Flag(help: "Print each record as one line of JSON.")
        var json = false

        func validate() throws {
            if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        }

        func run() throws {
            let inspector = try StoreInspector(at: store.url)
            guard let stored = try inspector.model(named: model) else {
                let names = try inspector.models().map(\.name)
                let sameLetters = names.first { $0.lowercased() == model.lowercased() }
                throw ToolError(
                    "The store holds no model named \(model)"
                        + (sameLetters.map { "; model names are case-sensitive: did you mean \($0)? " } ?? ". ")
                        + (names.isEmpty ? "It holds no models." : "It holds: \(names.joined(separator: ", ")).")
                )
            }
            var printed = 0
            var damaged = 0
            try inspector.forEachRecord(of: stored) { record in
                if let limit, printed >= limit { return false }
                guard let value = record.value else {
                    damaged += 1
                    FileHandle.standardError.write(
                        Data("cellar: \(model) \(record.id) cannot be decoded: \(record.unreadable ?? "")\n".utf8))
                    return true
                }
                guard conditions.allSatisfy({ $0.holds(for: value) }) else { return true }
                print(json ? value.json : "\(model) \(record.id): \(value.text)")
                printed += 1
                return true
            }
            if damaged > 0 { throw ExitCode.failure }
        }
    }
}

/// `--where field=value`.
struct Condition: ExpressibleByArgument {
    let path: [String]
    let value: String

    init?(argument: String) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else { return nil }
        path = argument[..<equals].split(separator: ".").map(String.init)
        value = String(argument[argument.index(after: equals)...])
    }

    func holds(for record: RecordValue) -> Bool { (record.value(at: path) ?? .null).matches(value) }
}
