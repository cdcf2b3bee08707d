import Foundation
import LMDB

/// Every error Cellar throws. Each case says what happened; its `description` also says what to do.
///
/// A throw inside `write` aborts the whole transaction, so after any of these the store holds exactly what it
/// held before.
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// `insert` found a record with the same primary key.
    case duplicatePrimaryKey(model: String, id: String)
    /// `update` (or another call that needs the record) found no record with this primary key.
    case objectNotFound(model: String, id: String)
    /// A write would give two records the same value in a unique index; the transaction writes nothing.
    case uniqueConstraintViolated(model: String, index: String, value: String)
    /// A delete rule refused the delete: a `.deny` link still holds targets, or records still link to the record
    /// through a link whose target delete rule is `.deny`. Nothing was deleted.
    case deleteDenied(model: String, id: String, reason: String)
    /// The transaction would commit a link (`Person.dogs` of the record `source`) to a record that does not exist.
    /// Checked at commit, so records may be inserted in any order inside one transaction.
    case linkTargetMissing(link: String, source: String, target: String, targetID: String)
    /// A target of an exclusive link was added to a second record's link.
    case exclusiveLinkViolated(link: String, target: String, holder: String)
    /// A query or read named a link property that the model's `Schema.links` does not declare.
    case linkNotDeclared(model: String, property: String)
    /// `backlink(to:via:)` asked for the one record linking to a target through a link that is not exclusive.
    case linkNotExclusive(link: String)
    /// A primary key's bytes exceed LMDB's key limit (511 bytes).
    case keyTooLong(model: String, property: String, length: Int, limit: Int)
    /// A value cannot become a key: NaN, or a type with no ordered form.
    case invalidKey(model: String, reason: String)
    /// The model's `encode(to:)` threw, or used its containers in a way the record format cannot hold.
    case encodingFailed(model: String, reason: String)
    /// A stored record could not be decoded as the model: the field and the reason say where and why.
    case decodingFailed(model: String, id: String, field: String, reason: String)
    /// The model type is not in `Configuration.models`.
    case modelNotRegistered(model: String)
    /// Two registered types use one stored name.
    case duplicateModelName(model: String)
    /// The model's auto-increment sequence reached the largest value its id type holds.
    case sequenceExhausted(model: String)
    /// The store was written with a higher `schemaVersion` than the configuration gives.
    case schemaVersionTooLow(stored: Int, requested: Int)
    /// The models changed in ways the stored records cannot follow without a migration (or this configuration does
    /// not allow migrating). Every change is listed, in Realm's words.
    case migrationRequired(changes: [SchemaChange])
    /// The migration to `version` failed; nothing was written and the store keeps its old version.
    case migrationFailed(version: Int, reason: String)
    /// Another process changed the store's schema (migrated it, or changed its indexes) after this `Store` opened it.
    case schemaChangedElsewhere(path: String)
    /// The file is damaged.
    case corruptedFile(path: String, reason: String)
    /// The file is not a Cellar store, or was written by an incompatible version.
    case incompatibleFile(path: String, reason: String)
    /// Every reader slot is in use.
    case readersFull(limit: Int)
    /// The store was opened with `Configuration.readOnly`, and `reason` needs it changed: a write, or opening it with
    /// models whose schema differs from the stored one.
    case readOnly(path: String, reason: String)
    /// The store is open, so its files cannot be deleted: by this process when `process` is `nil`, otherwise by the
    /// process with that id (deleting a file another process has mapped would split the store in two).
    case storeInUse(path: String, process: Int32?)
    /// The store is open in this process with settings this configuration contradicts (durability, reader limit,
    /// or a model's indexes): one file has one set of them.
    case configurationConflict(path: String, reason: String)
    /// A model's schema cannot be used as declared; the reason names the part and the way out.
    case invalidSchema(model: String, reason: String)
    /// `write` was called inside another `write` on the same thread.
    case nestedWrite
    /// The store must grow, but this thread holds a read of it open (a `write` inside a `read`).
    case cannotGrowDuringRead
    /// A transaction or a query bound to it was used after the transaction ended or from another thread.
    case transactionEnded
    /// One write transaction changed more pages than LMDB can hold at once.
    case transactionTooLarge
    /// A record of a synced model was written with the id of one deleted before: the delete wins on every device.
    case idReusedAfterDelete(model: String, id: String)
    /// The operating system refused a file operation.
    case io(errno: Int32, operation: String, path: String)
    /// Any other LMDB failure, with its code and message.
    case lmdb(code: Int32, message: String)

    public var description: String {
        switch self {
        case .duplicatePrimaryKey(let model, let id):
            "A \(model) with id \(id) exists already. Use upsert to replace it, or update to change it."
        case .objectNotFound(let model, let id):
            "No \(model) with id \(id) exists. Use insert or upsert to create it."
        case .uniqueConstraintViolated(let model, let index, let value):
            "Another \(model) already has \(index) = \(value), and \(index) is unique. Change the value, or update the "
                + "record that has it."
        case .deleteDenied(let model, let id, let reason):
            "The \(model) with id \(id) cannot be deleted: \(reason). Nothing was deleted."
        case .linkTargetMissing(let link, let source, let target, let targetID):
            "\(link) of the record with id \(source) links to the \(target) with id \(targetID), which does not "
                + "exist. Insert it in the same transaction or remove the link; if the record was read before that "
                + "\(target) was deleted, read it again and change the fresh copy. To allow such links, declare "
                + "the link with allowsDangling: true."
        case .exclusiveLinkViolated(let link, let target, let holder):
            "\(target) is already linked through \(link) by the record with id \(holder), and \(link) is exclusive. "
                + "Remove it from that record first, in the same transaction."
        case .linkNotDeclared(let model, let property):
            "\(model).\(property) is not declared in the schema's links, so it has no backlink index. Add "
                + ".link(\\.\(property)) to Schema(links:)."
        case .linkNotExclusive(let link):
            "\(link) is not exclusive, so a record may be linked from several others. Use backlinks(to:via:), or "
                + "declare the link with exclusive: true."
        case .keyTooLong(let model, let property, let length, let limit):
            property == "id"
                ? "A \(model) id makes a key of \(length) bytes; keys may be at most \(limit). Use a shorter id."
                : "The \(property) of a \(model) makes an index key of \(length) bytes; index keys may be at most "
                    + "\(limit). Store a shorter \(property), or index a shorter value derived from it."
        case .invalidKey(let model, let reason):
            "A \(model) value cannot be used as a key: \(reason)."
        case .encodingFailed(let model, let reason):
            "A \(model) could not be encoded: \(reason)."
        case .decodingFailed(let model, let id, let field, let reason):
            "The stored \(model) with id \(id) could not be decoded\(field.isEmpty ? "" : " at '\(field)'"): \(reason)"
                + (RecordFormat.Damage.isChangedRecord(reason)
                    ? "." : ". If the model changed, raise schemaVersion and migrate; otherwise the record is damaged.")
        case .modelNotRegistered(let model):
            "\(model) is not registered with this store. Add \(model).self to Configuration.models."
        case .duplicateModelName(let model):
            "Two registered models are stored as '\(model)'. Give one of them Schema(name:)."
        case .sequenceExhausted(let model):
            "The id sequence of \(model) has reached the largest value its id type can hold."
        case .schemaVersionTooLow(let stored, let requested):
            "The store has schema version \(stored), newer than this app's \(requested). "
                + "Opening it would downgrade it; update the app or open another store."
        case .migrationRequired(let changes):
            migrationRequiredWords(changes)
                + "\nRaise Configuration.schemaVersion and add a MigrationStep for it, declare renames and defaults in the "
                + "model's Schema, or set deleteStoreIfMigrationNeeded to start empty. An app extension opened with "
                + "allowsMigration false gets this error until the app has opened the store."
        case .migrationFailed(let version, let reason):
            "The migration to schema version \(version) failed: \(reason.hasSuffix(".") ? String(reason.dropLast()) : reason). "
                + "Nothing was written: the store keeps its "
                + "previous version and opens with the previous models."
        case .schemaChangedElsewhere(let path):
            "Another process changed the schema of the store at \(path) (it migrated the store or changed its "
                + "indexes) after this Store opened it. Open the store again with a configuration for the new models."
        case .corruptedFile(let path, let reason):
            "The store at \(path) is damaged (\(reason)). Restore it from a backup or delete it."
        case .incompatibleFile(let path, let reason):
            "The file at \(path) cannot be opened as a Cellar store: \(reason). Open the store in another folder; "
                + "Cellar did not change this one."
        case .readersFull(let limit):
            "All \(limit) reader slots are in use. Keep reads short, or raise Configuration.maxReaders."
        case .readOnly(let path, let reason):
            "The store at \(path) is open read-only, and \(reason). Open it without Configuration.readOnly, in a "
                + "folder this user may write, to change it."
        case .storeInUse(let path, let process):
            if let process {
                "The store at \(path) is open in another process (pid \(process)); it was not deleted. Close it there "
                    + "first: deleting a file another process has mapped would split the store in two."
            } else {
                "The store at \(path) is open in this process. Release every Store for it before deleting it."
            }
        case .configurationConflict(let path, let reason):
            "The store at \(path) is already open in this process with another configuration: \(reason). "
                + "Share the Store that is open, or open it with the same settings."
        case .invalidSchema(let model, let reason):
            "The schema of \(model) cannot be used: \(reason)."
        case .nestedWrite:
            "write was called inside another write on the same thread. Do the work in the outer transaction."
        case .cannotGrowDuringRead:
            "The store must grow, but this thread is inside a read of it. Move the write out of the read closure."
        case .transactionEnded:
            "A transaction, or a query made from one, was used after the transaction ended or on another thread. "
                + "Use it only inside its write closure, or query the store instead."
        case .transactionTooLarge:
            "The write transaction changed too much at once. Split it into several transactions."
        case .idReusedAfterDelete(let model, let id):
            "The \(model) with id \(id) was deleted before, and \(model) syncs: a delete wins on every device, so a new "
                + "record with this id would be deleted again by the next sync. Give the new record a new id (a UUID)."
        case .io(let errno, let operation, let path):
            "Could not \(operation) \(path): \(String(cString: strerror(errno))) (errno \(errno))."
        case .lmdb(let code, let message):
            "LMDB failed with code \(code): \(message)."
        }
    }

    /// The changes that need a migration first, each with why, then the others, which opening applies by itself.
    private func migrationRequiredWords(_ changes: [SchemaChange]) -> String {
        let needed = changes.filter { $0.handling == .needsMigration }
        let others = changes.filter { $0.handling != .needsMigration }
        guard !needed.isEmpty else {
            // Nothing needs a step: opening would rewrite records (declared renames and defaults, or steps to run),
            // and the configuration does not migrate.
            let heading =
                "Migration is required: opening would rewrite stored records, and this configuration has "
                + "allowsMigration set to false (an app extension leaves migrating to the app). The changes:"
            return ([heading] + changes.map { "- \($0)" }).joined(separator: "\n")
        }
        var lines = ["Migration is required due to the following errors:"]
        lines += needed.map { change in
            let sentence = change.description
            guard let reason = change.migrationReason else { return "- \(sentence)" }
            return "- \(sentence.hasSuffix(".") ? String(sentence.dropLast()) : sentence): \(reason)."
        }
        if !others.isEmpty {
            lines.append("Also changed, which opening applies by itself:")
            lines += others.map { "- \($0)" }
        }
        return lines.joined(separator: "\n")
    }

    public var errorDescription: String? { description }
}

