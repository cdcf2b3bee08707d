import LMDB

/// The records of a query that link to given targets through one of their model's links.
struct LinkFilter<M: Model>: Sendable {
    /// The link's position in `M.schema.links`, or the error the query throws when it runs.
    let position: Result<Int, StoreError>
    /// The targets' primary keys, read in the query's scope.
    let targets: @Sendable (ReadScope) throws(StoreError) -> SortedKeys
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
            targets: { (scope) throws(StoreError) in
                var keys = SortedKeys()
                keys.insert(try scope.primaryKey(id, of: P.Target.self))
                return keys
            },
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
            via: path,
            targets: { (scope) throws(StoreError) in
                var keys = SortedKeys()
                try targets.forEachPrimaryKey(in: scope) { keys.insert($0) }
                return keys
            },
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
                var keys = SortedKeys()
                for id in ids { keys.insert(try scope.primaryKey(id, of: P.Target.self)) }
                return keys
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
        via path: KeyPath<M, P> & Sendable, targets: @escaping @Sendable (ReadScope) throws(StoreError) -> SortedKeys,
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

    /// The primary keys of the matching records, in the query's order.
    func primaryKeys(in context: ReadScope) throws(StoreError) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try forEachPrimaryKey(in: context) { keys.append(Array($0)) }
        return keys
    }

    /// Hands `body` the primary key of each matching record: from the index (or the ids' ranges) alone when it
    /// decides the query, without reading the records.
    func forEachPrimaryKey(
        in context: ReadScope, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws(StoreError) {
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
                try context.store.core.run("read") {
                    for range in source.ranges {
                        try txn.walk(source.database, range: range) { entry in
                            body(source.keyIsValue ? entry.value : entry.key)
                            return true
                        }
                    }
                }
                return
            }
        }
        for value in try execute(in: context, info: info) {
            try context.primaryKey(value.id, of: M.self).withUnsafeBytes { body($0) }
        }
    }

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

    /// The keys of the records that link to the filter's targets, each once.
    func linkingKeys(_ filter: LinkFilter<M>, link: LinkInfo, in context: ReadScope) throws(StoreError) -> SortedKeys {
        try linkingKeys(to: try filter.targets(context), link: link, in: context)
    }

    /// The keys of the records that link to `targets`, each once. The targets are visited in key order with one
    /// cursor, which steps to the next key of the backlink database while a target is near (the targets of a broad
    /// query are most of its keys) and seeks to it otherwise.
    func linkingKeys(to targets: SortedKeys, link: LinkInfo, in context: ReadScope) throws(StoreError) -> SortedKeys {
        var found = SortedKeys()
        let txn = try context.lmdb
        try context.store.core.run("read a backlink index") {
            try txn.withCursor(link.database) { cursor in
                // The first entry of the key the cursor stands on; `nil` before the first target and past the end.
                var current: Entry? = nil
                var started = false
                try targets.forEachSorted { (target) throws(LMDBError) in
                    var steps = 0
                    while let entry = current, SortedKeys.compare(entry.key, target) < 0, steps < Self.stepsBeforeSeek {
                        current = try cursor.nextKey()
                        steps += 1
                    }
                    if !started || current.map({ SortedKeys.compare($0.key, target) < 0 }) == true {
                        current = try cursor.seek(atLeast: target)
                        started = true
                    }
                    guard let entry = current, SortedKeys.compare(entry.key, target) == 0 else { return true }
                    found.insert(entry.value)
                    while let duplicate = try cursor.nextDuplicate() { found.insert(duplicate.value) }
                    current = try cursor.nextKey()
                    return true
                }
            }
        }
        return found
    }

    /// How many keys a backlink walk steps over before it seeks to a target instead: a step (`MDB_NEXT_NODUP` and a
    /// comparison) costs about 300 instructions, a seek about 1,100 (callgrind).
    private static var stepsBeforeSeek: Int { 3 }
}
