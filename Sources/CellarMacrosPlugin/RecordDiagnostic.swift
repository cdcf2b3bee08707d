import SwiftDiagnostics

/// What `@Record` refuses, in the words of the code the user wrote, with what to do instead.
enum RecordDiagnostic: DiagnosticMessage {
    case notAStruct(kind: String)
    case generic
    case customCodingKeys
    case customDecoding
    case customEncoding
    case propertyWrapper(property: String, wrapper: String)
    case lazyProperty(property: String)
    case destructuring
    case conditionalMembers

    var message: String {
        switch self {
        case .notAStruct(let kind):
            "@Record applies to structs; this \(kind) keeps working through Codable without it"
        case .generic:
            "@Record does not support generic types; without @Record this type keeps working through Codable"
        case .customCodingKeys:
            "@Record cannot follow a custom 'CodingKeys': its generated code stores each property under its own "
                + "name; remove @Record (the type keeps working through Codable) or the custom keys"
        case .customDecoding:
            "@Record cannot follow a custom 'init(from:)': its generated code would read records differently; "
                + "remove @Record (the type keeps working through Codable) or the custom initializer"
        case .customEncoding:
            "@Record cannot follow a custom 'encode(to:)': its generated code would write records differently; "
                + "remove @Record (the type keeps working through Codable) or the custom method"
        case .propertyWrapper(let property, let wrapper):
            "'\(property)' is wrapped in '@\(wrapper)', which @Record cannot read or write; store the value "
                + "itself, or remove @Record (the type keeps working through Codable)"
        case .lazyProperty(let property):
            "'\(property)' is lazy, which Codable cannot store either; make it a plain stored property or a "
                + "computed one"
        case .destructuring:
            "@Record needs one name per stored property; declare each property on its own"
        case .conditionalMembers:
            "@Record cannot see which side of '#if' a build compiles, so it cannot store the properties or coding "
                + "members declared inside; declare them outside '#if', or remove @Record (the type keeps working "
                + "through Codable)"
        }
    }

    var diagnosticID: MessageID {
        let id: String =
            switch self {
            case .notAStruct: "notAStruct"
            case .generic: "generic"
            case .customCodingKeys: "customCodingKeys"
            case .customDecoding: "customDecoding"
            case .customEncoding: "customEncoding"
            case .propertyWrapper: "propertyWrapper"
            case .lazyProperty: "lazyProperty"
            case .destructuring: "destructuring"
            case .conditionalMembers: "conditionalMembers"
            }
        return MessageID(domain: "CellarMacros", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
