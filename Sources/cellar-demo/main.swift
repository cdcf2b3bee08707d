import Cellar
import Foundation

struct Dog: Model {
    var id: Int64 = 0
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<Dog>(autoIncrement: true)
}

let store = try Store.inMemory(.init(models: [Dog.self]))
try store.write { tx in
    for i in 0..<8 { try tx.insert(Dog(name: "Dog \(i)", age: i, owner: i % 2 == 0 ? nil : 7)) }
}
let dogs = try store.objects(Dog.self).results()
print(dogs.count, dogs.map(\.id), dogs[3])
try store.write { tx in
    try tx.delete(Dog.self, id: 7)
    try tx.delete(Dog.self, id: 8)
}
print(dogs.count, try dogs.latest().count)
let d = try store.write { tx in try tx.insert(Dog(name: "new", age: 1)) }
print(d.id)
