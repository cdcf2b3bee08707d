import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// A model's properties of every layout a key path can name: padding between small and large fields, text, lists,
/// a nested structure, an optional one, a class, a wrapped property and a computed one.
private struct Layouts {
    final class Box { var count: Int8 = 0 }
    @propertyWrapper struct Doubled {
        var stored: Int
        var wrappedValue: Int {
            get { stored * 2 }
            set { stored = newValue / 2 }
        }
        init(wrappedValue: Int) { stored = wrappedValue / 2 }
    }
    struct Place: Equatable {
        var flag: Bool
        var city: String
        var shelf: Int16
    }
    var small: Int8
    var name: String
    var flag: Bool
    var ratio: Double
    var tags: [String]
    var place: Place
    var maybe: Place?
    var day: Date
    var box: Box
    @Doubled var doubled: Int
    var computed: String { name + "!" }
    var pair: (Int8, String)
}

/// One key path, read by a `PropertyReader` and through the key path.
private func same<V: Equatable>(
    _ path: KeyPath<Layouts, V>, in value: Layouts, atOffset: Bool, sourceLocation: SourceLocation = #_sourceLocation
) {
    let reader = PropertyReader(path)
    #expect(reader.readsAtOffset == atOffset, "\(path)", sourceLocation: sourceLocation)
    #expect(reader.read(value) == value[keyPath: path], "\(path)", sourceLocation: sourceLocation)
}

@Suite("Models: properties read at their offsets")
struct PropertyReaderTests {
    @Test func everyKeyPathReadsWhatTheKeyPathGives() async {
        let text = Gen.character(in: "\u{0}"..."\u{3000}").string(of: 0...40)
        let numbers = zip(Gen.int8(in: .min ... .max), Gen.int64(in: .min ... .max))
        await checkProperty(count: 200, input: zip(text, numbers)) { name, values in
            let (small, number) = values
            let place = Layouts.Place(
                flag: number % 3 == 0, city: name + "city", shelf: Int16(truncatingIfNeeded: number))
            let box = Layouts.Box()
            box.count = small
            let value = Layouts(
                small: small, name: name, flag: number % 2 == 0, ratio: Double(number) / 7, tags: [name, "", name],
                place: place, maybe: number % 2 == 0 ? nil : place,
                day: Date(timeIntervalSince1970: Double(number % 1_000_000)),
                box: box, doubled: Int(number % 1_000) * 2, pair: (small, name))
            same(\.small, in: value, atOffset: true)
            same(\.name, in: value, atOffset: true)
            same(\.flag, in: value, atOffset: true)
            same(\.ratio, in: value, atOffset: true)
            same(\.tags, in: value, atOffset: true)
            same(\.place, in: value, atOffset: true)
            same(\.place.city, in: value, atOffset: true)
            same(\.place.shelf, in: value, atOffset: true)
            same(\.maybe, in: value, atOffset: true)
            same(\.day, in: value, atOffset: true)
            same(\.pair.1, in: value, atOffset: true)
            same(\.maybe?.city, in: value, atOffset: false)
            same(\.box.count, in: value, atOffset: false)
            same(\.doubled, in: value, atOffset: false)
            same(\.computed, in: value, atOffset: false)
            let whole = PropertyReader(\Layouts.self)
            #expect(whole.read(value).name == value.name && whole.read(value).place == value.place)
        }
    }
}
