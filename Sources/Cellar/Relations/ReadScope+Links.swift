import LMDB

extension ReadScope {
    /// The record `link` leads to, or `nil` when it was deleted (or, for a link that may dangle, never existed).
    public func object<T: Model>(_ link: Link<T>) throws(StoreError) -> T? {
        try fetch(T.self, id: link.id)
    }

    /// The record a to-one link leads to; `nil` when the link is `nil` or its target is gone.
    public func object<T: Model>(_ link: Link<T>?) throws(StoreError) -> T? {
        guard let link else { return nil }
        return try object(link)
    }

    /// The records `links` lead to, in the list's order (a target listed twice comes twice), all read from this
    /// scope's version; links whose target is gone are left out.
    public func resolve<T: Model>(_ links: [Link<T>]) throws(StoreError) -> [T] {
        var found: [T] = []
        found.reserveCapacity(links.count)
        for link in links {
            if let value = try object(link) { found.append(value) }
        }
        return found
    }

    /// The records `ids` name, decoded, and where each id's record is among them (`nil` where none is stored), in
    /// the order of `ids`, and how many distinct ids were looked up: what `including` reads. Each distinct record is
    /// found once, however often it is named, through one cursor whose entries point into this transaction's pages,
    /// then all are decoded together, on every core when there are many (as a query's records are).
    func fetchEach<T: Model>(_ type: T.Type, ids: [T.ID]) throws(StoreError) -> (
        records: [T], positions: [Int?], lookups: Int
    ) {
        let info = try modelInfo(for: T.self)
        let txn = try lmdb
        // Where each distinct id's entry is (`nil`: none stored); integer ids, the most common, keyed by value.
        var integerPositions: [Int64: Int?] = [:]
        var keyPositions: [KeyBytes: Int?] = [:]
        var entries: [Entry] = []
        var positions: [Int?] = []
        positions.reserveCapacity(ids.count)
        try store.core.run("read") {
            try txn.withCursor(info.records) { cursor in
                for id in ids {
                    if let integer = KeyEncoding.signedInteger(id) {
                        if let earlier = integerPositions[integer] {
                            positions.append(earlier)
                            continue
                        }
                        let found = try cursor.seek(to: KeyEncoding.SignedKey(integer).write(to: integerKey))
                        let position = found.map { entry in
                            entries.append(entry)
                            return entries.count - 1
                        }
                        integerPositions[integer] = position
                        positions.append(position)
                    } else {
                        let key = try primaryKey(id, of: T.self)
                        if let earlier = keyPositions[KeyBytes(key)] {
                            positions.append(earlier)
                            continue
                        }
                        let found = try key.withUnsafeBytes { key in try cursor.seek(to: key) }
                        let position = found.map { entry in
                            entries.append(entry)
                            return entries.count - 1
                        }
                        keyPositions[KeyBytes(key)] = position
                        positions.append(position)
                    }
                }
            }
        }
        return (try decodeAll(T.self, entries, info: info), positions, integerPositions.count + keyPositions.count)
    }

    /// The records of `S` whose link `path` leads to `target`, in primary-key order: Realm's `LinkingObjects`.
    /// For a query to filter, sort or count, use `objects(S.self).linking(to:via:)`.
    public func backlinks<S: Model, P: LinkProperty>(
        to target: P.Target, via path: KeyPath<S, P> & Sendable
    ) throws(StoreError) -> Results<S> {
        try objects(S.self).linking(to: target, via: path).results()
    }

    /// The one record of `S` whose exclusive link `path` leads to `target`, or `nil`: the to-one inverse of an
    /// exclusive link, such as a dog's owner.
    ///
    /// - Throws: `StoreError.linkNotExclusive` when the link is not declared `exclusive`.
    public func backlink<S: Model, P: LinkProperty>(
        to target: P.Target, via path: KeyPath<S, P> & Sendable
    ) throws(StoreError) -> S? {
        try objects(S.self).linking(to: target, via: path).exclusiveBacklink()
    }

    /// The distinct target keys of one link property of `value`, in the order they first appear.
    func targetKeys<M: Model>(_ relationship: Relationship<M>, of value: M) throws(StoreError) -> [[UInt8]] {
        let keys: [[UInt8]]
        do {
            keys = try relationship.targetKeys(value)
        } catch {
            throw .invalidKey(model: relationship.targetName, reason: "a link's id cannot be a key: \(error)")
        }
        // A target's key is a primary key: one too long for LMDB cannot name a record, and cannot be stored.
        let limit = store.core.environment.maxKeySize
        if let long = keys.first(where: { $0.count > limit }) {
            throw .keyTooLong(model: relationship.targetName, property: "id", length: long.count, limit: limit)
        }
        guard keys.count > 1 else { return keys }
        if keys.count <= 16 {
            // Short lists, the common case, are checked pairwise: no set to build and hash.
            var distinct: [[UInt8]] = []
            distinct.reserveCapacity(keys.count)
            for key in keys where !distinct.contains(key) { distinct.append(key) }
            return distinct
        }
        var seen = Set<KeyBytes>()
        return keys.filter { seen.insert(KeyBytes($0)).inserted }
    }

    /// How many records link to `target` through `link`: LMDB keeps the count of a key's values, so this is one
    /// lookup however many there are.
    func linkCount(to target: [UInt8], via link: LinkInfo) throws(StoreError) -> Int {
        let txn = try lmdb
        return try store.core.run("count a backlink index") { try txn.duplicateCount(of: target, in: link.database) }
    }

    /// The keys of the records that link to `target` through `link`, in key order, at most `limit` of them.
    func sources(linkingTo target: [UInt8], via link: LinkInfo, limit: Int = .max) throws(StoreError) -> [[UInt8]] {
        try sources(linkingTo: target, in: link.database, limit: limit)
    }

    /// The keys of the records that link to `target`, as the backlink database `backlinks` holds them.
    func sources(linkingTo target: [UInt8], in backlinks: Database, limit: Int = .max) throws(StoreError) -> [[UInt8]] {
        let txn = try lmdb
        var found: [[UInt8]] = []
        try store.core.run("read a backlink index") {
            try txn.forEachDuplicate(of: target, in: backlinks) { source in
                found.append(Array(source))
                return found.count < limit
            }
        }
        return found
    }
}
