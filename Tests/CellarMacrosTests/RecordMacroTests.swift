import CellarMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

private let macros = ["Record": MacroSpec(type: RecordMacro.self, conformances: ["RecordCodable"])]

private func expand(
    _ source: String, into expanded: String, diagnostics: [DiagnosticSpec] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    assertMacroExpansion(
        source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros,
        failureHandler: { failure in Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation) }
    )
}

/// Expands `source`, expecting the declaration unchanged and one error with `message` at `line`:`column`.
private func refuse(
    _ source: String, message: String, line: Int, column: Int, sourceLocation: SourceLocation = #_sourceLocation
) {
    let declaration = source.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(
        separator: "\n")
    expand(
        source, into: declaration,
        diagnostics: [DiagnosticSpec(message: message, line: line, column: column)],
        sourceLocation: sourceLocation)
}

@Suite("The @Record macro")
struct RecordMacroTests {
    @Test func aModelGetsReadingWritingAndFieldNumbers() {
        expand(
            """
            @Record
            struct Dog: Model {
                var id: Int64
                var name: String
                var owner: Int64?
            }
            """,
            into: #"""
                struct Dog: Model {
                    var id: Int64
                    var name: String
                    var owner: Int64?
                }

                extension Dog: Cellar.RecordCodable {
                    static let recordKeys = Cellar.RecordKeys(["id", "name", "owner"])

                    init(record reader: inout Cellar.RecordReader) throws {
                        var fields = try reader.beginFields(of: Self.recordKeys)
                        self.id = try reader.value(field: 0, of: &fields)
                        self.name = try reader.value(field: 1, of: &fields)
                        self.owner = try reader.value(field: 2, of: &fields)
                        reader.endFields(fields)
                    }

                    func write(record writer: inout Cellar.RecordWriter) throws {
                        var fields = try writer.beginFields(of: Self.recordKeys)
                        try writer.write(self.id, field: 0, in: &fields)
                        try writer.write(self.name, field: 1, in: &fields)
                        try writer.write(self.owner, field: 2, in: &fields)
                        writer.endFields(fields)
                    }

                    static func recordField(for keyPath: PartialKeyPath<Self>) -> Int? {
                        if keyPath == \Self.id {
                            return 0
                        }
                        if keyPath == \Self.name {
                            return 1
                        }
                        if keyPath == \Self.owner {
                            return 2
                        }
                        return nil
                    }
                }
                """#)
    }

    /// What synthesized `Codable` skips, the generated code skips: computed and static properties are not stored,
    /// and a `let` with a value is written but never read back. Public types get public members.
    @Test func onlyWhatCodableStoresIsStoredAndAccessFollowsTheType() {
        expand(
            """
            @Record
            public struct Tag {
                public static let shared = Tag()
                let kind = "tag"
                var `default`: [String: Int]
                var count: Int { 0 }
                var seen: Bool = false {
                    didSet { print(seen) }
                }
            }
            """,
            into: #"""
                public struct Tag {
                    public static let shared = Tag()
                    let kind = "tag"
                    var `default`: [String: Int]
                    var count: Int { 0 }
                    var seen: Bool = false {
                        didSet { print(seen) }
                    }
                }

                extension Tag: Cellar.RecordCodable {
                    public static let recordKeys = Cellar.RecordKeys(["kind", "default", "seen"])

                    public init(record reader: inout Cellar.RecordReader) throws {
                        var fields = try reader.beginFields(of: Self.recordKeys)
                        self.`default` = try reader.value(field: 1, of: &fields)
                        self.seen = try reader.value(field: 2, of: &fields)
                        reader.endFields(fields)
                    }

                    public func write(record writer: inout Cellar.RecordWriter) throws {
                        var fields = try writer.beginFields(of: Self.recordKeys)
                        try writer.write(self.kind, field: 0, in: &fields)
                        try writer.write(self.`default`, field: 1, in: &fields)
                        try writer.write(self.seen, field: 2, in: &fields)
                        writer.endFields(fields)
                    }

                    public static func recordField(for keyPath: PartialKeyPath<Self>) -> Int? {
                        if keyPath == \Self.`default` {
                            return 1
                        }
                        if keyPath == \Self.seen {
                            return 2
                        }
                        return nil
                    }
                }
                """#)
    }

    @Test func aClassOrAnEnumIsRefused() {
        refuse(
            """
            @Record
            final class Dog {
                var id = 0
            }
            """,
            message: "@Record applies to structs; this class keeps working through Codable without it",
            line: 1, column: 1)
        refuse(
            """
            @Record
            enum Kind: String, Codable {
                case shiba
            }
            """,
            message: "@Record applies to structs; this enum keeps working through Codable without it",
            line: 1, column: 1)
    }

    @Test func customCodingIsRefusedBecauseTheGeneratedCodeWouldDisagree() {
        refuse(
            """
            @Record
            struct Dog {
                var id: Int
                enum CodingKeys: String, CodingKey {
                    case id = "identifier"
                }
            }
            """,
            message: "@Record cannot follow a custom 'CodingKeys': its generated code stores each property under "
                + "its own name; remove @Record (the type keeps working through Codable) or the custom keys",
            line: 4, column: 10)
        refuse(
            """
            @Record
            struct Dog {
                var id: Int
                init(from decoder: any Decoder) throws { id = 0 }
            }
            """,
            message: "@Record cannot follow a custom 'init(from:)': its generated code would read records "
                + "differently; remove @Record (the type keeps working through Codable) or the custom initializer",
            line: 4, column: 5)
    }

    @Test func propertiesInsideIfConfigAreRefusedBecauseTheBuildsBranchIsUnknown() {
        refuse(
            """
            @Record
            struct Dog {
                var id: Int
                #if DEBUG
                var note: String
                #endif
            }
            """,
            message: "@Record cannot see which side of '#if' a build compiles, so it cannot store the properties "
                + "or coding members declared inside; declare them outside '#if', or remove @Record (the type keeps "
                + "working through Codable)",
            line: 4, column: 5)
    }

    @Test func propertiesItCannotMirrorAreNamed() {
        refuse(
            """
            @Record
            struct Dog {
                @Clamped var age: Int
            }
            """,
            message: "'age' is wrapped in '@Clamped', which @Record cannot read or write; store the value itself, "
                + "or remove @Record (the type keeps working through Codable)",
            line: 3, column: 5)
        refuse(
            """
            @Record
            struct Box<Value: Codable> {
                var value: Value
            }
            """,
            message: "@Record does not support generic types; without @Record this type keeps working through Codable",
            line: 2, column: 11)
    }

    /// A property whose type Swift infers from its initial value, or that is nested in an enclosing type, needs no
    /// written type: the generated code never spells one.
    @Test func propertiesNeedNoWrittenType() {
        expand(
            """
            @Record
            struct Chore {
                var done = false
                var due = Date()
            }
            """,
            into: #"""
                struct Chore {
                    var done = false
                    var due = Date()
                }

                extension Chore: Cellar.RecordCodable {
                    static let recordKeys = Cellar.RecordKeys(["done", "due"])

                    init(record reader: inout Cellar.RecordReader) throws {
                        var fields = try reader.beginFields(of: Self.recordKeys)
                        self.done = try reader.value(field: 0, of: &fields)
                        self.due = try reader.value(field: 1, of: &fields)
                        reader.endFields(fields)
                    }

                    func write(record writer: inout Cellar.RecordWriter) throws {
                        var fields = try writer.beginFields(of: Self.recordKeys)
                        try writer.write(self.done, field: 0, in: &fields)
                        try writer.write(self.due, field: 1, in: &fields)
                        writer.endFields(fields)
                    }

                    static func recordField(for keyPath: PartialKeyPath<Self>) -> Int? {
                        if keyPath == \Self.done {
                            return 0
                        }
                        if keyPath == \Self.due {
                            return 1
                        }
                        return nil
                    }
                }
                """#)
    }
}
