import CellarMacros
import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// A type whose field holds another `@Record` type, to see errors name the path through both.
@Record
struct Holder: Equatable {
    var inner: Everything.Inner
    var count: Int?
}

@Suite("Generated record code")
struct GeneratedRecordTests {
    @Test func generatedCodeWritesTheBytesCodableWrites() throws {
        for seed in 0..<40 {
            let value = Everything.sample(seed)
            // With the same dictionary, the same bytes, whichever writes first and so names the keys.
            let (codable, keys) = try encoded(value)
            let (generated, sameKeys) = try generatedBytes(value, dictionary: keys)
            #expect(generated == codable)
            #expect(sameKeys.names == keys.names)
            let (generatedFirst, generatedKeys) = try generatedBytes(value)
            let (codableAfter, _) = try encoded(value, dictionary: generatedKeys)
            #expect(codableAfter == generatedFirst)
        }
    }

    @Test func eachReadsWhatTheOtherWrote() throws {
        for seed in 0..<40 {
            let value = Everything.sample(seed)
            let (codable, keys) = try encoded(value)
            #expect(try readGenerated(Everything.self, codable, dictionary: keys) == value)
            let (generated, generatedKeys) = try generatedBytes(value)
            let decoded = try generated.withUnsafeBytes {
                try RecordDecoder.decode(Everything.self, from: $0, dictionary: generatedKeys)
            }
            #expect(decoded == value)
            // And without any type, by key names.
            let tree = try generated.withUnsafeBytes { try RecordValue(record: $0, dictionary: generatedKeys) }
            #expect(tree["text"] == .string(value.text))
            #expect(tree["inner"]?["label"] == .string("in"))
            #expect(tree["int"] == .int(Int64(value.int)))
            #expect((tree["maybe"] == .null) == (value.maybe == nil))
        }
    }

