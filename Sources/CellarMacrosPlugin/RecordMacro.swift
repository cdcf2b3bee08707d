import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Record`: an extension that conforms the struct to `RecordCodable` with code that reads and writes each
/// stored property in the order and under the key synthesized `Codable` uses.
public struct RecordMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: RecordDiagnostic.notAStruct(kind: kind(of: declaration))))
            return []
        }
        if let generics = structDecl.genericParameterClause {
            context.diagnose(Diagnostic(node: generics, message: RecordDiagnostic.generic))
            return []
        }
        let (properties, problems) = StoredProperty.all(in: structDecl.memberBlock)
        guard problems.isEmpty else {
            for problem in problems { context.diagnose(problem) }
            return []
        }
        let access = accessModifier(of: structDecl)
        let conformance = protocols.isEmpty ? "" : ": Cellar.RecordCodable"
        let source = """
            extension \(type.trimmedDescription)\(conformance) {
            \(keys(properties, access))

            \(reader(properties, access))

            \(writer(properties, access))

            \(fieldLookup(properties, access))
            }
            """
        guard let extensionDecl = DeclSyntax(stringLiteral: source).as(ExtensionDeclSyntax.self) else { return [] }
        return [extensionDecl]
    }

    private static func keys(_ properties: [StoredProperty], _ access: String) -> String {
        let names = properties.map { "\"\($0.name)\"" }.joined(separator: ", ")
        return "    \(access)static let recordKeys = Cellar.RecordKeys([\(names)])"
    }

    /// Reads each property from its entry, which is almost always the one after the entry read before.
    private static func reader(_ properties: [StoredProperty], _ access: String) -> String {
        var lines = ["    \(access)init(record reader: inout Cellar.RecordReader) throws {"]
        lines.append("        var fields = try reader.beginFields(of: Self.recordKeys)")
        for (number, property) in properties.enumerated() where property.isDecoded {
            lines.append(
                "        self.\(escaped(property.name)) = try reader.value(field: \(number), "
                    + "of: &fields)")
        }
        lines.append("        reader.endFields(fields)")
        lines.append("    }")
        return lines.joined(separator: "\n")
    }

    private static func writer(_ properties: [StoredProperty], _ access: String) -> String {
        var lines = ["    \(access)func write(record writer: inout Cellar.RecordWriter) throws {"]
        lines.append("        var fields = try writer.beginFields(of: Self.recordKeys)")
        for (number, property) in properties.enumerated() {
            lines.append("        try writer.write(self.\(escaped(property.name)), field: \(number), in: &fields)")
        }
        lines.append("        writer.endFields(fields)")
        lines.append("    }")
        return lines.joined(separator: "\n")
    }

    /// The field of each key path a query may test on record bytes: not a constant with an initial value, which is
    /// stored but never read back, so the value a query sees is the constant, whatever the record holds.
    private static func fieldLookup(_ properties: [StoredProperty], _ access: String) -> String {
        var lines = ["    \(access)static func recordField(for keyPath: PartialKeyPath<Self>) -> Int? {"]
        for (number, property) in properties.enumerated() where property.isDecoded {
            lines.append("        if keyPath == \\Self.\(escaped(property.name)) { return \(number) }")
        }
        lines.append("        return nil")
        lines.append("    }")
        return lines.joined(separator: "\n")
    }

    /// A name as an identifier: keywords such as `default` need backticks.
    private static func escaped(_ name: String) -> String {
        keywords.contains(name) ? "`\(name)`" : name
    }

    private static let keywords: Set<String> = [
        "default", "case", "switch", "class", "struct", "enum", "protocol", "extension", "func", "var", "let", "if",
        "else", "for", "while", "repeat", "return", "break", "continue", "in", "is", "as", "try", "throw", "throws",
        "import", "init", "deinit", "self", "Self", "super", "true", "false", "nil", "operator", "where", "guard",
        "defer", "do", "catch", "static", "public", "private", "internal", "fileprivate", "subscript", "typealias",
        "associatedtype", "inout", "fallthrough", "rethrows", "any", "some",
    ]

    /// The access the generated members need: that of the type, so a public model's conformance is public.
    private static func accessModifier(of decl: StructDeclSyntax) -> String {
        for modifier in decl.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }

    private static func kind(of declaration: some DeclGroupSyntax) -> String {
        if declaration.is(ClassDeclSyntax.self) { return "class" }
        if declaration.is(EnumDeclSyntax.self) { return "enum" }
        if declaration.is(ActorDeclSyntax.self) { return "actor" }
        if declaration.is(ProtocolDeclSyntax.self) { return "protocol" }
        return "extension"
    }
}
