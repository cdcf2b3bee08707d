import Foundation

/// What deleting the record that holds a link does to the records it links to (SwiftData's `deleteRule`).
public enum DeleteRule: String, Sendable, Hashable {
    /// The targets stay; only the links go, with the record. The default.
    case nullify
    /// The targets are deleted too, and theirs by their own rules; a cycle ends where it started.
    case cascade
    /// The record cannot be deleted while the link holds any target: `StoreError.deleteDenied`.
    case deny
}

/// What deleting a linked record does to the records that link to it (SQL's `ON DELETE` on a foreign key).
public enum TargetDeleteRule: String, Sendable, Hashable {
    /// Every link to the deleted record is removed: list entries are dropped and a to-one link becomes `nil`,
    /// rewriting the linking records in the same transaction. The default.
    case removeLink
    /// The records that link to it are deleted too (SQL's `ON DELETE CASCADE`).
    case cascade
    /// The record cannot be deleted while anything links to it: `StoreError.deleteDenied`.
    case deny
}

/// A link property declared in a model's `Schema`: `.link(\.dogs, deleteRule: .cascade)`.
///
/// Each declared link gets a backlink index, the LMDB database `b/<Model>.<name>`, mapping each target's key to the
/// keys of the records that link to it. Every write keeps it in step inside the same transaction, so "who links to
/// this dog" and "owners of dogs aged 3 or more" are index reads, and deleting either end can follow its rule.
public struct Relationship<M: Model>: Sendable {
    /// The link's name: its property's name (`dogs`).
    public let name: String
    /// What deleting a record of `M` does to its targets.
    public let deleteRule: DeleteRule
    /// What deleting a target does to the records of `M` that link to it.
    public let targetDeleteRule: TargetDeleteRule
    /// Whether a target may sit in at most one record's link, which makes the backlink a true to-one inverse.
    public let isExclusive: Bool
    /// Whether the link owns its targets: a target that loses its last link through this property is deleted.
    public let ownsTargets: Bool
    /// Whether a link may name a record that does not exist; otherwise such a commit throws `linkTargetMissing`.
    public let allowsDangling: Bool
    // Key paths are immutable values; stored unchecked only because `PartialKeyPath` is not `Sendable`.
    nonisolated(unsafe) let keyPath: PartialKeyPath<M>
    let targetType: any Model.Type
    /// The stored name of the target model. Read when the store opens, not when the schema is made: two models that
    /// link to each other would otherwise each need the other's schema to make their own.
    var targetName: String { targetType.storedName }
    /// The targets' primary keys in the record, in order, repeats included.
    let targetKeys: @Sendable (M) throws -> [[UInt8]]
    /// Drops every link to one of `keys` (a few, usually one) from the record.
    let removeTargets: @Sendable (inout M, [[UInt8]]) throws -> Void
    /// Whether the property is a list of links (`[Link<T>]`) rather than a to-one link (`Link<T>?`).
    let isList: Bool
    /// The number, among `StoredFields.keys(of:)`, of the record field that holds the property; `nil` when the
    /// model's fields cannot be tied to its properties, or the target's id is of a type whose key `LinkBytes` does
    /// not read from bytes.
    let storedField: @Sendable () -> Int?