extension StoreError {
    /// The user-facing error for any failure below Cellar at `path` while doing `operation`: `StoreError`s pass
    /// through, `LMDBError`s are translated.
    static func from(_ error: any Error, path: String, operation: String, readerLimit: Int) -> StoreError {
        switch error {
        case let error as StoreError: error
        case let error as LMDBError: StoreError(error, path: path, operation: operation, readerLimit: readerLimit)
        default: .lmdb(code: 0, message: String(describing: error))
        }
    }

    /// The user-facing error for an LMDB failure at `path` while doing `operation`; `readerLimit` is the
    /// environment's reader slot count, for `readersFull`.
    init(_ error: LMDBError, path: String, operation: String, readerLimit: Int) {
        switch error {
        case .truncated(let expected, let actual):
            self = .corruptedFile(
                path: path,
                reason: "data.mdb is \(actual) bytes long, but the pages it says are in use need \(expected) bytes; "
                    + "it was cut short, by a full disk or an incomplete copy")
        case .corrupted, .pageNotFound, .panic, .damagedMetaPage:
            self = .corruptedFile(path: path, reason: error.description)
        case .invalidFile, .versionMismatch:
            self = .incompatibleFile(path: path, reason: error.description)
        case .incompatible where operation == "open the store":
            self = .incompatibleFile(path: path, reason: error.description)
        case .readersFull: self = .readersFull(limit: readerLimit)
        case .readOnly: self = .readOnly(path: path, reason: "a write was asked of it")
        case .transactionFull: self = .transactionTooLarge
        case .mapFull: self = .cannotGrowDuringRead
        case .system(let errno) where errno == EDEADLK: self = .nestedWrite
        case .system(let errno): self = .io(errno: errno, operation: operation, path: path)
        default: self = .lmdb(code: error.code, message: error.description)
        }
    }
}
