import LMDB

/// How a store is opened.
public struct Configuration: Sendable {
    /// The models the store holds. Using a model not listed here throws `StoreError.modelNotRegistered`.
    public var models: [any Model.Type]
    /// The version of the models' schema. Raise it when models change; opening a store written with a higher
    /// version throws `StoreError.schemaVersionTooLow` instead of downgrading it.
    public var schemaVersion: Int
    /// How far each commit is flushed to disk before `write` returns.
    public var durability: Durability
    /// The map size to start with, in bytes. The store grows the map by itself when it fills up, so this only
    /// saves a few early resizes.
    public var initialMapSize: Int
    /// How many reads may be open at once across every process using the store.
    public var maxReaders: Int

    /// Durability of a commit.
    public enum Durability: Sendable, Hashable {
        /// Every commit is flushed with `fsync`: once `write` returns, the transaction survives a crash or power
        /// loss. The default.
        case full
        /// The metadata page is flushed with the next commit (`MDB_NOMETASYNC`). A crash or power loss may lose
        /// the last committed transaction, but the file stays sound.
        case relaxed
        /// Nothing is flushed (`MDB_NOSYNC`); the operating system writes pages when it likes. A process crash
        /// loses nothing, but a power loss may lose recent transactions and, on some filesystems, corrupt the
        /// file. For caches and tests only.
        case none

        init(_ sync: SyncMode) {
            switch sync {
            case .full: self = .full
            case .noMetaSync: self = .relaxed
            case .noSync: self = .none
            }
        }
    }

    /// A configuration for `models`.
    public init(
        models: [any Model.Type], schemaVersion: Int = 1, durability: Durability = .full,
        initialMapSize: Int = 64 << 20, maxReaders: Int = 512
    ) {
        self.models = models
        self.schemaVersion = schemaVersion
        self.durability = durability
        self.initialMapSize = initialMapSize
        self.maxReaders = maxReaders
    }

    /// Throws `configurationConflict` when the store is open in this process with settings that differ from
    /// these. The initial map size is the first opening's: the map grows by itself, so it never conflicts.
    func checkCompatible(withOpen open: EnvironmentOptions, path: String) throws(StoreError) {
        let requested = environmentOptions
        if open.sync != requested.sync {
            throw .configurationConflict(
                path: path,
                reason: "it is open with durability \(Durability(open.sync)), and this configuration asks for "
                    + "\(durability)")
        }
        if open.maxReaders != requested.maxReaders {
            throw .configurationConflict(
                path: path,
                reason: "it is open with maxReaders \(open.maxReaders), and this configuration asks for \(maxReaders)")
        }
    }

    var environmentOptions: EnvironmentOptions {
        var options = EnvironmentOptions()
        options.mapSize = initialMapSize
        options.maxReaders = maxReaders
        options.sync =
            switch durability {
            case .full: .full
            case .relaxed: .noMetaSync
            case .none: .noSync
            }
        return options
    }
}