    /// An ordered to-many link, Realm's `List<Target>`.
    ///
    /// - Parameters:
    ///   - path: the list property, such as `\.dogs`.
    ///   - deleteRule: what deleting the record does to its targets; `.nullify` leaves them.
    ///   - targetDeleteRule: what deleting a target does to this record; `.removeLink` drops it from the list.
    ///   - exclusive: a target may be in one record's list at most; a second is refused with
    ///     `StoreError.exclusiveLinkViolated`, and `backlink(to:via:)` gives the one record.
    ///   - ownsTargets: a target dropped from the last list that held it is deleted (Realm's embedded objects, as
    ///     separate records).
    ///   - allowsDangling: a link may name a record that does not exist (yet); `object(link)` then gives `nil`.
    ///   - name: the backlink index's name; the property's name when `nil`.
    public static func link<T: Model>(
        _ path: WritableKeyPath<M, [Link<T>]> & Sendable, deleteRule: DeleteRule = .nullify,
        targetDeleteRule: TargetDeleteRule = .removeLink, exclusive: Bool = false, ownsTargets: Bool = false,
        allowsDangling: Bool = false, name: String? = nil
    ) -> Relationship {
        Relationship(
            name: name ?? Index<M>.propertyName(path), deleteRule: deleteRule, targetDeleteRule: targetDeleteRule,
            isExclusive: exclusive, ownsTargets: ownsTargets, allowsDangling: allowsDangling,
            keyPath: path, targetType: T.self,
            targetKeys: { [reader = PropertyReader(path)] value in
                let links = reader.read(value)
                var keys: [[UInt8]] = []
                keys.reserveCapacity(links.count)
                for link in links { keys.append(try KeyEncoding.key(link.id)) }
                return keys
            },
            removeTargets: { value, keys in
                var key: [UInt8] = []
                try value[keyPath: path].removeAll { link in
                    key.removeAll(keepingCapacity: true)
                    try KeyEncoding.append(link.id, to: &key)
                    return keys.contains(key)
                }
            }, isList: true, storedField: { hasPlainID(T.self) ? StoredFields.field(of: path)?.number : nil })
    }

    /// A to-one link. Its inverse is a list of the records that link to a target, or one record when `exclusive`.
    ///
    /// The parameters are those of the list form; `.removeLink` sets the property to `nil`.
    public static func link<T: Model>(
        _ path: WritableKeyPath<M, Link<T>?> & Sendable, deleteRule: DeleteRule = .nullify,
        targetDeleteRule: TargetDeleteRule = .removeLink, exclusive: Bool = false, ownsTargets: Bool = false,
        allowsDangling: Bool = false, name: String? = nil
    ) -> Relationship {
        Relationship(
            name: name ?? Index<M>.propertyName(path), deleteRule: deleteRule, targetDeleteRule: targetDeleteRule,
            isExclusive: exclusive, ownsTargets: ownsTargets, allowsDangling: allowsDangling,
            keyPath: path, targetType: T.self,
            targetKeys: { [reader = PropertyReader(path)] value in
                try reader.read(value).map { [try KeyEncoding.key($0.id)] } ?? []
            },
            removeTargets: { value, keys in
                if let link = value[keyPath: path], keys.contains(try KeyEncoding.key(link.id)) {
                    value[keyPath: path] = nil
                }
            }, isList: false, storedField: { hasPlainID(T.self) ? StoredFields.field(of: path)?.number : nil })
    }

    /// The database holding the backlinks: target key → keys of the records of `M` linking to it.
    func databaseName(model: String) -> String { DatabaseName.backlinks(model, name) }

    /// The link and its rules in words, to tell whether two configurations open at once agree.
    func signature(model: String) -> String {
        DatabaseName.backlinks(model, descriptor(model: model).label)
    }

    /// The link as the stored schema describes it.
    func descriptor(model: String) -> StoredLink {
        StoredLink(
            property: name, target: targetName, database: databaseName(model: model),
            deleteRule: deleteRule.rawValue, targetDeleteRule: targetDeleteRule.rawValue, isExclusive: isExclusive,
            ownsTargets: ownsTargets, allowsDangling: allowsDangling)
    }
}

/// Whether `T`'s ids are `Int64`, `Int`, `String` or `UUID`: stored as the record format's int64, text and uuid
/// values, whose keys `LinkBytes` makes from their bytes. Another id type, even one stored the same way, may decode
/// its bytes to another value (an `init(from:)` of its own), and so to another key.
private func hasPlainID<T: Model>(_: T.Type) -> Bool {
    T.ID.self == Int64.self || T.ID.self == Int.self || T.ID.self == String.self || T.ID.self == UUID.self
}

extension Model {
    /// The name the model is stored under.
    static var storedName: String { schema.name }
}
