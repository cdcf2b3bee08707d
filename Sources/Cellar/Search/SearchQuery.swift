/// A search as `.matches` reads it, in the syntax of SQLite's FTS5 queries:
///
/// - words: `dog park` finds the texts holding both words, anywhere (an implicit `AND`);
/// - a phrase: `"dog park"` finds the words one right after the other;
/// - a prefix: `par*` finds park, party, parsley (and `"dog par*"`, a phrase ending in one);
/// - `AND`, `OR`, `NOT` in capitals, and parentheses: `(cat OR dog) NOT vet`. `NOT` binds tightest, then `AND`,
///   then `OR`, as in FTS5.
///
/// Unlike FTS5, nothing a user types is a syntax error: a quote or parenthesis left open is closed at the end, one
/// never opened is ignored, and an operator with nothing on one side stands for nothing. A search box can hand over
/// what it holds. A query with no words at all matches nothing.
struct SearchQuery: Sendable, Hashable {
    indirect enum Node: Sendable, Hashable {
        case phrase(Phrase)
        case and([Node])
        case or([Node])
        /// The first holds and the second does not.
        case not(Node, Node)
    }

    /// Terms at fixed distances from the first: one word, or words that must follow each other.
    struct Phrase: Sendable, Hashable {
        var terms: [Term]
    }

    struct Term: Sendable, Hashable {
        var bytes: [UInt8]
        /// The term's position after the phrase's first.
        var offset: Int
        /// Whether every term that starts with `bytes` matches.
        var isPrefix: Bool
    }

    /// What the query looks for; `nil` when it holds no words.
    let root: Node?
    /// The query as written.
    let text: String

    init(_ text: String) {
        self.text = text
        var parser = Parser(lexemes: Self.lex(text))
        root = parser.parseOr()
    }

    /// Every phrase of the query, in the order written (the leaves BM25 sums over).
    var phrases: [Phrase] {
        var found: [Phrase] = []
        func collect(_ node: Node) {
            switch node {
            case .phrase(let phrase): found.append(phrase)
            case .and(let nodes), .or(let nodes): nodes.forEach(collect)
            case .not(let lhs, let rhs):
                collect(lhs)
                collect(rhs)
            }
        }
        root.map(collect)
        return found
    }

    // MARK: Reading the text

    private enum Lexeme: Equatable {
        case phrase(Phrase)
        case and, or, not, open, close
    }

    private static func lex(_ text: String) -> [Lexeme] {
        var lexemes: [Lexeme] = []
        var index = text.startIndex
        func isBreak(_ character: Character) -> Bool {
            character.isWhitespace || character == "\"" || character == "(" || character == ")"
        }
        while index < text.endIndex {
            let character = text[index]
            if character.isWhitespace {
                index = text.index(after: index)
            } else if character == "(" {
                lexemes.append(.open)
                index = text.index(after: index)
            } else if character == ")" {
                lexemes.append(.close)
                index = text.index(after: index)
            } else if character == "\"" {
                let start = text.index(after: index)
                let end = text[start...].firstIndex(of: "\"") ?? text.endIndex
                var content = text[start..<end]
                index = end < text.endIndex ? text.index(after: end) : end
                // `"dog par"*` and `"dog par*"` both end in a prefix.
                var prefix = false
                if index < text.endIndex, text[index] == "*" {
                    prefix = true
                    index = text.index(after: index)
                }
                if content.hasSuffix("*") {
                    prefix = true
                    content = content.dropLast()
                }
                if let phrase = phrase(String(content), prefix: prefix) { lexemes.append(.phrase(phrase)) }
            } else {
                let end = text[index...].firstIndex(where: isBreak) ?? text.endIndex
                let word = text[index..<end]
                index = end
                switch word {
                case "AND": lexemes.append(.and)
                case "OR": lexemes.append(.or)
                case "NOT": lexemes.append(.not)
                default:
                    let prefix = word.hasSuffix("*")
                    if let phrase = phrase(String(prefix ? word.dropLast() : word), prefix: prefix) {
                        lexemes.append(.phrase(phrase))
                    }
                }
            }
        }
        return lexemes
    }

    /// The phrase of `text`'s terms, the last a prefix when `prefix` says so; `nil` when it has none.
    ///
    /// A run of a script without spaces searched for is its pairs: the character alone at its end, which documents
    /// hold too, adds nothing the pairs do not say; a run of one character is a prefix of the pairs.
    private static func phrase(_ text: String, prefix: Bool) -> Phrase? {
        let tokens = TextTokenizer.tokens(text).filter { $0.kind != .runEnd }
        guard let first = tokens.first else { return nil }
        let terms = tokens.enumerated().map { number, token in
            Term(
                bytes: token.term, offset: token.position - first.position,
                isPrefix: token.kind == .single || (prefix && number == tokens.count - 1))
        }
        return Phrase(terms: terms)
    }

    /// Reads `or := and (OR and)*`, `and := not (AND? not)*`, `not := primary (NOT primary)*`, `primary := phrase |
    /// ( or )`, skipping what does not fit.
    private struct Parser {
        let lexemes: [Lexeme]
        var position = 0

        init(lexemes: [Lexeme]) { self.lexemes = lexemes }

        var next: Lexeme? { position < lexemes.count ? lexemes[position] : nil }

        mutating func parseOr() -> Node? {
            var nodes: [Node] = []
            while position < lexemes.count {
                if let node = parseAnd() { nodes.append(node) }
                if next == .or {
                    position += 1
                } else if next == .close, depth > 0 {
                    break
                } else if next == .close {
                    position += 1  // a parenthesis never opened
                } else if next == nil {
                    break
                }
            }
            return nodes.count > 1 ? .or(nodes) : nodes.first
        }

        var depth = 0

        mutating func parseAnd() -> Node? {
            var nodes: [Node] = []
            while let lexeme = next, lexeme != .or, lexeme != .close {
                if lexeme == .and {
                    position += 1
                    continue
                }
                if lexeme == .not {
                    // `dog AND NOT cat` takes cat from what came before; `NOT cat` with nothing before stands for
                    // nothing.
                    position += 1
                    guard let excluded = parsePrimary() else { continue }
                    if let kept = nodes.popLast() { nodes.append(.not(kept, excluded)) }
                    continue
                }
                if let node = parseNot() { nodes.append(node) }
            }
            return nodes.count > 1 ? .and(nodes) : nodes.first
        }

        mutating func parseNot() -> Node? {
            var node = parsePrimary()
            while next == .not {
                position += 1
                guard let excluded = parsePrimary() else { continue }
                // `NOT x` with nothing before it stands for nothing: there is nothing to take x from.
                node = node.map { .not($0, excluded) }
            }
            return node
        }

        mutating func parsePrimary() -> Node? {
            guard let lexeme = next else { return nil }
            switch lexeme {
            case .phrase(let phrase):
                position += 1
                return .phrase(phrase)
            case .open:
                position += 1
                depth += 1
                let inner = parseOr()
                depth -= 1
                if next == .close { position += 1 }
                return inner
            case .and, .not:
                position += 1  // an operator with nothing before it
                return nil
            case .or, .close:
                return nil
            }
        }
    }
}
