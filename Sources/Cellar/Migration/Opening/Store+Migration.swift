import Foundation
import LMDB

/// What opening a store with a configuration would do to it, as `Store.pendingChanges(at:configuration:)` tells
/// without writing anything.
public struct PendingSchemaChanges: Sendable, Hashable {
    /// Every difference between the stored schema and the configuration's models, in Realm's words.
    public let changes: [SchemaChange]
    /// The file's schema version; `nil` when there is no store yet.
    public let storedSchemaVersion: Int?
    /// The versions of the migration steps opening would run, in order.
    public let migrationSteps: [Int]
    /// Whether opening would rewrite stored records (migration steps, declared renames and defaults): the moment to
    /// show "Updating…".
    public let rewritesRecords: Bool
    /// Changes that need a migration the configuration does not give: opening would throw
    /// `StoreError.migrationRequired` (or reset the store, when it is configured to).
    public let unmigratedChanges: [SchemaChange]

    /// Whether opening would change nothing at all.
    public var isEmpty: Bool { changes.isEmpty && migrationSteps.isEmpty }
}

extension Store {
    /// Opens the store, resetting it when the configuration asks and the reason allows; returns the open core and the
    /// registered models.
    static func open(
        _ directory: URL, configuration: Configuration, removeOnClose: Bool
    ) throws(StoreError) -> (StoreCore, [ObjectIdentifier: ModelInfo]) {
        let (core, isShared) = try StoreCore.openReportingShared(
            directory: directory, configuration: configuration, removeOnClose: removeOnClose)
        do throws(StoreError) {
            return (core, try core.register(configuration))
        } catch {
            let resets =
                switch error {
                case .migrationRequired: configuration.deleteStoreIfMigrationNeeded && configuration.allowsMigration
                case .migrationFailed: configuration.deleteStoreIfMigrationFails
                default: false
                }
            guard resets else { throw error }
            // Only a file no other `Store` of this process uses may be closed and deleted.
            guard !isShared else { throw .storeInUse(path: directory.path, process: nil) }
            core.closeUnshared()
            if let onReset = configuration.onReset {
                do {
                    try onReset(Configuration.StoreReset(directory: directory, reason: error))
                } catch {
                    throw .migrationFailed(
                        version: configuration.schemaVersion,
                        reason: "onReset threw \(error), so the store was not deleted")
                }
            }
            try Store.delete(at: directory)
            let fresh = try StoreCore.open(
                directory: directory, configuration: configuration, removeOnClose: removeOnClose)
            return (fresh, try fresh.register(configuration))
        }
    }

    /// What opening the store in `directory` with `configuration` would change, without writing anything: the schema
    /// changes, the migration steps that would run, and whether records would be rewritten. An app can show
    /// "Updating…" before a long migration, or decide not to open. As opening does, it decodes stored records with
    /// the models' own types to tell which changes need a migration: every record of a model whose fields changed,
    /// the first record of the others.
    ///
    /// - Throws: `StoreError.invalidSchema` when a model's schema breaks a rule opening enforces
    ///   (an index on a `Decimal`, a property renamed to one it does not have), as opening would; the errors of opening
    ///   a file (`incompatibleFile`, `corruptedFile`, `configurationConflict`).
    public static func pendingChanges(
        at directory: URL, configuration: Configuration
    ) throws(StoreError) -> PendingSchemaChanges {
        if FileSystem.entry(at: directory.path) == .file {
            throw .incompatibleFile(
                path: directory.path, reason: FileSystem.fileIsNotAFolder(directory.path, creates: true))
        }
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path) else {
            var changes: [SchemaChange] = []
            for type in configuration.models {
                _ = try type.described()
                changes.append(.modelAdded(model: try type.registration().name))
            }
            return PendingSchemaChanges(
                changes: changes, storedSchemaVersion: nil, migrationSteps: [], rewritesRecords: false,
                unmigratedChanges: [])
        }
        let core = try StoreCore.open(directory: directory, configuration: configuration)
        return try core.run("read the schema of the store") {
            try core.environment.read { txn in
                let opening = try core.openingPlan(for: configuration, in: txn)
                return PendingSchemaChanges(
                    changes: opening.changes, storedSchemaVersion: opening.storedVersion,
                    migrationSteps: opening.steps.map(\.version), rewritesRecords: opening.rewritesRecords,
                    unmigratedChanges: opening.unmigratedChanges)
            }
        }
    }
}

extension StoreCore {
    /// Throws `schemaChangedElsewhere` when another process raised the stored schema generation since this process
    /// registered its models: records may now be laid out as this process's models do not expect.
    func checkSchemaGeneration(_ txn: ReadTransaction) throws {
        guard try storedGeneration(in: txn) == schemaGeneration.load(ordering: .relaxed) else {
            throw StoreError.schemaChangedElsewhere(path: path)
        }
        checkedTransaction.store(txn.id, ordering: .relaxed)
    }
}
