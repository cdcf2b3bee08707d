import Cellar

/// The seed's models: a person owns dogs through an exclusive list, so a dog's owner is one `Person?`.
enum Seed {
    struct Person: Model, Equatable {
        var id: Int64 = 0
        var name: String
        var dogs: [Link<Dog>] = []
        static let schema = Schema<Person>(
            autoIncrement: true, indexes: [.index(\.name)], links: [.link(\.dogs, exclusive: true)])
    }

    struct Dog: Model, Equatable {
        var id: String
        var name: String
        var age: Int
        static let schema = Schema<Dog>(indexes: [.index(\.age)])
    }

    static let models: [any Model.Type] = [Person.self, Dog.self]
}

/// Every rule at once: an owner cascades to pets, a pet cascades to toys, a kennel denies deleting a
/// non-empty kennel, a vet forbids deleting a patient, a pet's to-one `home` removes itself, a tag cascades from its
/// owner on the target side.
enum Rules {
    struct Owner: Model, Equatable {
        var id: Int
        var pets: [Link<Pet>] = []
        static let schema = Schema<Owner>(links: [.link(\.pets, deleteRule: .cascade)])
    }

    struct Pet: Model, Equatable {
        var id: Int
        var age: Int = 1
        var toys: [Link<Toy>] = []
        var home: Link<Kennel>? = nil
        static let schema = Schema<Pet>(
            indexes: [.index(\.age)], links: [.link(\.toys, deleteRule: .cascade), .link(\.home)])
    }

    struct Toy: Model, Equatable {
        var id: Int
    }

    struct Kennel: Model, Equatable {
        var id: Int
        var residents: [Link<Pet>] = []
        static let schema = Schema<Kennel>(links: [.link(\.residents, deleteRule: .deny)])
    }

    struct Vet: Model, Equatable {
        var id: Int
        var patients: [Link<Pet>] = []
        static let schema = Schema<Vet>(links: [.link(\.patients, targetDeleteRule: .deny)])
    }

    /// A collar belongs to a pet: deleting the pet deletes its collars (SQL's ON DELETE CASCADE).
    struct Collar: Model, Equatable {
        var id: Int
        var pet: Link<Pet>? = nil
        static let schema = Schema<Collar>(links: [.link(\.pet, targetDeleteRule: .cascade)])
    }

    /// A chain that cascades around a cycle.
    struct Node: Model, Equatable {
        var id: Int
        var next: Link<Node>? = nil
        static let schema = Schema<Node>(links: [.link(\.next, deleteRule: .cascade)])
    }

    static let models: [any Model.Type] = [
        Owner.self, Pet.self, Toy.self, Kennel.self, Vet.self, Collar.self, Node.self,
    ]
}

/// An album owns its photos: a photo that leaves the last album holding it is deleted. A draft may link to photos
/// not stored yet.
enum Albums {
    struct Album: Model, Equatable {
        var id: Int
        var photos: [Link<Photo>] = []
        static let schema = Schema<Album>(links: [.link(\.photos, ownsTargets: true)])
    }

    struct Photo: Model, Equatable {
        var id: Int
        var caption: String = ""
    }

    struct Draft: Model, Equatable {
        var id: Int
        var photos: [Link<Photo>] = []
        static let schema = Schema<Draft>(links: [.link(\.photos, allowsDangling: true)])
    }

    static let models: [any Model.Type] = [Album.self, Photo.self, Draft.self]
}
