import Foundation
import Testing

@testable import Cellar

@Suite("Search: words and queries")
struct TokenizerTests {
    func terms(_ text: String) -> [String] { TextTokenizer.terms(text).map { String(decoding: $0, as: UTF8.self) } }

    @Test func wordsAreFoldedForCaseAndDiacritics() {
        #expect(terms("Café au LAIT, naïve résumé!") == ["cafe", "au", "lait", "naive", "resume"])
        // Composed and decomposed forms are the same word.
        #expect(terms("Cafe\u{301}") == terms("Caf\u{E9}"))
        #expect(terms("STRASSE straße") == ["strasse", "strasse"])
    }

    @Test func punctuationSeparatesWordsAsFTS5Does() {
        #expect(
            terms("don't e-mail me@example.com 3.14") == ["don", "t", "e", "mail", "me", "example", "com", "3", "14"])
        #expect(terms("  \n\t ").isEmpty)
        #expect(terms("").isEmpty)
    }

    @Test func scriptsWithoutSpacesArePairsAndTheirLastCharacter() {
        #expect(terms("東京都") == ["東京", "京都", "都"])
        #expect(terms("猫") == ["猫"])
        #expect(terms("東京Tower") == ["東京", "京", "tower"])
        #expect(terms("학교에 갔다") == ["학교", "교에", "에", "갔다", "다"])
        // A voiced kana is not folded into its unvoiced one.
        #expect(terms("がっこう") != terms("かっこう"))
        // Decomposed kana (a base and U+3099) is the composed one.
        #expect(terms("か\u{3099}") == terms("が"))
        #expect(terms("\u{1112}\u{1161}\u{11AB}\u{1100}\u{1173}\u{11AF}") == terms("한글"))
    }

    @Test func emojiAreWordsWithoutModifiersAndJoiners() {
        #expect(terms("pizza🍕night") == ["pizza", "🍕", "night"])
        #expect(terms("👍🏽") == ["👍"])
        #expect(terms("👨‍👩‍👧") == ["👨", "👩", "👧"])
        #expect(terms("❤️ it") == ["❤", "it"])
    }

    @Test func positionsCountTermsAndRangesPointIntoTheText() {
        let text = "Hello, Wörld 東京"
        let tokens = TextTokenizer.tokens(text)
        #expect(tokens.map(\.position) == [0, 1, 2, 3])
        #expect(tokens.map { String(text[$0.range(in: text)]) } == ["Hello", "Wörld", "東京", "京"])
    }

    @Test func aVeryLongWordIsCutAtACharacterBoundary() {
        let word = String(repeating: "é", count: 200)
        let term = TextTokenizer.terms(word)[0]
        #expect(term.count <= TextTokenizer.maxTermBytes)
        #expect(String(validating: term, as: UTF8.self) != nil)
    }

    @Test func queriesReadAsFTS5Reads() {
        func shape(_ text: String) -> String {
            func describe(_ node: SearchQuery.Node) -> String {
                switch node {
                case .phrase(let phrase):
                    let words = phrase.terms.map {
                        String(decoding: $0.bytes, as: UTF8.self) + ($0.isPrefix ? "*" : "") + "@\($0.offset)"
                    }
                    return words.count == 1 ? words[0] : "\"" + words.joined(separator: " ") + "\""
                case .and(let nodes): return "AND(" + nodes.map(describe).joined(separator: ", ") + ")"
                case .or(let nodes): return "OR(" + nodes.map(describe).joined(separator: ", ") + ")"
                case .not(let kept, let excluded): return "NOT(" + describe(kept) + ", " + describe(excluded) + ")"
                }
            }
            return SearchQuery(text).root.map(describe) ?? "nothing"
        }
        #expect(shape("dog park") == "AND(dog@0, park@0)")
        #expect(shape("\"Dog Park\"") == "\"dog@0 park@1\"")
        #expect(shape("par*") == "par*@0")
        #expect(shape("\"dog par\"*") == "\"dog@0 par*@1\"")
        #expect(shape("cat OR dog vet") == "OR(cat@0, AND(dog@0, vet@0))")
        #expect(shape("(cat OR dog) NOT vet") == "NOT(OR(cat@0, dog@0), vet@0)")
        #expect(shape("a AND b") == "AND(a@0, b@0)")
        // Nothing is a syntax error.
        #expect(shape("\"open phrase") == "\"open@0 phrase@1\"")
        #expect(shape("((dog") == "dog@0")
        #expect(shape("dog) OR") == "dog@0")
        #expect(shape("NOT dog") == "nothing")
        #expect(shape("dog AND NOT cat") == "NOT(dog@0, cat@0)")
        #expect(shape("dog OR NOT cat") == "dog@0")
        #expect(shape("a b NOT c") == "AND(a@0, NOT(b@0, c@0))")
        #expect(shape("\"\" () *") == "nothing")
        #expect(shape("") == "nothing")
        // Words of scripts without spaces: pairs at their places, one character a prefix.
        #expect(shape("東京都") == "\"東京@0 京都@1\"")
        #expect(shape("猫") == "猫*@0")
        #expect(shape("e-mail") == "\"e@0 mail@1\"")
    }
}
