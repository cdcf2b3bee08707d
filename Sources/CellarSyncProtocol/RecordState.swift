/// One record as sync knows it: its properties as JSON, the stamp of each property's last write, and, once it is
/// deleted, the stamp of its deletion. The server keeps one per row; a device builds one from its stored record.
///
/// ``merged(with:)`` is the conflict rule, the one both sides run:
/// - **Per property, the later write wins**: each property takes the value whose stamp is greater. Two devices that
///   change different properties of one record concurrently both keep their change. A property is a whole value:
///   a list, a nested structure or a dictionary is replaced, never merged element by element.
/// - **A delete wins**: once a record is deleted on any device, it stays deleted, even against a concurrent or later
///   update (Realm's rule). Its id is not used again.
///
/// The rule is a semilattice (the merge is commutative, associative and idempotent), so devices that have seen the
/// same writes hold the same records, in whatever order and however often the writes reached them.
public struct RecordState: Sendable, Hashable {
    /// The properties, by their coding keys. A property set to `nil` is `.null` or missing.
    public var fields: [String: JSONValue]
    /// The stamp of each property's last write.
    public var stamps: [String: SyncStamp]
    /// The stamp of the delete, for a deleted record (a tombstone): `fields` and `stamps` are empty then.
    public var deleted: SyncStamp?

    public init(fields: [String: JSONValue] = [:], stamps: [String: SyncStamp] = [:], deleted: SyncStamp? = nil) {
        self.fields = fields
        self.stamps = stamps
        self.deleted = deleted
    }

    /// A tombstone deleted at `stamp`.
    public static func tombstone(_ stamp: SyncStamp) -> RecordState { RecordState(deleted: stamp) }

    /// The greatest stamp in the record: its version.
    public var version: SyncStamp? { deleted ?? stamps.values.max() }

    /// The record both `self` and `other` merge to.
    public func merged(with other: RecordState) -> RecordState {
        switch (deleted, other.deleted) {
        case (let mine?, let theirs?): return .tombstone(Swift.max(mine, theirs))
        case (let mine?, nil): return .tombstone(mine)
        case (nil, let theirs?): return .tombstone(theirs)
        case (nil, nil): break
        }
        var result = RecordState()
        for name in Set(stamps.keys).union(other.stamps.keys) {
            let mine = stamps[name]
            let theirs = other.stamps[name]
            let value: JSONValue
            let stamp: SyncStamp
            switch (mine, theirs) {
            case (let mine?, let theirs?) where mine == theirs:
                // The same write, or (only from a faulty peer) two values under one stamp: both sides pick the
                // value whose canonical text sorts last.
                let left = fields[name] ?? .null
                let right = other.fields[name] ?? .null
                value = left.canonicalText >= right.canonicalText ? left : right
                stamp = mine
            case (let mine?, let theirs?):
                (value, stamp) = mine > theirs ? (fields[name] ?? .null, mine) : (other.fields[name] ?? .null, theirs)
            case (let mine?, nil):
                (value, stamp) = (fields[name] ?? .null, mine)
            case (nil, let theirs?):
                (value, stamp) = (other.fields[name] ?? .null, theirs)
            case (nil, nil):
                continue
            }
            result.stamps[name] = stamp
            if value != .null { result.fields[name] = value }
        }
        return result
    }
}
