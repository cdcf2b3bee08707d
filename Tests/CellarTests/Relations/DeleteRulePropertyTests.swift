import Foundation
import PropertyBased
import Testing

@testable import Cellar

/// Random writes over models that use every delete rule: after each one, every index and backlink database agrees
/// with the records, no link dangles, a refused write wrote nothing, and each rule did what it says.
@Suite("Relationships: delete rules hold for any sequence of writes")
struct DeleteRulePropertyTests {
    typealias Owner = Rules.Owner
    typealias Pet = Rules.Pet
    typealias Toy = Rules.Toy
    typealias Kennel = Rules.Kennel
    typealias Vet = Rules.Vet
    typealias Collar = Rules.Collar
    typealias Node = Rules.Node

    /// One random write: what to do, to which id, and bits choosing the links.
    struct Step: CustomStringConvertible {
        let kind: Int
        let id: Int
        let bits: Int
        var description: String { "(\(kind), \(id), \(bits))" }

        /// Ids 1...4 chosen by the low bits.
        var ids: [Int] { (0..<4).filter { bits & (1 << $0) != 0 }.map { $0 + 1 } }
        var one: Int? { bits % 5 == 0 ? nil : bits % 5 }
    }

    @Test func everyWriteKeepsTheLinksSound() async {
        let steps = zip(Gen.int(in: 0...12), Gen.int(in: 1...4), Gen.int(in: 0...63))
            .map { Step(kind: $0, id: $1, bits: $2) }.array(of: 5...40)
        var outcomes: [String: Int] = [:]
        await checkProperty(count: 150, input: steps) { steps in
            let folder = TemporaryFolder()
            let store = try folder.store(Rules.models)
            for step in steps { outcomes[try check(step, on: store), default: 0] += 1 }
        }
        // The random writes reach every outcome, so the checks above saw each rule at work.
        for outcome in ["written", "deleted", "denied", "target missing"] {
            #expect(outcomes[outcome, default: 0] > 5, "\(outcomes)")
        }
    }

    /// Runs one step and checks the store after it; returns what happened.
    private func check(_ step: Step, on store: Store) throws -> String {
        let before = store.version
        let model = step.bits % 7
        // What the rules promise for a delete, read before it.
        let ownersPets = try store.object(Owner.self, id: step.id)?.pets ?? []
        let residents = try store.object(Kennel.self, id: step.id)?.residents ?? []
        let collars = try store.objects(Collar.self).linking(to: Pet(id: step.id), via: \.pet).results().map(\.id)
        do {
            try store.write { tx in
                switch step.kind {
                case 0: try tx.upsert(Toy(id: step.id))
                case 1, 10, 11:
                    // Half of the pets have toys, which must exist.
                    let toys = step.bits >= 32 ? step.ids.map { Link<Toy>(id: $0) } : []
                    try tx.upsert(Pet(id: step.id, age: step.bits % 3, toys: toys))
                case 2: try tx.upsert(Owner(id: step.id, pets: step.ids.map { Link(id: $0) }))
                case 3: try tx.upsert(Kennel(id: step.id, residents: step.one.map { [Link(id: $0)] } ?? []))
                case 4: try tx.upsert(Vet(id: step.id, patients: [Link(id: step.id)]))
                case 5: try tx.upsert(Collar(id: step.id, pet: step.one.map { Link(id: $0) }))
                case 6: try tx.upsert(Node(id: step.id, next: step.one.map { Link(id: $0) }))
                case 7: try delete(model: model, ids: [step.id], in: tx)
                case 8: try delete(model: model, ids: [step.id, step.id % 4 + 1], in: tx)
                case 9: try deleteAll(model: model, in: tx)
                default: try tx.delete(Pet.self, id: step.id)
                }
            }
        } catch let error as StoreError {
            #expect(store.version == before, "a refused write wrote something at \(step)")
            #expect(try store.verifyIntegrity().problems == [], "after \(step)")
            switch error {
            case .deleteDenied: return "denied"
            case .linkTargetMissing: return "target missing"
            default:
                Issue.record("unexpected \(error) at \(step)")
                return "failed"
            }
        }
        #expect(try store.verifyIntegrity().problems == [], "after \(step)")
        guard step.kind == 7 else { return [7, 8, 9, 12].contains(step.kind) ? "deleted" : "written" }
        switch model {
        case 0:
            // An owner's pets cascade.
            for pet in ownersPets { #expect(try store.object(pet) == nil, "after \(step)") }
        case 1:
            // A pet's collars cascade from the target side.
            for collar in collars { #expect(try store.object(Collar.self, id: collar) == nil, "after \(step)") }
        case 3:
            // A kennel that still had residents is never deleted.
            #expect(residents.isEmpty, "after \(step)")
        default:
            break
        }
        return "deleted"
    }

    private func delete(model: Int, ids: [Int], in tx: WriteTransaction) throws {
        switch model {
        case 0: try tx.delete(Owner.self, ids: ids)
        case 1: try tx.delete(Pet.self, ids: ids)
        case 2: try tx.delete(Toy.self, ids: ids)
        case 3: try tx.delete(Kennel.self, ids: ids)
        case 4: try tx.delete(Vet.self, ids: ids)
        case 5: try tx.delete(Collar.self, ids: ids)
        default: try tx.delete(Node.self, ids: ids)
        }
    }

    private func deleteAll(model: Int, in tx: WriteTransaction) throws {
        switch model {
        case 0: try tx.deleteAll(Owner.self)
        case 1: try tx.deleteAll(Pet.self)
        case 2: try tx.deleteAll(Toy.self)
        case 3: try tx.deleteAll(Kennel.self)
        case 4: try tx.deleteAll(Vet.self)
        case 5: try tx.deleteAll(Collar.self)
        default: try tx.deleteAll(Node.self)
        }
    }
}
