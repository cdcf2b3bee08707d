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
