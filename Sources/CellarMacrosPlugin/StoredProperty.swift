import SwiftDiagnostics
import SwiftSyntax

/// A stored property as synthesized `Codable` sees it: its key is its name, and a `let` with an initial value is
/// written but never read back.
struct StoredProperty {
    let name: String
    /// The type as written; `nil` only for a `let` with an initial value, which is never read.
    let type: TypeSyntax?
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
            // `var a, b: Int` gives both names the type written last.
            let type = binding.typeAnnotation?.type ?? typeOfLaterBinding(after: binding, in: variable)
            let isDecoded = !(isLet && binding.initializer != nil)
            if type == nil, isDecoded {
                problems.append(missingType(binding, identifier: identifier, name: name))
                continue
            }
            properties.append(StoredProperty(name: name, type: type?.trimmed, isDecoded: isDecoded))
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

    private static func typeOfLaterBinding(after binding: PatternBindingSyntax, in variable: VariableDeclSyntax)
        -> TypeSyntax?
    {
        guard binding.initializer == nil else { return nil }
        var reached = false
        for other in variable.bindings {
            if other.id == binding.id {
                reached = true
            } else if reached, let type = other.typeAnnotation?.type {
                return type
            }
        }
        return nil
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

extension StoredProperty {
    /// The refusal of a stored property without a written type; when its initial value's type is plain from the
    /// literal (`false`, `0`, `""`, `[1, 2]`, `Date()`), it names that type and offers a fix-it that writes it.
    static func missingType(_ binding: PatternBindingSyntax, identifier: IdentifierPatternSyntax, name: String)
        -> Diagnostic
    {
        let inferred = binding.initializer.flatMap { literalType(of: $0.value) }
        let message = RecordDiagnostic.missingType(property: name, inferred: inferred)
        guard let inferred else { return Diagnostic(node: identifier, message: message) }
        var typed = binding
        typed.pattern = PatternSyntax(identifier.with(\.trailingTrivia, []))
        typed.typeAnnotation = TypeAnnotationSyntax(
            colon: .colonToken(trailingTrivia: .space), type: TypeSyntax(stringLiteral: inferred),
            trailingTrivia: .space)
        return Diagnostic(
            node: identifier, message: message,
            fixIt: FixIt(
                message: AddTypeFixIt(property: name, type: inferred),
                changes: [.replace(oldNode: Syntax(binding), newNode: Syntax(typed))]))
    }

    /// The type Swift infers for a literal, or for a call of a type's initializer, as written; `nil` otherwise.
    private static func literalType(of expression: ExprSyntax) -> String? {
        if expression.is(BooleanLiteralExprSyntax.self) { return "Bool" }
        if expression.is(IntegerLiteralExprSyntax.self) { return "Int" }
        if expression.is(FloatLiteralExprSyntax.self) { return "Double" }
        if expression.is(StringLiteralExprSyntax.self) { return "String" }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-" {
            return literalType(of: prefix.expression).flatMap { ["Int", "Double"].contains($0) ? $0 : nil }
        }
        if let array = expression.as(ArrayExprSyntax.self), let first = array.elements.first {
            let types = Set(array.elements.map { literalType(of: $0.expression) })
            guard types.count == 1, let element = literalType(of: first.expression) else { return nil }
            return "[\(element)]"
        }
        if let call = expression.as(FunctionCallExprSyntax.self), call.trailingClosure == nil {
            let callee = call.calledExpression.trimmedDescription
            let isTypeName = callee.split(separator: ".").allSatisfy { $0.first?.isUppercase == true }
            return isTypeName && !callee.isEmpty ? callee : nil
        }
        return nil
    }
}
