import LMDB

/// The records of a query that link to given targets through one of their model's links.
struct LinkFilter<M: Model>: Sendable {
    /// The link's position in `M.schema.links`, or the error the query throws when it runs.
    let position: Result<Int, StoreError>
    /// The targets' primary keys, read in the query's scope.
    let targets: @Sendable (ReadScope) throws(StoreError) -> [[UInt8]]
    /// The targets in words, for `explain()`.
    let describeTargets: @Sendable (ReadScope) throws(StoreError) -> String
    /// The models whose changes can change the targets, besides the query's own.
    let targetsRead: Set<String>
}

/// Leaves out of a query the records some record links to through one link.
struct LinkExclusion: Sendable {
    /// The link, found in the scope's store when the query runs.
    let link: @Sendable (Store) throws(StoreError) -> LinkInfo
    /// The stored name of the model that holds the link: its changes can change the query.
    let model: String
}

extension Query {
    /// The records whose link `path` leads to `target`: "who links to this dog". Read from the link's backlink
    /// index, so the records are found without reading any other; `count` reads the index alone.
    ///
    /// ```swift
    /// let owners = try store.objects(Person.self).linking(to: taro, via: \.dogs).results()
    /// ```
    public func linking<P: LinkProperty>(to target: P.Target, via path: KeyPath<M, P> & Sendable) -> Query {
        let id = target.id
        return linking(
            via: path,
            targets: { (scope) throws(StoreError) in [try scope.primaryKey(id, of: P.Target.self)] },
            describe: { (scope) throws(StoreError) in
                "\(P.Target.schema.name) \(KeyEncoding.describe(try scope.primaryKey(id, of: P.Target.self)))"
            }, targetsRead: [])
    }

    /// The records whose link `path` leads to any of the records `targets` finds, each record once: "people who
    /// own a dog aged 3 or more". The targets are found in the same version as the records, then each one's
    /// backlinks are read from the index; no record of `M` is read that does not link to one.
    ///
    /// ```swift
    /// let oldDogs = store.objects(Dog.self).where(\.age >= 3)
    /// let owners = try store.objects(Person.self).backlinking(oldDogs, via: \.dogs).results()
    /// ```
    public func backlinking<P: LinkProperty>(_ targets: Query<P.Target>, via path: KeyPath<M, P> & Sendable)
        -> Query
    {
        linking(
            via: path, targets: { (scope) throws(StoreError) in try targets.primaryKeys(in: scope) },
            describe: { (scope) throws(StoreError) in
                let info = try scope.store.info(for: P.Target.self)
                let plan = try targets.describe(
                    try targets.plan(info: info, context: scope), info: info, context: scope)
                return "the \(info.name) records found by (\(plan))"
            }, targetsRead: targets.modelsRead)
    }

    /// The records whose link `path` leads to any of `targets` (a `Results`, an array), each record once.
    public func backlinking<P: LinkProperty, Targets: Sequence<P.Target>>(
        _ targets: Targets, via path: KeyPath<M, P> & Sendable
    ) -> Query {
        let ids = targets.map(\.id)
        return linking(
            via: path,
            targets: { (scope) throws(StoreError) in
                try ids.map { (id) throws(StoreError) in try scope.primaryKey(id, of: P.Target.self) }
            },
            describe: { _ in "\(ids.count) given \(P.Target.schema.name) records" }, targetsRead: [])
    }

    /// Leaves out the records that any record of `S` links to through `path`: the orphans of a link, such as the
    /// dogs in nobody's list. Each record's key is looked up in the link's backlink index.
    public func notLinked<S: Model, P: LinkProperty>(from path: KeyPath<S, P> & Sendable) -> Query
    where P.Target == M {
        var query = self
        let position = S.schema.links.firstIndex { $0.keyPath == path }
        let name = Index<S>.propertyName(path)
        query.exclusions.append(
            LinkExclusion(
                link: { (store) throws(StoreError) in
                    guard let position else { throw .linkNotDeclared(model: S.schema.name, property: name) }
                    return try store.info(for: S.self).links[position]
                }, model: S.storedName))
        return query
    }

    private func linking<P: LinkProperty>(
        via path: KeyPath<M, P> & Sendable, targets: @escaping @Sendable (ReadScope) throws(StoreError) -> [[UInt8]],
        describe: @escaping @Sendable (ReadScope) throws(StoreError) -> String, targetsRead: Set<String>
    ) -> Query {
        var query = self
        let position = M.schema.links.firstIndex { $0.keyPath == path }
        query.linkFilter = LinkFilter(
            position: position.map { .success($0) }
                ?? .failure(.linkNotDeclared(model: M.schema.name, property: Index<M>.propertyName(path))),
            targets: targets, describeTargets: describe, targetsRead: targetsRead)
        return query
    }

    /// The primary keys of the matching records: from the index (or the ids' ranges) alone when it decides the query,
    /// without reading the records.
    func primaryKeys(in context: ReadScope) throws(StoreError) -> [[UInt8]] {
        let info = try context.store.info(for: M.self)
        let plan = try plan(info: info, context: context)
        let unshaped = ordering.isEmpty && distinctKey == nil && limitCount == nil && skipCount == 0
        if unshaped, exclusions.isEmpty, plan.indexDecides {
            // The index entries' values are the keys; the ids' ranges in the records database are the keys.
            let source: (database: Database, ranges: [KeyRange], keyIsValue: Bool)? =
                switch plan.access {
                case .indexRanges(let position, let ranges): (info.indexes[position], ranges, true)
                case .primaryKeyRanges(let ranges): (info.records, ranges, false)
                default: nil
                }
            if let source {
                let txn = try context.lmdb
                var keys: [[UInt8]] = []
                try context.store.core.run("read") {
                    for range in source.ranges {
                        try txn.walk(source.database, range: range) { entry in
                            keys.append(Array(source.keyIsValue ? entry.value : entry.key))
                            return true
                        }
                    }
                }
                return keys
            }
        }
        return try execute(in: context, info: info).map { (value) throws(StoreError) in
            try context.primaryKey(value.id, of: M.self)
        }
    }

    /// The keys of the records that link to the filter's targets, each once, in key order.
    /// The one record a `linking(to:via:)` query finds through an exclusive link, or `nil`.
    ///
    /// - Throws: `StoreError.linkNotExclusive` when the link is not declared `exclusive`.
    func exclusiveBacklink() throws(StoreError) -> M? {
        try run { (context) throws(StoreError) in
            let info = try context.store.info(for: M.self)
            if let filter = linkFilter, case .success(let position) = filter.position,
                !info.links[position].isExclusive
            {
                throw .linkNotExclusive(link: info.links[position].label)
            }
            return try limit(1).execute(in: context, info: info).first
        }
    }

    func linkingKeys(_ filter: LinkFilter<M>, link: LinkInfo, in context: ReadScope) throws(StoreError) -> [[UInt8]] {
        let targets = try filter.targets(context)
        if targets.count == 1 { return try context.sources(linkingTo: targets[0], via: link) }
        var found = SortedKeys()
        let txn = try context.lmdb
        try context.store.core.run("read a backlink index") {
            try txn.forEachDuplicate(ofEach: targets, in: link.database) { source in found.insert(source) }
        }
        return found.sorted()
    }
}
