import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// Random values of models whose shapes nest what `Codable` allows: enums with payloads inside enums, dictionaries
/// with every kind of key, optionals of lists of structs, several levels deep. Each opens, is written, reopened and
/// read back equal.
@Suite("Model shapes: open, write, reopen, read back")
struct ModelShapePropertyTests {
    enum Colour: String, Codable, Hashable, Sendable, CaseIterable { case red, green, blue }

    struct Point: Codable, Hashable, Sendable {
        var x: Int
        var y: Int
    }

    struct Leaf: Codable, Equatable, Sendable {
        var name: String
        var weight: Double?
        var tags: Set<String>
    }

    /// A sum type that nests itself through every container kind.
    indirect enum Node: Codable, Equatable, Sendable {
        case number(Int64)
        case text(String)
        case flag(Bool, note: String?)
        case list([Node])
        case byName([String: Node])
        case byNumber([Int: Node])
        case byColour([Colour: Node])
        case byPoint([Point: Node])
        case leaves([Leaf]?)
        case inner(Inner)

        enum Inner: Codable, Equatable, Sendable {
            case empty
            case pair(Node, Node)
            case colour(Colour)
        }
    }

    struct Tree: Model, Equatable {
        var id: Int
        var root: Node
        var byColour: [Colour: [Node]]
        var leaves: [Leaf]?
        var optionalRoots: [Node?]
        var huge: Int128
    }

    /// A random node at most `depth` levels deep.
    static func node(_ depth: Int, _ random: inout SeededGenerator) -> Node {
        let choice = Int.random(in: 0..<(depth > 0 ? 10 : 3), using: &random)
        func children() -> [Node] { (0..<Int.random(in: 0...3, using: &random)).map { _ in node(depth - 1, &random) } }
        switch choice {
        case 0: return .number(Int64.random(in: .min ... .max, using: &random))
        case 1:
            return .text(
                String(
                    (0..<Int.random(in: 0...12, using: &random)).map { _ in "aé𝄞 z\u{0}".randomElement(using: &random)!
                    }))
        case 2: return .flag(Bool.random(using: &random), note: Bool.random(using: &random) ? "n" : nil)
        case 3: return .list(children())
        case 4: return .byName(Dictionary(uniqueKeysWithValues: children().enumerated().map { ("k\($0)", $1) }))
        case 5: return .byNumber(Dictionary(uniqueKeysWithValues: children().enumerated().map { ($0 - 1, $1) }))
        case 6: return .byColour(Dictionary(uniqueKeysWithValues: zip(Colour.allCases, children()).map { ($0, $1) }))
        case 7:
            return .byPoint(
                Dictionary(uniqueKeysWithValues: children().enumerated().map { (Point(x: $0, y: -$0), $1) }))
        case 8:
            return .leaves(
                Bool.random(using: &random)
                    ? nil : children().indices.map { Leaf(name: "l\($0)", weight: Double($0) / 3, tags: ["t\($0)"]) })
        default:
            switch Int.random(in: 0..<3, using: &random) {
            case 0: return .inner(.empty)
            case 1: return .inner(.pair(node(depth - 1, &random), node(depth - 1, &random)))
            default: return .inner(.colour(Colour.allCases.randomElement(using: &random)!))
            }
        }
    }

    static func tree(id: Int, seed: UInt64) -> Tree {
        var random = SeededGenerator(seed: seed)
        return Tree(
            id: id, root: node(4, &random),
            byColour: [.red: [node(2, &random)], .blue: []],
            leaves: Bool.random(using: &random) ? nil : [Leaf(name: "a", weight: nil, tags: [])],
            optionalRoots: [nil, node(2, &random)], huge: Int128(seed) << 64 | Int128(id))
    }

    @Test func everyShapeOpensAndReadsBackEqual() async throws {
        let schema = try Tree.describedSchema()
        #expect(schema.property("root")?.shape == .opaque("Node"))
        #expect(schema.property("byColour")?.shape == .pairs(key: .string, value: .list(.opaque("Node"))))
        await checkProperty(count: 40, input: Gen.int(in: 0...Int.max)) { raw in
            let seed = UInt64(raw)
            let folder = TemporaryFolder()
            let written = (1...5).map { Self.tree(id: $0, seed: seed &+ UInt64($0)) }
            do {
                let store = try folder.store([Tree.self])
                try store.write { tx in for tree in written { try tx.insert(tree) } }
            } catch {
                Issue.record("seed \(seed): \(error)")
                return
            }
            do {
                let store = try folder.store([Tree.self])
                let read = try store.objects(Tree.self).results()
                #expect(Array(read) == written, "seed \(seed)")
                #expect(try store.verifyIntegrity().problems == [], "seed \(seed)")
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
    }
}
