import Foundation
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
    /// The steps that migrate stored records to `schemaVersion`, one per version that needs one.
    public var migrations: [MigrationStep]
    /// Start with an empty store, instead of throwing `StoreError.migrationRequired`, when the models changed in a way
    /// that needs a migration and none is given (Realm's `deleteRealmIfMigrationNeeded`). For caches and early
    /// development. A store another process has open is never deleted: that is `StoreError.storeInUse`.
    public var deleteStoreIfMigrationNeeded = false
    /// Start with an empty store when a migration step throws, instead of throwing `StoreError.migrationFailed`:
    /// for data that can be fetched again. Never while another process has the store open.
    public var deleteStoreIfMigrationFails = false
    /// Runs before either reset deletes the store, with the folder and the reason: copy the files away to keep them.
    /// When it throws, nothing is deleted and opening throws `StoreError.migrationFailed`.
    public var onReset: (@Sendable (StoreReset) throws -> Void)?
    /// Whether this opening may rewrite stored records: run migration steps, apply declared renames and defaults.
    /// Set it to `false` in an app extension, so that only the app migrates; the extension then gets
    /// `StoreError.migrationRequired` until the app has.
    public var allowsMigration = true
    /// Whether a query that decodes many records (4,096 or more) decodes them on every core (up to 8), inside its read
    /// transaction. Set it to `false` to keep each query on its caller's thread: in an app extension with a tight CPU
    /// budget, or to compare with a one-core engine. Models with generated record code (`@Record`) always decode on
    /// the caller's thread, as the walk reaches each record: handing records to other cores costs them more than it
    /// saves.
    public var decodesInParallel = true
    /// Open the store for reading only (Realm's `readOnly`): a store shipped in an app bundle, on a read-only volume,
    /// or owned by another user. The store must exist and its stored schema must match the models (nothing is
    /// migrated, no index built); writes throw `StoreError.readOnly`. When the lock file cannot be written, the
    /// store is read without LMDB's locks, and then no other process may write it meanwhile: see the README's
    /// "Read-only stores".
    public var readOnly = false

    /// Why a store is about to be deleted and started afresh, as `onReset` is told.
    public struct StoreReset: Sendable {
        /// The store's folder.
        public let directory: URL
        /// The changes that needed a migration (`deleteStoreIfMigrationNeeded`), or the error the migration threw
        /// (`deleteStoreIfMigrationFails`).
        public let reason: StoreError
    }

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
        initialMapSize: Int = 64 << 20, maxReaders: Int = 512, migrations: [MigrationStep] = []
    ) {
        self.models = models
        self.schemaVersion = schemaVersion
        self.durability = durability
        self.initialMapSize = initialMapSize
        self.maxReaders = maxReaders
        self.migrations = migrations
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
        if open.readOnly != requested.readOnly {
            throw .configurationConflict(
                path: path,
                reason: open.readOnly
                    ? "it is open read-only, and this configuration asks to write it"
                    : "it is open for writing, and this configuration asks for a read-only store; share that Store")
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
        options.readOnly = readOnly
        options.sync =
            switch durability {
            case .full: .full
            case .relaxed: .noMetaSync
            case .none: .noSync
            }
        return options
    }
}
