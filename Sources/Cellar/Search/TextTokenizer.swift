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
    /// text, in bytes of its UTF-8.
    struct Token {
        var term: [UInt8]
        var position: Int
        var utf8Range: Range<Int>
        var kind: Kind

        /// Where the token lies in `text`, the text it was read from.
        func range(in text: String) -> Range<String.Index> {
            let utf8 = text.utf8
            return utf8.index(
                utf8.startIndex, offsetBy: utf8Range.lowerBound)..<utf8.index(
                    utf8.startIndex, offsetBy: utf8Range.upperBound)
        }
    }

    /// The tokens of `text`, in order.
    static func tokens(_ text: String) -> [Token] {
        var tokens: [Token] = []
        forEachToken(in: text) { tokens.append($0) }
        return tokens
    }

    /// The terms of `text`, in order.
    static func terms(_ text: String) -> [[UInt8]] { tokens(text).map(\.term) }

    enum Class {
        case word, mark, unspaced, emoji, ignorable, separator
    }

    /// The class of a scalar that is not ASCII (ASCII is read by `isASCIIWordByte`).
    static func classify(_ scalar: Unicode.Scalar) -> Class {
        let value = scalar.value
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
        if try text.utf8.withContiguousStorageIfAvailable({ try forEachToken(utf8: $0, body) }) != nil { return }
        var native = text
        native.makeContiguousUTF8()
        _ = try native.utf8.withContiguousStorageIfAvailable { try forEachToken(utf8: $0, body) }
    }

    /// Reads the UTF-8 of a text byte by byte: ASCII, most of most texts, is classified and lowercased as it is read;
    /// other characters are decoded to their scalars.
    private static func forEachToken(utf8 bytes: UnsafeBufferPointer<UInt8>, _ body: (Token) throws -> Void) rethrows {
        var reader = Reader(bytes: bytes)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                if isASCIIWordByte(byte) {
                    try reader.endRun(body)
                    if reader.wordStart < 0 { reader.wordStart = index }
                    if reader.wordIsASCII {
                        // The rest of an ASCII word at once: its term is made from its bytes when it ends.
                        index += 1
                        while index < bytes.count, isASCIIWordByte(bytes[index]) { index += 1 }
                        continue
                    }
                    reader.word.append(Unicode.Scalar(lowered(byte)))
                } else {
                    try reader.endWord(at: index, body)
                    try reader.endRun(body)
                }
                index += 1
                continue
            }
            let (scalar, length) = decode(bytes, at: index)
            let next = index + length
            switch classify(scalar) {
            case .word:
                try reader.endRun(body)
                reader.append(scalar, at: index)
            case .mark:
                reader.appendMark(scalar, end: next)
            case .unspaced:
                try reader.endWord(at: index, body)
                reader.run.append(([scalar], index))
                reader.runEnd = next
            case .emoji:
                try reader.endWord(at: index, body)
                try reader.endRun(body)
                try reader.emit(unspaced([scalar]), index..<next, .word, body)
            case .ignorable:
                // Left out of the word it is in (a soft hyphen): its letters are then read one by one.
                if reader.wordStart >= 0 { reader.leaveASCII() }
            case .separator:
                try reader.endWord(at: index, body)
                try reader.endRun(body)
            }
            index = next
        }
        try reader.endWord(at: bytes.count, body)
        try reader.endRun(body)
    }

    /// What `forEachToken` has read of the word or the run it is in, and the count of terms so far.
    private struct Reader {
        /// The text's UTF-8.
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0
        /// The word being read: where it starts (or -1), whether it is all ASCII so far, and from its first
        /// character that is not on, its scalars.
        var wordStart = -1
        var word: [Unicode.Scalar] = []
        var wordIsASCII = true
        /// The term of a word, in one buffer from word to word: a consumer that does not keep it makes no copy.
        var term: [UInt8] = []
        /// The run of a script without spaces: each character's scalars and where it starts; where it ends.
        var run: [(scalars: [Unicode.Scalar], start: Int)] = []
        var runEnd = 0

        mutating func emit(
            _ term: [UInt8], _ range: Range<Int>, _ kind: Kind, _ body: (Token) throws -> Void
        ) rethrows {
            try body(Token(term: term, position: position, utf8Range: range, kind: kind))
            position += 1
        }

        mutating func append(_ scalar: Unicode.Scalar, at index: Int) {
            if wordStart < 0 { wordStart = index }
            leaveASCII()
            word.append(scalar)
        }

        /// A mark belongs to the word or the run's character it follows; alone, it is nothing.
        mutating func appendMark(_ scalar: Unicode.Scalar, end: Int) {
            if wordStart >= 0 {
                leaveASCII()
                word.append(scalar)
            } else if !run.isEmpty {
                run[run.count - 1].scalars.append(scalar)
                runEnd = end
            }
        }

        /// From the word's first character that is not ASCII on, its scalars are kept: those read so far, ASCII, are
        /// its bytes lowercased.
        mutating func leaveASCII() {
            guard wordIsASCII else { return }
            word.removeAll(keepingCapacity: true)
            for byte in bytes[wordStart..<bytes.count] {
                guard isASCIIWordByte(byte) else { break }
                word.append(Unicode.Scalar(lowered(byte)))
            }
            wordIsASCII = false
        }

        @inline(__always)
        mutating func endWord(at end: Int, _ body: (Token) throws -> Void) rethrows {
            if wordStart >= 0 { try emitWord(end: end, body) }
        }

        private mutating func emitWord(end: Int, _ body: (Token) throws -> Void) rethrows {
            let start = wordStart
            defer {
                wordStart = -1
                if !wordIsASCII { word.removeAll(keepingCapacity: true) }
                wordIsASCII = true
            }
            if wordIsASCII {
                term.removeAll(keepingCapacity: true)
                term.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<end]))
                term.withUnsafeMutableBufferPointer { term in
                    for index in term.indices { term[index] = lowered(term[index]) }
                }
                cut(&term)
            } else {
                fold(word, into: &term)
            }
            guard !term.isEmpty else { return }
            try emit(term, start..<end, .word, body)
        }

        @inline(__always)
        mutating func endRun(_ body: (Token) throws -> Void) rethrows {
            if !run.isEmpty { try emitRun(body) }
        }

        private mutating func emitRun(_ body: (Token) throws -> Void) rethrows {
            defer { run.removeAll(keepingCapacity: true) }
            let characters = run.map { unspaced($0.scalars) }
            if run.count == 1 {
                try emit(characters[0], run[0].start..<runEnd, .single, body)
                return
            }
            for offset in 0..<run.count - 1 {
                let end = offset + 2 < run.count ? run[offset + 2].start : runEnd
                try emit(characters[offset] + characters[offset + 1], run[offset].start..<end, .pair, body)
            }
            let last = run.count - 1
            try emit(characters[last], run[last].start..<runEnd, .runEnd, body)
        }
    }

    /// An ASCII letter in lower case; any other byte as it is.
    @inline(__always)
    private static func lowered(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }

    /// Whether an ASCII byte is a letter or a digit.
    @inline(__always)
    private static func isASCIIWordByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// The scalar whose UTF-8 starts at `index` (not ASCII), and its length in bytes. A Swift string's UTF-8 is
    /// valid; bytes that are not (which it never holds) read as U+FFFD, one byte at a time, without reading past the
    /// end.
    @inline(__always)
    private static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (Unicode.Scalar, Int) {
        let lead = bytes[index]
        let length = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
        guard length > 1, index + length <= bytes.count else { return ("\u{FFFD}", 1) }
        var value = UInt32(lead) & (0x7F >> UInt32(length))
        for offset in 1..<length { value = value << 6 | UInt32(bytes[index + offset] & 0x3F) }
        return (Unicode.Scalar(value) ?? "\u{FFFD}", length)
    }

    /// A word's term, in `term`: folded as `folding` says, in composed form (NFC), so that the same word typed either
    /// way has the same bytes. Cut to `maxTermBytes`; empty when nothing is left. (An all-ASCII word is lowercased as
    /// it is read: that is its folding.)
    static func fold(_ word: [Unicode.Scalar], into term: inout [UInt8]) {
        term.removeAll(keepingCapacity: true)
        var text = String.UnicodeScalarView()
        text.append(contentsOf: word)
        let folded = String(text).folding(options: folding, locale: nil)
        term.append(contentsOf: folded.precomposedStringWithCanonicalMapping.utf8)
        cut(&term)
    }

    /// A character of a script without spaces, composed (NFC) when it carries a mark, and not folded.
    static func unspaced(_ scalars: [Unicode.Scalar]) -> [UInt8] {
        if scalars.count == 1 {
            var bytes: [UInt8] = []
            UTF8.encode(scalars[0]) { bytes.append($0) }
            return bytes
        }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars)
        let character = String(text)
        return Array((scalars.count > 1 ? character.precomposedStringWithCanonicalMapping : character).utf8)
    }

    /// Cuts `term` to at most `maxTermBytes`, at the start of a UTF-8 character.
    static func cut(_ term: inout [UInt8]) {
        guard term.count > maxTermBytes else { return }
        var end = maxTermBytes
        while end > 0, term[end] & 0xC0 == 0x80 { end -= 1 }
        term.removeSubrange(end...)
    }
}
