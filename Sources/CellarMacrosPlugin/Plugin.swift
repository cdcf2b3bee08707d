import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct CellarMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [RecordMacro.self]
}
