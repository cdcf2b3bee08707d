import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// Random pairs of stored and captured schemas: the diff names every added, removed and changed property exactly
/// once, and asks for a migration exactly when stored records could not be read as the new model.
@Suite("Schema changes: the diff of any two schemas")
struct SchemaDiffPropertyTests {
    static let names = ["a", "b", "c", "d", "e", "f"]
    static let shapes: [ValueShape] = [
        .int, .string, .double, .float, .bool, .list(.int), .list(.string), .link("Dog"),
        .object([PropertyShape(name: "x", shape: .int, isOptional: false)]),
    ]

    /// A schema from bits: which names are present, with which shape and optionality.
    static func schema(_ picks: [(Int, Int, Bool)]) -> ModelSchema {
        var properties: [PropertyShape] = []
        for (name, shape, optional) in picks where !properties.contains(where: { $0.name == names[name] }) {
            properties.append(PropertyShape(name: names[name], shape: shapes[shape], isOptional: optional))
        }
        return ModelSchema(name: "Pet", properties: properties, indexes: [], links: [], autoIncrement: false)
    }

    @Test func everyDifferenceIsNamedOnceAndMigrationsAreAskedForExactlyWhenNeeded() async {
        let property = zip(Gen.int(in: 0...5), Gen.int(in: 0...8), Gen.bool)
        await checkProperty(count: 500, input: property.array(of: 0...6), property.array(of: 0...6)) { old, new in
            let stored = Self.schema(old)
            let captured = Self.schema(new)
            let plan = ModelSchemaPlan(
                described: captured, declarations: SchemaDeclarations(), stored: stored, retired: [],
                storedUnder: "Pet", hasRecordsDatabase: true, recordCount: 1)
            var expected: [SchemaChange] = []
            var unreadable = false
            for property in captured.properties {
                guard let before = stored.property(property.name) else {
                    expected.append(
                        .propertyAdded(
                            model: "Pet", property: property.name, kind: property.shape.kindName,
                            isOptional: property.isOptional, hasDefault: false))
                    unreadable = unreadable || !property.isOptional
                    continue
                }
                if !property.shape.reads(before.shape) {
                    unreadable = true
                    expected.append(
                        .propertyTypeChanged(
                            model: "Pet", property: property.name, from: before.shape.kindName,
                            to: property.shape.kindName))
                }
                if before.isOptional, !property.isOptional {
                    unreadable = true
                    expected.append(.propertyMadeRequired(model: "Pet", property: property.name))
                }
                if !before.isOptional, property.isOptional {
                    expected.append(.propertyMadeOptional(model: "Pet", property: property.name))
                }
            }
            for before in stored.properties where captured.property(before.name) == nil {
                expected.append(.propertyRemoved(model: "Pet", property: before.name))
            }
            #expect(plan.changes == expected)
            // The comparison says which changes need a migration; the stored records decide: none while every record
            // reads, those changes and the record's own words when one does not.
            #expect(plan.changes.contains { $0.handling == .needsMigration } == unreadable)
            // Every record is decoded when a change may leave some unreadable; the first one is enough otherwise.
            #expect(plan.recordCheck == (unreadable ? .all : .first))
            #expect(plan.changesNeedingMigration.isEmpty)
            var failing = plan
            let record = SchemaChange.propertyUnreadable(model: "Pet", property: "zz", reason: "it does not read")
            failing.unreadable = record
            #expect(failing.changesNeedingMigration == expected.filter { $0.handling == .needsMigration } + [record])
            #expect(
                plan.retired.map(\.name)
                    == expected.compactMap {
                        if case .propertyRemoved(_, let name) = $0 { name } else { nil }
                    })
            // The same schema on both sides changes nothing.
            let same = ModelSchemaPlan(
                described: captured, declarations: SchemaDeclarations(), stored: captured, retired: [],
                storedUnder: "Pet", hasRecordsDatabase: true, recordCount: 1)
            #expect(same.changes.isEmpty)
        }
    }
}
