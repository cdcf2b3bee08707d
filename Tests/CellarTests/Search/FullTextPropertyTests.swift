import Foundation
import Testing

@testable import Cellar

/// Random edits against the full-text index: after each run the index equals what its records' texts say
/// (`verifyIntegrity`), every search finds what checking each record finds, and the scores equal those of a store
/// built from the final records alone.
@Suite("Search: the index after random edits")
struct FullTextPropertyTests {
    static let vocabulary = [
        "dog", "Dog", "park", "café", "cafe", "Parsley", "party", "par", "東京", "京都", "東京都", "犬", "학교에", "🍕",
        "zebra", "x", "naïve", "résumé",
    ]
    static let separators = [" ", ", ", "-", "\n", "…", "", " 🍕 "]

    static func text(_ random: inout SeededGenerator, words: Int) -> String {
        var text = ""
        for _ in 0..<Int.random(in: 0...words, using: &random) {
            text += vocabulary.randomElement(using: &random)! + separators.randomElement(using: &random)!
        }
        return text
    }

    static func memo(_ id: Int, _ random: inout SeededGenerator) -> Memo {
        Memo(
            id: "m\(id)", title: text(&random, words: 3), body: text(&random, words: 14),
            comment: Bool.random(using: &random) ? nil : text(&random, words: 4),
            folder: ["inbox", "trips"].randomElement(using: &random)!)
    }

    static func query(_ random: inout SeededGenerator) -> String {
        func word() -> String {
            let word = vocabulary.randomElement(using: &random)!
            return Int.random(in: 0..<5, using: &random) == 0 ? String(word.prefix(2)) + "*" : word
        }
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return word()
        case 1: return word() + " " + word()
        case 2: return "\"" + word() + " " + word() + "\""
        case 3: return word() + " OR " + word()
        case 4: return word() + " NOT " + word()
        default: return "(" + word() + " OR " + word() + ") " + word()
        }
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func theIndexEqualsItsRebuildAndEverySearchFindsWhatTheRecordsSay(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let folder = TemporaryFolder()
        let store = try folder.store([Memo.self])
        for _ in 0..<25 {
            struct Rollback: Error {}
            let rollsBack = Int.random(in: 0..<6, using: &random) == 0
            do {
                try store.write { tx in
                    for _ in 0..<Int.random(in: 1...8, using: &random) {
                        let id = Int.random(in: 0..<24, using: &random)
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0: try tx.upsert(Self.memo(id, &random))
                        case 1:
                            if try tx.object(Memo.self, id: "m\(id)") != nil {
                                try tx.update(Self.memo(id, &random))
                            }
                        case 2: try tx.delete(Memo.self, id: "m\(id)")
                        default:
                            // A change of one property only: the other properties' terms stay.
                            if var memo = try tx.object(Memo.self, id: "m\(id)") {
                                memo.title = Self.text(&random, words: 3)
                                try tx.update(memo)
                            }
                        }
                    }
                    if rollsBack { throw Rollback() }
                }
            } catch is Rollback {}
        }
        #expect(try store.verifyIntegrity().problems == [])

        let records = try store.objects(Memo.self).results()
        let rebuiltFolder = TemporaryFolder()
        let rebuilt = try rebuiltFolder.store([Memo.self])
        try rebuilt.write { tx in for memo in records { try tx.insert(memo) } }
        for _ in 0..<40 {
            let text = Self.query(&random)
            let condition = Condition<Memo>.matches(text)
            let expected = Set(records.filter { condition.evaluate($0) }.map(\.id))
            let hits = try store.objects(Memo.self).where(condition).searchResults()
            #expect(Set(hits.map(\.value.id)) == expected, "\(text)")
            #expect(zip(hits, hits.dropFirst()).allSatisfy { $0.score >= $1.score }, "\(text)")
            let again = try rebuilt.objects(Memo.self).where(condition).searchResults()
            let scores = Dictionary(uniqueKeysWithValues: hits.map { ($0.value.id, $0.score) })
            for hit in again { #expect(abs((scores[hit.value.id] ?? -1) - hit.score) < 1e-9, "\(text)") }
            // A property search checks that property alone.
            let inBody = Condition<Memo>.matches(\.body, text)
            let bodyExpected = Set(records.filter { inBody.evaluate($0) }.map(\.id))
            #expect(Set(try store.objects(Memo.self).where(inBody).results().map(\.id)) == bodyExpected, "\(text)")
        }
    }

    @Test func blocksSplitAndShrinkAsDocumentsInTheMiddleChange() throws {
        var random = SeededGenerator(seed: 9)
        let folder = TemporaryFolder()
        let store = try folder.store([Memo.self])
        try store.write { tx in
            for id in 0..<3_000 { try tx.insert(Memo(id: "m\(id)", title: "common", body: "filler \(id % 7)")) }
        }
        for _ in 0..<6 {
            try store.write { tx in
                for _ in 0..<150 {
                    let id = Int.random(in: 0..<3_000, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0:
                        // The word moves within the document: its posting grows in a block in the middle.
                        let words = (0..<Int.random(in: 1...30, using: &random)).map { _ in "common" }
                        try tx.upsert(Memo(id: "m\(id)", title: "x", body: words.joined(separator: " ")))
                    case 1: try tx.delete(Memo.self, id: "m\(id)")
                    default: try tx.upsert(Memo(id: "m\(id)", title: "common", body: "filler"))
                    }
                }
            }
        }
        #expect(try store.verifyIntegrity().problems == [])
        let records = try store.objects(Memo.self).results()
        let condition = Condition<Memo>.matches("common")
        #expect(
            Set(try store.objects(Memo.self).where(condition).results().map(\.id))
                == Set(records.filter { condition.evaluate($0) }.map(\.id)))
        try store.read { snapshot in
            let info = try store.info(for: Memo.self)
            let txn = try snapshot.lmdb
            var blocks = 0
            try txn.walk(info.fullText[0].postings) { entry in
                if PostingBlock.parse(key: entry.key) != nil { blocks += 1 }
                return true
            }
            #expect(blocks > 20, "the postings of common are in \(blocks) blocks")
        }
    }
}
