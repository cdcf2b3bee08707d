import Cellar

/// A model that resolves its own conflicts, instead of each property taking its later write.
///
/// ```swift
/// struct Counter: Model, SyncResolving {
///     var id = UUID()
///     var taps: Int
///     // Two devices that each added taps offline keep both additions.
///     static func resolve(local: Counter, remote: Counter, base: Counter?) -> Counter {
///         var merged = remote
///         merged.taps = remote.taps + local.taps - (base?.taps ?? 0)
///         return merged
///     }
/// }
/// ```
///
/// `resolve` runs on a device that pulls a change of a record it has changed too and not pushed yet: `local` is this
/// device's record, `remote` the server's, `base` the record as this device and the server last agreed on it (`nil`
/// when this device has not synced the record before). What it returns is written here and pushed, its properties
/// that differ from `remote` stamped as this device's change, so that every device ends with it. ``SyncClient/sync()``
/// pulls before it pushes, so two devices that edited one record offline meet in the resolver on the second device's
/// sync. Changes that reach the server from two devices before either pulls are merged there per property, as for
/// any model. A delete still wins over any update: `resolve` is not asked about deleted records.
///
/// It must be a function of its arguments (no clock, no randomness): a device may call it again for the same
/// conflict after a failed push.
public protocol SyncResolving: Model {
    static func resolve(local: Self, remote: Self, base: Self?) -> Self
}
