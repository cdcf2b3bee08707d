import SwiftDiagnostics
import SwiftSyntax

/// A stored property as synthesized `Codable` sees it: its key is its name, and a `let` with an initial value is
/// written but never read back.
///
/// The generated code never names a property's type: the type Swift gives the property (written, or inferred from its
/// initial value, as in `var done = false`) picks the reading call, so a type nested in an enclosing one, or one a
/// file-level name of the same spelling would shadow in an extension, is the property's own.
struct StoredProperty {
    let name: String
    let isDecoded: Bool
}

extension StoredProperty {
    /// The stored properties of `members` in declaration order (the order synthesized `Codable` writes them), or
    /// the diagnostics that explain why the type cannot have generated code.
    static func all(in members: MemberBlockSyntax) -> (properties: [StoredProperty], problems: [Diagnostic]) {
        var properties: [StoredProperty] = []
        var problems: [Diagnostic] = []
        for member in members.members {
            let decl = member.decl
            if let variable = decl.as(VariableDeclSyntax.self) {
                read(variable, into: &properties, problems: &problems)
            } else if let nested = decl.as(EnumDeclSyntax.self), nested.name.text == "CodingKeys" {
                problems.append(Diagnostic(node: nested.name, message: RecordDiagnostic.customCodingKeys))
            } else if let initializer = decl.as(InitializerDeclSyntax.self), isInitFromDecoder(initializer) {
                problems.append(Diagnostic(node: initializer.initKeyword, message: RecordDiagnostic.customDecoding))
            } else if let function = decl.as(FunctionDeclSyntax.self), isEncodeToEncoder(function) {
                problems.append(Diagnostic(node: function.name, message: RecordDiagnostic.customEncoding))
            } else if let conditional = decl.as(IfConfigDeclSyntax.self), holdsCodingMembers(conditional) {
                problems.append(Diagnostic(node: conditional, message: RecordDiagnostic.conditionalMembers))
            }
        }
        return (properties, problems)
    }

    /// Whether a `#if` block declares, in any of its branches, a stored property or a member that changes what
    /// `Codable` stores: which branch a build compiles is not known to a macro.
    private static func holdsCodingMembers(_ conditional: IfConfigDeclSyntax) -> Bool {
        for clause in conditional.clauses {
            guard case .decls(let members) = clause.elements else { continue }
            let block = MemberBlockSyntax(members: members)
            let (properties, problems) = all(in: block)
            if !properties.isEmpty || !problems.isEmpty { return true }
        }
        return false
    }

    private static func read(
        _ variable: VariableDeclSyntax, into properties: inout [StoredProperty], problems: inout [Diagnostic]
    ) {
        let modifiers = Set(variable.modifiers.map(\.name.text))
        guard modifiers.isDisjoint(with: ["static", "class"]) else { return }
        let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
        for binding in variable.bindings {
            guard isStored(binding) else { continue }
            guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else {
                problems.append(Diagnostic(node: binding.pattern, message: RecordDiagnostic.destructuring))
                continue
            }
            let name = identifier.identifier.identifier?.name ?? identifier.identifier.text
            if let wrapper = variable.attributes.first?.as(AttributeSyntax.self) {
                problems.append(
                    Diagnostic(
                        node: wrapper,
                        message: RecordDiagnostic.propertyWrapper(
                            property: name, wrapper: wrapper.attributeName.trimmedDescription)))
                continue
            }
            if modifiers.contains("lazy") {
                problems.append(Diagnostic(node: identifier, message: RecordDiagnostic.lazyProperty(property: name)))
                continue
            }
            properties.append(StoredProperty(name: name, isDecoded: !(isLet && binding.initializer != nil)))
        }
    }

    /// Whether a binding stores its value: no accessors, or only observers.
    private static func isStored(_ binding: PatternBindingSyntax) -> Bool {
        guard let accessors = binding.accessorBlock?.accessors else { return true }
        switch accessors {
        case .getter: return false
        case .accessors(let list):
            return list.allSatisfy { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }
        }
    }

    private static func isInitFromDecoder(_ initializer: InitializerDeclSyntax) -> Bool {
        let parameters = initializer.signature.parameterClause.parameters
        return parameters.count == 1 && parameters.first?.firstName.text == "from"
    }

    private static func isEncodeToEncoder(_ function: FunctionDeclSyntax) -> Bool {
        let parameters = function.signature.parameterClause.parameters
        return function.name.text == "encode" && parameters.count == 1 && parameters.first?.firstName.text == "to"
    }
}