    @Test func aModelIsWrittenAndReadThroughItsGeneratedCode() throws {
        let encoder = RecordEncoder(dictionary: .empty)
        let bytes = try encoder.encodeModel(Probed(id: 1, marker: Marker(n: 3)))
        // The marker's record code writes "xxx"; its `Codable` form would be the number 3.
        #expect(
            RecordFormat.value(ofEncoded: bytes).suffix(5) == [
                RecordFormat.ValueType.string.rawValue, 3, 120, 120, 120,
            ])
        let read = try bytes.withUnsafeBytes {
            try RecordDecoder().decodeRecord(Probed.self, from: $0, dictionary: encoder.absorbAddedNames())
        }
        #expect(read == Probed(id: 1, marker: Marker(n: 3)))
    }

    @Test func aModelUsesItsGeneratedCodeAndAPlainOneCodable() {
        #expect(FastDog._recordKeys?.names == ["id", "name", "age", "owner"])
        #expect(Dog._recordKeys == nil)
        #expect(FastDog._recordField(for: \FastDog.owner) == 3)
        #expect(FastDog._recordField(for: \FastDog.owner?.bigEndian) == nil)
    }

    @Test func fieldsOfAnotherVersionAreSkippedAndMissingOptionalsAreNil() throws {
        struct Newer: Codable {
            var extra: [String: Int]
            var count: Int
            var inner: Everything.Inner
            var more: String
        }
        let (bytes, keys) = try encoded(
            Newer(extra: ["a": 1], count: 3, inner: .init(label: "l", weights: [1]), more: "m"))
        #expect(
            try readGenerated(Holder.self, bytes, dictionary: keys)
                == Holder(inner: .init(label: "l", weights: [1]), count: 3))
        struct Older: Codable { var inner: Everything.Inner }
        let (old, oldKeys) = try encoded(Older(inner: .init(label: "o", weights: [])))
        #expect(
            try readGenerated(Holder.self, old, dictionary: oldKeys)
                == Holder(inner: .init(label: "o", weights: []), count: nil))
    }

    @Test func missingAndMistypedFieldsNameTheirPath() throws {
        struct NoInner: Codable { var count: Int }
        let (missing, missingKeys) = try encoded(NoInner(count: 1))
        #expect {
            try readGenerated(Holder.self, missing, dictionary: missingKeys)
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return false }
            return key.stringValue == "inner"
        }
        struct WrongInner: Codable {
            var label: Int
            var weights: [Double]
        }
        struct Wrong: Codable { var inner: WrongInner }
        let (wrong, wrongKeys) = try encoded(Wrong(inner: WrongInner(label: 3, weights: [])))
        #expect {
            try readGenerated(Holder.self, wrong, dictionary: wrongKeys)
        } throws: { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["inner", "label"]
        }
    }

    @Test func integersWidenAndRefuseWhatDoesNotFitAsCodableDoes() throws {
        struct Narrow: Codable {
            var inner: Everything.Inner
            var count: Int8
        }
        let (narrow, narrowKeys) = try encoded(Narrow(inner: .init(label: "n", weights: []), count: -3))
        #expect(try readGenerated(Holder.self, narrow, dictionary: narrowKeys).count == -3)
        struct Huge: Codable {
            var inner: Everything.Inner
            var count: UInt64
        }
        let (huge, hugeKeys) = try encoded(Huge(inner: .init(label: "h", weights: []), count: .max))
        #expect(throws: DecodingError.self) { try readGenerated(Holder.self, huge, dictionary: hugeKeys) }
        #expect(throws: DecodingError.self) {
            try huge.withUnsafeBytes { try RecordDecoder.decode(Holder.self, from: $0, dictionary: hugeKeys) }
        }
    }

    @Test func thousandsOfMutatedRecordsNeverCrash() throws {
        let (bytes, keys) = try generatedBytes(Everything.sample(5))
        let seed = UInt64.random(in: 0...UInt64(UInt32.max))
        print("mutated generated records: seed \(seed)")
        var generator = SeededGenerator(seed: seed)
        var truncatedFailures = 0
        var agreements = 0
        for round in 0..<5_000 {
            let mutated = mutation(round, of: bytes, using: &generator)
            let generated = Result { try readGenerated(Everything.self, mutated, dictionary: keys) }
            let codable = Result {
                try mutated.withUnsafeBytes { try RecordDecoder.decode(Everything.self, from: $0, dictionary: keys) }
            }
            if round % 4 == 0, case .failure = generated { truncatedFailures += 1 }
            if case .success(let a) = generated, case .success(let b) = codable, a == b { agreements += 1 }
            if case .failure = generated, case .failure = codable { agreements += 1 }
        }
        // Every truncated record is refused; none of the others may crash (reaching this line is that part).
        #expect(truncatedFailures == 1_250)
        // Both readers mostly agree; they may differ only on records damaged into ambiguity (a key twice).
        #expect(agreements > 4_500)
    }

    @Test func propertyAnyDogWritesTheSameBytesBothWays() async {
        let dogs = zip(
            Gen.int64(in: .min ... .max),
            Gen.unicodeScalar(in: "\u{0}"..."\u{D7FF}").map(Character.init).string(of: 0...40),
            Gen.int(in: .min ... .max), Gen.int64(in: -5...5)
        ).map { FastDog(id: $0, name: $1, age: $2, owner: $3 == 0 ? nil : $3) }
        await checkProperty(count: 500, input: dogs) { dog in
            let (codable, keys) = try encoded(dog)
            let encoder = RecordEncoder(dictionary: keys)
            #expect(try encoder.encodeModel(dog) == codable)
            #expect(try readGenerated(FastDog.self, codable, dictionary: keys) == dog)
        }
    }

    @Test func aStoreReadsRecordsWrittenEitherWay() throws {
        let folder = TemporaryFolder()
        do {
            let store = try folder.store([Dog.self])
            try store.write { tx in
                for n in 0..<200 { try tx.insert(Dog(name: "Dog \(n)", age: n % 10, owner: n % 3 == 0 ? nil : 7)) }
            }
        }
        let store = try folder.store([FastDog.self])
        let all = try store.objects(FastDog.self).results()
        #expect(all.count == 200)
        #expect(all[3] == FastDog(id: 4, name: "Dog 3", age: 3, owner: nil))
        #expect(try store.objects(FastDog.self).where(\.age == 7).results().map(\.name).count == 20)
        let added = try store.write { tx in try tx.insert(FastDog(name: "Fast", age: 1, owner: 2)) }
        #expect(added.id == 201)
        let reopened = try folder.store([Dog.self])
        #expect(try reopened.object(Dog.self, id: 201) == Dog(id: 201, name: "Fast", age: 1, owner: 2))
        #expect(try reopened.objects(Dog.self).results().count == 201)
    }
}

@Suite("@Record and Codable never disagree")
struct GeneratedAgreementTests {
    /// Opening does not run `Codable`'s decoding, so the keys an extension declares are seen in what it writes.
    @Test func codingKeysInAnExtensionAreRefusedAtTheFirstWrite() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([RenamedInExtension.self])
        #expect {
            try store.write { tx in try tx.insert(RenamedInExtension(id: 1, name: "Taro")) }
        } throws: { error in
            guard case .invalidSchema(let model, let reason) = error as? StoreError else { return false }
            return model == "RenamedInExtension" && reason.contains("differs") && reason.contains("extension")
        }
        #expect(try store.count(RenamedInExtension.self) == 0)
    }

    @Test func encodingInAnExtensionIsRefusedAtTheFirstWrite() throws {
        let folder = TemporaryFolder()
        let store = try folder.store([EncodedInExtension.self])
        #expect {
            try store.write { tx in try tx.insert(EncodedInExtension(id: 1, name: "Taro")) }
        } throws: { error in
            guard case .invalidSchema(let model, let reason) = error as? StoreError else { return false }
            return model == "EncodedInExtension" && reason.contains("differs")
        }
        #expect(try store.count(EncodedInExtension.self) == 0)
    }

}
