@_spi(Sync) import Cellar
import CellarSyncProtocol
import Foundation

/// One synced model, with what the client does to its records without knowing their type: build the state it
/// pushes, and apply a pulled change.
struct SyncedModel: Sendable {
    let name: String
    /// What the server is told of the model with each request: its version and the properties its records hold, by
    /// coding key. Asked each time, as the store learns a model's keys from the first record it writes or reads.
    let schema: @Sendable () -> CellarSyncProtocol.ModelSchema
    /// The state to push for a record in the outbox; `nil` when the record is gone and no tombstone says why (a
    /// record made and deleted before it was ever pushed).
    let pushState: @Sendable (ReadScope, PendingSyncChange) throws -> RecordState?
    /// Applies a pulled change in a write transaction.
    let apply: @Sendable (WriteTransaction, RecordChange) throws -> Applied

    enum Applied: Equatable {
        case applied
        case unchanged
        /// Not applied yet: a link's target has not arrived, or a delete rule refuses the delete for now.
        case waiting(String)
    }

    init<M: Model>(_ type: M.Type, store: Store, schemaVersion: Int) throws(SyncError) {
        let name: String
        do { name = try store.storedName(of: type) } catch { throw .store(error) }
        if store.numbersIDs(type) { throw .autoIncrementModel(model: name) }
        guard M.ID.self == String.self || M.ID.self == UUID.self || M.ID.self is any BinaryInteger.Type else {
            throw .unsupportedID(model: name, type: "\(M.ID.self)")
        }
        self.name = name
        let known: [String]
        do { known = try store.propertyNames(of: type) } catch { throw .store(error) }
        let schema: @Sendable () -> CellarSyncProtocol.ModelSchema = {
            CellarSyncProtocol.ModelSchema(
                version: schemaVersion, properties: (try? store.propertyNames(of: type)) ?? known,
                required: (try? store.requiredPropertyNames(of: type)) ?? [])
        }
        self.schema = schema
        pushState = { scope, pending in
            if let deleted = pending.deleted { return .tombstone(deleted) }
            guard let value = try scope.object(M.self, primaryKey: pending.primaryKey) else { return nil }
            // The fields are the value's as the model encodes it now. A property the model no longer has keeps its
            // stamp in the store (the record's bytes may still hold it): only the stamps of its properties now go,
            // and every field pushed is declared with the request (`SyncClient`).
            let fields = try Self.fields(of: value)
            let properties = Set(schema().properties).union(fields.keys)
            return RecordState(fields: fields, stamps: pending.stamps.filter { properties.contains($0.key) })
        }
        let resolve = Self.resolver(of: M.self)
        apply = { txn, change in try Self.apply(change, to: M.self, resolve: resolve, in: txn) }
        keepsBase = resolve != nil
    }

    /// Whether the client keeps each record's last synced state (for a model's resolver).
    let keepsBase: Bool

    /// `M`'s `resolve`, when `M` is `SyncResolving`.
    private static func resolver<M: Model>(of type: M.Type) -> (@Sendable (M, M, M?) -> M)? {
        guard let resolving = M.self as? any SyncResolving.Type else { return nil }
        return { local, remote, base in resolved(resolving, local: local, remote: remote, base: base) }
    }

    private static func resolved<R: SyncResolving, M: Model>(_ type: R.Type, local: M, remote: M, base: M?) -> M {
        // `R` is `M`: the casts only give the compiler the conformance back.
        guard let mine = local as? R, let theirs = remote as? R,
            let result = R.resolve(local: mine, remote: theirs, base: base.flatMap { $0 as? R }) as? M
        else { return remote }
        return result
    }

    /// The name under which the client keeps a record's last synced properties (`keepsBase`).
    static func baseName(model: String, id: String) -> String { "base/" + model + "/" + id }

    /// The model's `Codable` JSON object, property by property, numbers as `JSONEncoder` wrote them.
    static func fields<M: Model>(of value: M) throws -> [String: JSONValue] {
        let json = try JSONValue(parsing: SyncCoding.encoder().encode(value))
        guard case .object(let fields) = json else { return [:] }
        return fields.filter { $0.value != .null }
    }

