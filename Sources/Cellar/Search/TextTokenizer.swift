import Foundation

/// Splits text into the terms a full-text index stores and a search looks for.
///
/// Words are runs of letters, digits and the marks on them (as SQLite FTS5's `unicode61` tokenizer splits text):
/// every other character separates words, so "don't" is "don" and "t", and "e-mail" is "e" and "mail", in documents
/// and queries alike. Each word is folded as `.caseInsensitive` and `.diacriticInsensitive` conditions fold text, so
/// "Café" is stored, and found, as "cafe".
///
/// Scripts written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar) are cut
/// into overlapping pairs of characters: "東京都" is "東京" and "京都", and its last character alone, "都". A search for
/// any part of the run two characters or longer is then a phrase of consecutive pairs, and finds exactly the runs that
/// hold it; a single character is a prefix of the pairs and matches the last one. Pairs need no dictionary, take the
/// same time for every language, and never split a name a dictionary does not know; what they cost is more terms than
/// words (about one a character), and "京都" is found inside "東京都", as a substring search would find it. Folding
/// leaves these scripts as they are: a voiced kana (が) is not its unvoiced one (か).
///
/// Emoji are terms of their own ("🍕"), without their skin-tone modifiers and joiners.
enum TextTokenizer {
    /// The folding of every word, the one `.caseInsensitive` and `.diacriticInsensitive` conditions use.
    static let folding: String.CompareOptions = [.caseInsensitive, .diacriticInsensitive]
    /// The longest term kept, in bytes of folded UTF-8: a longer word is cut at a character's boundary.
    static let maxTermBytes = 120

    /// How a term was made.
    enum Kind: Equatable {
        /// A word of letters and digits, or an emoji.
        case word
        /// Two characters of a run of a script written without spaces.
        case pair
        /// The last character of such a run of two or more, alone: found by a search for that character.
        case runEnd
        /// The only character of such a run.
        case single
    }

    /// One term of a text: its folded UTF-8, its position (the count of terms before it) and where it lies in the
    /// text.
    struct Token {
        var term: [UInt8]
        var position: Int
        var range: Range<String.Index>
        var kind: Kind
    }

    /// The tokens of `text`, in order.
    static func tokens(_ text: String) -> [Token] {
        var tokens: [Token] = []
        forEachToken(in: text) { tokens.append($0) }
        return tokens
    }

    /// The terms of `text`, in order.
    static func terms(_ text: String) -> [[UInt8]] { tokens(text).map(\.term) }

    private enum Class {
        case word, mark, unspaced, emoji, ignorable, separator
    }

