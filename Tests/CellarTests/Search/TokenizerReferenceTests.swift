import Foundation
import Testing

@testable import Cellar

/// The tokenizer reads UTF-8 bytes with an ASCII fast path; this reference reads the same text scalar by scalar, the
/// plainest way the rules can be written, and every random text must give both the same tokens.
@Suite("Search: the tokenizer against a scalar-by-scalar reference")
struct TokenizerReferenceTests {
    struct Token: Equatable, CustomStringConvertible {
        var term: [UInt8]
        var position: Int
        var utf8Range: Range<Int>
        var kind: TextTokenizer.Kind
        var description: String {
            "\(String(decoding: term, as: UTF8.self))@\(position)[\(utf8Range)]\(kind)"
        }
    }

    /// The rules of `TextTokenizer`, one scalar at a time.
    static func reference(_ text: String) -> [Token] {
        var tokens: [Token] = []
        var word: [Unicode.Scalar] = []
        var wordStart: Int?
        var run: [(scalars: [Unicode.Scalar], start: Int)] = []
        var runEnd = 0
        func add(_ term: [UInt8], _ range: Range<Int>, _ kind: TextTokenizer.Kind) {
            tokens.append(Token(term: term, position: tokens.count, utf8Range: range, kind: kind))
        }
        func endWord(_ end: Int) {
            if let start = wordStart {
                var term: [UInt8] = []
                TextTokenizer.fold(word, into: &term)
                if !term.isEmpty { add(term, start..<end, .word) }
            }
            wordStart = nil
            word = []
        }
        func endRun() {
            let characters = run.map { TextTokenizer.unspaced($0.scalars) }
            if run.count == 1 { add(characters[0], run[0].start..<runEnd, .single) }
            if run.count > 1 {
                for offset in 0..<run.count - 1 {
                    let end = offset + 2 < run.count ? run[offset + 2].start : runEnd
                    add(characters[offset] + characters[offset + 1], run[offset].start..<end, .pair)
                }
                add(characters[run.count - 1], run[run.count - 1].start..<runEnd, .runEnd)
            }
            run = []
        }
        var offset = 0
        for scalar in text.unicodeScalars {
            let next = offset + UTF8.width(scalar)
            let kind: TextTokenizer.Class =
                scalar.isASCII
                ? (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) ? .word : .separator)
                : TextTokenizer.classify(scalar)
            switch kind {
            case .word:
                endRun()
                if wordStart == nil { wordStart = offset }
                word.append(scalar)
            case .mark:
                if wordStart != nil {
                    word.append(scalar)
                } else if !run.isEmpty {
                    run[run.count - 1].scalars.append(scalar)
                    runEnd = next
                }
            case .unspaced:
                endWord(offset)
                run.append(([scalar], offset))
                runEnd = next
            case .emoji:
                endWord(offset)
                endRun()
                add(Array(String(scalar).utf8), offset..<next, .word)
            case .ignorable:
                break
            case .separator:
                endWord(offset)
                endRun()
            }
            offset = next
        }
        endWord(offset)
        endRun()
        return tokens
    }

    static func tokens(_ text: String) -> [Token] {
        TextTokenizer.tokens(text).map {
            Token(term: $0.term, position: $0.position, utf8Range: $0.utf8Range, kind: $0.kind)
        }
    }

    /// The pieces random texts are made of: ASCII words in both cases, digits, punctuation, accented letters composed
    /// and decomposed, soft hyphens and joiners inside words, kana with voicing marks, Hangul jamo, Han, Thai,
    /// emoji with modifiers, and marks with nothing before them.
    static let pieces = [
        "dog", "PARK", "Café", "e\u{301}", "naïve", "3", "14", "-", " ", ".", ", ", "'", "\n", "co\u{AD}op",
        "x\u{200D}y",
        "東京", "都", "か\u{3099}", "ガ", "ー", "\u{1112}\u{1161}\u{11AB}", "한글", "ภาษา", "🍕", "👍🏽", "👨‍👩‍👧", "❤️",
        "\u{301}", "\u{3099}", "ß", "İ", "Ω", "٣", "ǅ", "\u{FE0F}", "ｶﾞ",
    ]

    @Test(arguments: 1...6 as ClosedRange<UInt64>)
    func randomTextsGiveTheReferencesTokens(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        for _ in 0..<400 {
            let count = Int.random(in: 0...14, using: &random)
            let text = (0..<count).map { _ in Self.pieces.randomElement(using: &random) ?? "" }.joined()
            let expected = Self.reference(text)
            #expect(Self.tokens(text) == expected, "\(text.debugDescription)")
        }
    }

    @Test func aSoftHyphenInsideAnASCIIWordIsLeftOut() {
        #expect(TextTokenizer.terms("co\u{AD}operate") == [Array("cooperate".utf8)])
        #expect(TextTokenizer.terms("CO\u{AD}OP\u{AD}é") == [Array("coope".utf8)])
    }
}
