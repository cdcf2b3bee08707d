import Foundation
import Testing

@testable import Cellar

@Suite("Case and diacritics in conditions and indexes")
struct TextFoldingTests {
    struct Member: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var email: String
        var city: String
        static let schema = Schema<Member>(
            autoIncrement: true,
            indexes: [
                .index(\.name), .index(\.name, options: .caseInsensitive), .unique(\.email, options: .caseInsensitive),
                .index(\.city, options: [.caseInsensitive, .diacriticInsensitive]),
            ])
    }

    /// The same members without the folded indexes: every condition is checked record by record.
    struct PlainMember: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var email: String
        var city: String
        static let schema = Schema<PlainMember>(name: "Plain", autoIncrement: true)
    }

    static let people: [(String, String, String)] = [
        ("Taro", "taro@example.com", "Zürich"), ("taro", "t2@example.com", "zurich"),
        ("TARO", "t3@example.com", "Köln"),
        ("Tomoko", "tomoko@example.com", "Koln"), ("Émile", "emile@example.com", "Zurich"),
        ("emile", "e2@example.com", "Bern"),
    ]

    static func club() throws -> Store {
        let store = try Store.inMemory(.init(models: [Member.self, PlainMember.self]))
        try store.write { tx in
            for (name, email, city) in people {
                try tx.insert(Member(name: name, email: email, city: city))
                try tx.insert(PlainMember(name: name, email: email, city: city))
            }
        }
        return store
    }

    @Test func foldedConditionsMatchAsRealmsCAndDDo() throws {
        let store = try Self.club()
        func names(_ condition: Condition<Member>, plain: Condition<PlainMember>) throws -> [String] {
            let indexed = try store.objects(Member.self).where(condition).sorted(by: \.id).results().map(\.name)
            #expect(try store.objects(PlainMember.self).where(plain).sorted(by: \.id).results().map(\.name) == indexed)
            return indexed
        }
        #expect(
            try names(
                .equals(\.name, "taro", options: .caseInsensitive),
                plain: .equals(\.name, "taro", options: .caseInsensitive))
                == ["Taro", "taro", "TARO"])
        #expect(
            try names(
                .hasPrefix(\.name, "TA", options: .caseInsensitive),
                plain: .hasPrefix(\.name, "TA", options: .caseInsensitive))
                == ["Taro", "taro", "TARO"])
        #expect(try names(.hasPrefix(\.name, "T"), plain: .hasPrefix(\.name, "T")) == ["Taro", "TARO", "Tomoko"])
        #expect(
            try names(
                .equals(\.city, "zurich", options: [.caseInsensitive, .diacriticInsensitive]),
                plain: .equals(\.city, "zurich", options: [.caseInsensitive, .diacriticInsensitive])) == [
                    "Taro", "taro", "Émile",
                ])
        #expect(
            try names(
                .equals(\.city, "zurich", options: .caseInsensitive),
                plain: .equals(\.city, "zurich", options: .caseInsensitive))
                == ["taro", "Émile"])
        #expect(
            try names(
                .contains(\.name, "MIL", options: .caseInsensitive),
                plain: .contains(\.name, "MIL", options: .caseInsensitive))
                == ["Émile", "emile"])
        #expect(
            try names(
                .contains(\.name, "emi", options: [.caseInsensitive, .diacriticInsensitive]),
                plain: .contains(\.name, "emi", options: [.caseInsensitive, .diacriticInsensitive])) == [
                    "Émile", "emile",
                ])
        #expect(
            try names(.equalsIgnoringCase(\.name, "EMILE"), plain: .equalsIgnoringCase(\.name, "EMILE")) == ["emile"])
    }

    @Test func anIndexFoldedAlikeAnswersAndTheOthersDoNot() throws {
        let store = try Self.club()
        func plan(_ condition: Condition<Member>) throws -> String {
            try store.objects(Member.self).where(condition).explain()
        }
        #expect(
            try plan(.equals(\.name, "taro", options: .caseInsensitive))
                == #"use index i/Member.name~c for name equals "taro" ignoring case"#)
        #expect(try plan(.hasPrefix(\.name, "ta", options: .caseInsensitive)).hasPrefix("use index i/Member.name~c"))
        #expect(try plan(\.name == "Taro") == #"use index i/Member.name for name == "Taro""#)
        #expect(try plan(.hasPrefix(\.name, "Ta")).hasPrefix("use index i/Member.name for"))
        // Folded another way than the index: checked record by record.
        #expect(
            try plan(.equals(\.name, "taro", options: [.caseInsensitive, .diacriticInsensitive])).hasPrefix(
                "scan r/Member"))
        #expect(
            try plan(.equals(\.city, "ZURICH", options: [.caseInsensitive, .diacriticInsensitive])).hasPrefix(
                "use index i/Member.city~cd"))
        #expect(try plan(.equals(\.city, "Zurich", options: .caseInsensitive)).hasPrefix("scan r/Member"))
        // A sort by name reads the plain index, never the folded one, whose order is not the names'.
        #expect(
            try store.objects(Member.self).sorted(by: \.name).explain() == "read index i/Member.name in ascending order"
        )
        #expect(try store.objects(Member.self).where(.equals(\.name, "taro", options: .caseInsensitive)).count() == 3)
    }

    @Test func aCaseInsensitiveUniqueIndexRefusesTheSameAddressInOtherCase() throws {
        let store = try Self.club()
        #expect(throws: StoreError.self) {
            try store.write { tx in try tx.insert(Member(name: "Ann", email: "TARO@Example.com", city: "Bern")) }
        }
        try store.write { tx in try tx.insert(Member(name: "Ann", email: "ann@example.com", city: "Bern")) }
        #expect(try store.verifyIntegrity().isConsistent)
    }
}