    private static func classify(_ scalar: Unicode.Scalar) -> Class {
        let value = scalar.value
        if value < 0x80 {
            switch value {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return .word
            default: return .separator
            }
        }
        // The voicing marks of kana, and the vowels and final consonants of decomposed Hangul, belong to the
        // character before them: composed with it, "か" and U+3099 are "が", and the jamo of "한" are "한".
        if (0x3099...0x309A).contains(value) || (0x1160...0x11FF).contains(value) || (0xD7B0...0xD7FF).contains(value) {
            return .mark
        }
        if isUnspaced(value) { return .unspaced }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .decimalNumber, .letterNumber, .otherNumber:
            return .word
        case .nonspacingMark, .spacingMark, .enclosingMark:
            // Variation selectors (U+FE0F after an emoji) are marks too: they join nothing.
            return (0xFE00...0xFE0F).contains(value) ? .ignorable : .mark
        case .format:
            return .ignorable  // a zero-width joiner inside an emoji sequence, a soft hyphen
        case .otherSymbol, .modifierSymbol:
            if properties.isEmojiModifier { return .ignorable }
            return properties.isEmoji ? .emoji : .separator
        default:
            return .separator
        }
    }

    /// Whether a character belongs to a script written without spaces between words.
    private static func isUnspaced(_ value: UInt32) -> Bool {
        switch value {
        case 0x0E00...0x0EFF,  // Thai, Lao
            0x1000...0x109F,  // Myanmar
            0x1100...0x11FF,  // Hangul Jamo
            0x1780...0x17FF,  // Khmer
            0x3005...0x3007,  // 々 〆 〇
            0x3041...0x30FF,  // Hiragana, Katakana (with ー)
            0x3131...0x318F,  // Hangul compatibility Jamo
            0x31F0...0x31FF,  // Katakana phonetic extensions
            0x3400...0x4DBF,  // CJK extension A
            0x4E00...0x9FFF,  // CJK unified ideographs
            0xA960...0xA97F,  // Hangul Jamo extended A
            0xAC00...0xD7FF,  // Hangul syllables, Jamo extended B
            0xF900...0xFAFF,  // CJK compatibility ideographs
            0xFF66...0xFFDC,  // half-width Katakana and Hangul
            0x20000...0x3134F:  // CJK extensions B–G
            return true
        default:
            return false
        }
    }

    /// Calls `body` with each token of `text`, in order.
    static func forEachToken(in text: String, _ body: (Token) throws -> Void) rethrows {
        let scalars = text.unicodeScalars
        var position = 0
        // The word being read: where it starts, its scalars, and whether they are all ASCII.
        var wordStart: String.Index?
        var word: [Unicode.Scalar] = []
        var wordIsASCII = true
        // The run of a script without spaces: each character's scalars and where it starts.
        var run: [(scalars: [Unicode.Scalar], start: String.Index)] = []
        var runEnd = scalars.startIndex
        // The term of a word, in one buffer from word to word: a consumer that does not keep it makes no copy.
        var term: [UInt8] = []

        func endWord(at end: String.Index) throws {
            defer {
                wordStart = nil
                word.removeAll(keepingCapacity: true)
                wordIsASCII = true
            }
            guard let start = wordStart else { return }
            fold(word, isASCII: wordIsASCII, into: &term)
            guard !term.isEmpty else { return }
            try body(Token(term: term, position: position, range: start..<end, kind: .word))
            position += 1
        }

        func endRun() throws {
            defer { run.removeAll(keepingCapacity: true) }
            guard !run.isEmpty else { return }
            let characters = run.map { unspaced($0.scalars) }
            if run.count == 1 {
                try body(Token(term: characters[0], position: position, range: run[0].start..<runEnd, kind: .single))
                position += 1
                return
            }
            for offset in 0..<run.count - 1 {
                let end = offset + 2 < run.count ? run[offset + 2].start : runEnd
                try body(
                    Token(
                        term: characters[offset] + characters[offset + 1], position: position,
                        range: run[offset].start..<end, kind: .pair))
                position += 1
            }
            let last = run.count - 1
            try body(Token(term: characters[last], position: position, range: run[last].start..<runEnd, kind: .runEnd))
            position += 1
        }

        var index = scalars.startIndex
        while index < scalars.endIndex {
            let scalar = scalars[index]
            let next = scalars.index(after: index)
            switch classify(scalar) {
            case .word:
                try endRun()
                if wordStart == nil { wordStart = index }
                word.append(scalar)
                if scalar.value >= 0x80 { wordIsASCII = false }
            case .mark:
                if wordStart != nil {
                    word.append(scalar)
                    wordIsASCII = false
                } else if !run.isEmpty {
                    run[run.count - 1].scalars.append(scalar)
                    runEnd = next
                }
            case .unspaced:
                try endWord(at: index)
                run.append(([scalar], index))
                runEnd = next
            case .emoji:
                try endWord(at: index)
                try endRun()
                try body(
                    Token(term: Array(String(scalar).utf8), position: position, range: index..<next, kind: .word))
                position += 1
            case .ignorable:
                break
            case .separator:
                try endWord(at: index)
                try endRun()
            }
            index = next
        }
        try endWord(at: scalars.endIndex)
        try endRun()
    }

    /// A word's term, in `term`: ASCII lowercased; anything else folded as `folding` says, in composed form (NFC),
    /// so that the same word typed either way has the same bytes. Cut to `maxTermBytes`; empty when nothing is left.
    private static func fold(_ word: [Unicode.Scalar], isASCII: Bool, into term: inout [UInt8]) {
        term.removeAll(keepingCapacity: true)
        if isASCII {
            for scalar in word {
                let byte = UInt8(truncatingIfNeeded: scalar.value)
                term.append((0x41...0x5A).contains(byte) ? byte | 0x20 : byte)
            }
        } else {
            var text = String.UnicodeScalarView()
            text.append(contentsOf: word)
            let folded = String(text).folding(options: folding, locale: nil)
            term.append(contentsOf: folded.precomposedStringWithCanonicalMapping.utf8)
        }
        cut(&term)
    }

    /// A character of a script without spaces, composed (NFC) when it carries a mark, and not folded.
    private static func unspaced(_ scalars: [Unicode.Scalar]) -> [UInt8] {
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars)
        let character = String(text)
        return Array((scalars.count > 1 ? character.precomposedStringWithCanonicalMapping : character).utf8)
    }

    /// Cuts `term` to at most `maxTermBytes`, at the start of a UTF-8 character.
    private static func cut(_ term: inout [UInt8]) {
        guard term.count > maxTermBytes else { return }
        var end = maxTermBytes
        while end > 0, term[end] & 0xC0 == 0x80 { end -= 1 }
        term.removeSubrange(end...)
    }
}
