import Foundation

@testable import Cellar

/// One model, "Pet", in the versions an app ships: each version is a Swift type stored under the same name.
enum V1 {
    struct Pet: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var age: Int
        static let schema = Schema<Pet>(name: "Pet", autoIncrement: true)
    }
}

enum V2 {
    /// Gains a required `color`, computed from the age by the migration to version 2.
    struct Pet: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var age: Int
        var color: String
        static let schema = Schema<Pet>(name: "Pet", autoIncrement: true)
    }

    static let migration = MigrationStep.to(2) { migration in
        try migration.enumerateRecords(ofType: "Pet") { pet in
            let age = try pet.value("age", as: Int.self) ?? 0
            try pet.set("color", to: age < 5 ? "brown" : "grey")
        }
    }
}

enum V3 {
    /// `name` is renamed to `fullName` (declared in the schema) and `color` gets an index.
    struct Pet: Model, Equatable {
        var id: Int64 = 0
        var fullName: String
        var age: Int
        var color: String
        static let schema = Schema<Pet>(name: "Pet", autoIncrement: true, indexes: [.index(\.color)])
            .property(\.fullName, renamedFrom: "name")
    }
}

/// A configuration of the pet store at `version`, with every migration step up to it.
func petConfiguration(_ version: Int) -> Configuration {
    let models: [any Model.Type] =
        switch version {
        case 1: [V1.Pet.self]
        case 2: [V2.Pet.self]
        default: [V3.Pet.self]
        }
    return Configuration(models: models, schemaVersion: version, migrations: [V2.migration])
}
