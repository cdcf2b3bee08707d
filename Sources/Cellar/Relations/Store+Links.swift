extension Store {
    /// The record `link` leads to in the newest version, or `nil` when it is gone.
    public func object<T: Model>(_ link: Link<T>) throws(StoreError) -> T? {
        try withSnapshot { (snapshot) throws(StoreError) in try snapshot.object(link) }
    }

    /// The record a to-one link leads to in the newest version; `nil` when the link is `nil` or its target is gone.
    public func object<T: Model>(_ link: Link<T>?) throws(StoreError) -> T? {
        try withSnapshot { (snapshot) throws(StoreError) in try snapshot.object(link) }
    }

    /// The records `links` lead to, in order, all from one version; links whose target is gone are left out. To
    /// resolve the links of many records from the version those records came from, call it inside `read`.
    public func resolve<T: Model>(_ links: [Link<T>]) throws(StoreError) -> [T] {
        try withSnapshot { (snapshot) throws(StoreError) in try snapshot.resolve(links) }
    }

    /// The records of `S` whose link `path` leads to `target`, frozen: Realm's `LinkingObjects`, from the index.
    ///
    /// ```swift
    /// let owners = try store.backlinks(to: taro, via: \Person.dogs)
    /// ```
    public func backlinks<S: Model, P: LinkProperty>(
        to target: P.Target, via path: KeyPath<S, P> & Sendable
    ) throws(StoreError) -> Results<S> {
        try objects(S.self).linking(to: target, via: path).results()
    }

    /// The one record of `S` whose exclusive link `path` leads to `target`, or `nil`.
    ///
    /// - Throws: `StoreError.linkNotExclusive` when the link is not declared `exclusive`.
    public func backlink<S: Model, P: LinkProperty>(
        to target: P.Target, via path: KeyPath<S, P> & Sendable
    ) throws(StoreError) -> S? {
        try withSnapshot { (snapshot) throws(StoreError) in try snapshot.backlink(to: target, via: path) }
    }
}