    /// The id named by `text`, as `KeyEncoding` names ids for sync: a string as it is, a UUID, digits.
    static func id<M: Model>(_ text: String, of type: M.Type) -> M.ID? {
        let decoder = JSONDecoder()
        if let quoted = try? JSONEncoder().encode(text), let id = try? decoder.decode(M.ID.self, from: quoted) {
            return id
        }
        return try? decoder.decode(M.ID.self, from: Data(text.utf8))
    }

    private static func apply<M: Model>(
        _ change: RecordChange, to type: M.Type, resolve: (@Sendable (M, M, M?) -> M)?, in txn: WriteTransaction
    ) throws -> Applied {
        guard let id = Self.id(change.id, of: M.self) else {
            throw SyncError.invalidChange(model: change.model, id: change.id, reason: "its id is not a \(M.ID.self)")
        }
        let local = try txn.object(M.self, id: id)
        let known = try txn.syncState(M.self, id: id)
        if known?.deleted != nil {
            // Deleted here: the delete wins, and the outbox pushes it.
            return .unchanged
        }
        if let deleted = change.state.deleted {
            if local != nil { try txn.deleteApplyingSync(M.self, id: id) }
            try txn.adoptSyncState(M.self, id: id, stamps: [:], deleted: deleted)
            return .applied
        }
        var mine = RecordState()
        if let local {
            let fields = try Self.fields(of: local)
            var stamps = known?.stamps ?? [:]
            // A property sync has no stamp for yet is older than any remote write of it.
            for name in fields.keys where stamps[name] == nil { stamps[name] = SyncStamp(time: 0, device: Self.nobody) }
            mine = RecordState(fields: fields, stamps: stamps)
        }
        if let resolve, let local, try txn.hasPendingSyncChange(M.self, id: id) {
            return try resolveConflict(change, id: id, local: local, resolve: resolve, in: txn)
        }
        let merged = mine.merged(with: change.state)
        if local != nil, merged == mine { return .unchanged }
        guard let value = try? decode(M.self, merged.fields, change: change) else {
            // Written by an older model (a required property it lacks): it waits until a device with this model
            // migrates and pushes it.
            return .waiting("its properties do not decode as this app's \(M.self)")
        }
        if let conflict = try txn.writePulled(value, stamps: merged.stamps) { return .waiting(conflict) }
        return .applied
    }

    /// Writes what `M`'s resolver makes of this device's unpushed record and the pulled one: the pulled stamps for the
    /// properties it kept from `remote`, this device's for the others, which go to the outbox.
    private static func resolveConflict<M: Model>(
        _ change: RecordChange, id: M.ID, local: M, resolve: (M, M, M?) -> M, in txn: WriteTransaction
    ) throws -> Applied {
        guard let remote = try? decode(M.self, change.state.fields, change: change) else {
            return .waiting("its properties do not decode as this app's \(M.self)")
        }
        let baseName = baseName(model: change.model, id: change.id)
        let base = try txn.syncValues(prefix: baseName).first { $0.name == baseName }.flatMap { entry in
            try? SyncCoding.decoder().decode(M.self, from: Data(entry.value))
        }
        let resolved = resolve(local, remote, base)
        let fields = try Self.fields(of: resolved)
        var changedHere = Set<String>()
        for name in Set(fields.keys).union(change.state.fields.keys) where fields[name] != change.state.fields[name] {
            changedHere.insert(name)
        }
        if let conflict = try txn.writePulled(resolved, stamps: change.state.stamps, changedHere: changedHere) {
            return .waiting(conflict)
        }
        return .applied
    }

    static func decode<M: Model>(_ type: M.Type, _ fields: [String: JSONValue], change: RecordChange) throws -> M {
        do {
            return try SyncCoding.decoder().decode(M.self, from: Data(JSONValue.object(fields).serialized()))
        } catch {
            throw SyncError.invalidChange(
                model: change.model, id: change.id, reason: "its properties do not decode as a \(M.self): \(error)")
        }
    }

    static let nobody = String(repeating: "0", count: 32)
}

/// How a model's value becomes JSON and back: `JSONEncoder` and `JSONDecoder`, which write and read a `Decimal`, an
/// `Int128` or a `Double` as exact text; infinities and NaN, which JSON has no numbers for, as the strings
/// `"Infinity"`, `"-Infinity"` and `"NaN"`.
enum SyncCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return decoder
    }
}
