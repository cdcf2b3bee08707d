import LMDB

/// Every record one delete removes once the delete rules are followed: the records asked for, the targets of
/// cascading links, the records whose links cascade from them, and owned targets left without a link.
///
/// It is worked out by reading alone and checked against every `.deny` rule before anything is written, so a denied
/// delete leaves the transaction as it was.
struct DeletionPlan {
    /// The records to delete, each once, in the order they were found.
    private(set) var records: [(info: ModelInfo, key: [UInt8])] = []
    private var members: Set<RecordRef> = []
    /// For each record to delete, the records that link to it, by link, as planning read them: executing the plan
    /// drops the links of those that stay without reading the backlink indexes again.
    var linkedFrom: [(target: [UInt8], link: LinkInfo, sources: [[UInt8]])] = []

    func contains(model: String, key: [UInt8]) -> Bool { members.contains(RecordRef(model: model, key: key)) }

    mutating func add(_ info: ModelInfo, key: [UInt8]) {
        if members.insert(RecordRef(model: info.name, key: key)).inserted { records.append((info, key)) }
    }
}

/// A record named by its model's stored name and its key.
struct RecordRef: Hashable {
    let model: String
    let key: [UInt8]

    func hash(into hasher: inout Hasher) {
        hasher.combine(model)
        key.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

extension WriteTransaction {
    /// Works out what deleting `seeds` deletes by the links' rules and checks every `.deny` rule against the whole
    /// of it. `ignoring` names links that the write being planned removes, as if they were gone already.
    func planDeletion(
        of seeds: [(ModelInfo, [UInt8])], ignoring ignored: Set<LinkEdge> = []
    ) throws(StoreError) -> DeletionPlan {
        var plan = DeletionPlan()
        var queue = seeds.reversed().map { $0 }
        var ownedTargets: [(link: LinkInfo, target: [UInt8])] = []
        var deniedAsSource: [(RecordRef, LinkInfo, [[UInt8]])] = []
        var deniedAsTarget: [(RecordRef, LinkInfo, [[UInt8]])] = []
        func linking(_ target: [UInt8], via link: LinkInfo) throws(StoreError) -> [[UInt8]] {
            let found = try sources(linkingTo: target, via: link)
            guard !ignored.isEmpty else { return found }
            return found.filter { !ignored.contains(LinkEdge(link: link.label, target: target, source: $0)) }
        }
        repeat {
            while let (info, key) = queue.popLast() {
                guard !plan.contains(model: info.name, key: key),
                    let targets = try info.operations.linkTargets(self, info, key)
                else { continue }
                plan.add(info, key: key)
                let record = RecordRef(model: info.name, key: key)
                for (link, keys) in zip(info.links, targets) where !keys.isEmpty {
                    switch link.deleteRule {
                    case .cascade:
                        let target = try store.info(linkedBy: link)
                        queue.append(contentsOf: keys.map { (target, $0) })
                    case .deny:
                        deniedAsSource.append((record, link, keys))
                    case .nullify:
                        if link.ownsTargets { ownedTargets.append(contentsOf: keys.map { (link, $0) }) }
                    }
                }
                // A model the configuration does not name may link here too (an app extension opens the store with
                // fewer models): its rules cannot be followed without its type, so a record it links is not deleted.
                for foreign in try foreignLinks(to: info) {
                    guard let holder = try sources(linkingTo: key, in: foreign.database, limit: 1).first else {
                        continue
                    }
                    throw .deleteDenied(
                        model: info.name, id: KeyEncoding.describe(key),
                        reason: "the \(foreign.model) with id \(KeyEncoding.describe(holder)) links to it through "
                            + "\(foreign.model).\(foreign.link.property) (targetDeleteRule: .\(foreign.link.targetDeleteRule)), and "
                            + "this Store's configuration does not name \(foreign.model), so the rule cannot be followed; "
                            + "delete it through a Store whose configuration names \(foreign.model)")
                }
                for link in store.incomingLinks(to: info) {
                    let sources = try linking(key, via: link)
                    guard !sources.isEmpty else { continue }
                    plan.linkedFrom.append((key, link, sources))
                    switch link.targetDeleteRule {
                    case .cascade:
                        let source = try store.info(named: link.model)
                        queue.append(contentsOf: sources.map { (source, $0) })
                    case .deny:
                        deniedAsTarget.append((record, link, sources))
                    case .removeLink:
                        break
                    }
                }
            }
            // An owned target goes when every record that links to it through the owning link goes; what that
            // deletes may orphan more, so this runs until nothing new is found.
            var stillLinked: [(link: LinkInfo, target: [UInt8])] = []
            for (link, target) in ownedTargets where !plan.contains(model: link.targetName, key: target) {
                if try linking(target, via: link).allSatisfy({ plan.contains(model: link.model, key: $0) }) {
                    queue.append((try store.info(linkedBy: link), target))
                } else {
                    stillLinked.append((link, target))
                }
            }
            ownedTargets = stillLinked
        } while !queue.isEmpty
        // A delete pulled from another device has happened already: it wins over this device's `.deny` rules, and
        // its links from the records that stay are dropped as for `.removeLink`.
        if deletesDespiteDenyRules { return plan }
        for (record, link, targets) in deniedAsSource {
            let kept = targets.filter { !plan.contains(model: link.targetName, key: $0) }
            guard kept.isEmpty else {
                throw .deleteDenied(
                    model: record.model, id: KeyEncoding.describe(record.key),
                    reason:
                        "its \(link.name) links to \(countWords(kept.count, link.targetName)), and "
                        + "\(link.label) is declared with deleteRule: .deny; remove them from \(link.name) first")
            }
        }
        for (record, link, sources) in deniedAsTarget {
            let kept = sources.filter { !plan.contains(model: link.model, key: $0) }
            guard kept.isEmpty else {
                throw .deleteDenied(
                    model: record.model, id: KeyEncoding.describe(record.key),
                    reason: "\(countWords(kept.count, link.model)) still \(kept.count == 1 ? "links" : "link") to it "
                        + "through \(link.label), declared with targetDeleteRule: .deny; remove those links first")
            }
        }
        return plan
    }

    /// Deletes what `plan` holds: first drops the links to its records from the records that stay, each of those
    /// rewritten once, then deletes the records with their index and backlink entries.
    func execute(_ plan: DeletionPlan) throws(StoreError) {
        var rewrites: [RecordRef: [Int: [[UInt8]]]] = [:]
        var order: [(ModelInfo, RecordRef)] = []
        for (target, link, sources) in plan.linkedFrom {
            for source in sources where !plan.contains(model: link.model, key: source) {
                let record = RecordRef(model: link.model, key: source)
                if rewrites[record] == nil { order.append((try store.info(named: link.model), record)) }
                rewrites[record, default: [:]][link.position, default: []].append(target)
            }
        }
        // In key order, so that consecutive writes land on the same pages: each page is copied once per
        // transaction, and a random order would copy most of them once per record.
        order.sort { $0.0 === $1.0 ? SortedKeys.precedes($0.1.key, $1.1.key) : $0.0.name < $1.0.name }
        for (info, record) in order {
            try info.operations.removeLinks(self, info, record.key, rewrites[record] ?? [:])
        }
        let records = plan.records.sorted {
            $0.info === $1.info ? SortedKeys.precedes($0.key, $1.key) : $0.info.name < $1.info.name
        }
        for (info, key) in records { try info.operations.remove(self, key) }
    }
}

/// "1 Dog", "3 Dog records".
func countWords(_ number: Int, _ model: String) -> String { number == 1 ? "1 \(model)" : "\(number) \(model) records" }
