import LMDB

/// The migration to one schema version: what `Configuration.migrations` lists.
///
/// ```swift
/// Configuration(models: [Pet.self], schemaVersion: 3, migrations: [
///     .to(2) { migration in
///         try migration.enumerateRecords(ofType: "Pet") { pet in try pet.set("color", to: "brown") }
///     },
///     .to(3) { migration in try migration.renameProperty(onType: "Pet", from: "name", to: "fullName") },
/// ])
/// ```
///
/// Opening a store whose stored version is lower than the configuration's runs every step above the stored version
/// and up to the configuration's, in order, in the one write transaction that opens the store: if a step throws,
/// nothing is written and the file keeps its old version.
public struct MigrationStep: Sendable {
    /// The schema version this step migrates to.
    public let version: Int
    let body: @Sendable (Migration) throws -> Void

    /// A step that migrates records to `version`.
    public static func to(_ version: Int, _ body: @escaping @Sendable (Migration) throws -> Void) -> MigrationStep {
        MigrationStep(version: version, body: body)
    }
}

/// What a migration step works with: the stored records of every model by its stored name, read and written without
/// the Swift types (Realm's `Migration`).
///
/// Valid only inside the step it is handed to. Indexes, unique indexes and backlinks of the models a step writes are
/// rebuilt once every step has run, and every record of those models is then decoded with its registered type: a
/// record the migration left unreadable, or a unique value it made twice, fails the migration with nothing written.
public final class Migration {
    /// The schema version the file had before the migration began.
    public let oldSchemaVersion: Int
    /// The version the running step migrates to.
    public internal(set) var schemaVersion: Int
    let txn: LMDB.WriteTransaction
    let core: StoreCore
    /// The stored names of the configuration's models.
    private let registered: Set<String>
    private var models: [String: MigratingModel] = [:]

    init(oldSchemaVersion: Int, registered: Set<String>, txn: LMDB.WriteTransaction, core: StoreCore) {
        self.oldSchemaVersion = oldSchemaVersion
        self.schemaVersion = oldSchemaVersion
        self.registered = registered
        self.txn = txn
        self.core = core
    }

    /// The models a step wrote to, by stored name.
    var touchedModels: Set<String> { Set(models.values.filter(\.isTouched).map(\.name)) }

    /// The state of the model stored as `name`; its records database is created when `create` is set.
    func model(_ name: String, create: Bool = false) throws(StoreError) -> MigratingModel? {
        if let known = models[name] { return known }
        let found = try core.run("migrate \(name)") { () throws -> MigratingModel? in
            let records =
                create
                ? try txn.createDatabase(named: DatabaseName.records(name))
                : try txn.openDatabase(named: DatabaseName.records(name))
            guard let records else { return nil }
            return MigratingModel(
                name: name, records: records, dictionary: try core.storedDictionary(name, in: txn))
        }
        models[name] = found
        return found
    }

    /// How many records the model stored as `model` has.
    public func count(ofType model: String) throws(StoreError) -> Int {
        guard let state = try self.model(model) else { return 0 }
        return try core.run("count \(model)") { try txn.statistics(state.records).entries }
    }

    /// Hands `body` each record of the model stored as `model`, in primary-key order, as a `DynamicRecord` to read
    /// and edit. A model the file does not hold has no records.
    ///
    /// Edits are written as the enumeration goes, as Realm's migration objects take them: a record edited in place is
    /// written back when `body` returns for it; records given a new id (`set("id", to:)`) or deleted move when the
    /// enumeration ends, so that ids may shift by one without meeting themselves half-way. When `body` throws, the
    /// enumeration stops there and rethrows: what it did to the records before (their moves included) is written, and
    /// the record it threw on is left as it was. (A step that lets the error through fails the migration, and the
    /// store is left as it was before the migration began.)
    public func enumerateRecords(ofType model: String, _ body: (inout DynamicRecord) throws -> Void) throws {
        guard let state = try self.model(model) else { return }
        var moved: [(key: [UInt8], record: DynamicRecord)] = []
        var failure: (any Error)?
        // An edit that keeps the record's id replaces the value where the walk stands: no second search of the tree,
        // and no record held until the end. Where another write in `body` (a nested enumeration's delete, say) moved
        // the walk's cursor off the record, the record is put by its key instead.
        var value: [UInt8] = []
        try txn.withCursor(state.records) { cursor in
            var entry = try cursor.first()
            while let found = entry {
                let key = Array(found.key)
                var record = DynamicRecord(
                    model: state, fields: try state.fields(of: found.value, key: key), primaryKey: key)
                do {
                    try body(&record)
                } catch {
                    failure = error
                    return
                }
                var replaced = true
                if record.isDeleted || record.primaryKey != key {
                    moved.append((key, record))
                } else if record.isEdited {
                    state.isTouched = true
                    record.fields.serialize(into: &value)
                    replaced = try key.withUnsafeBytes { key in
                        try value.withUnsafeBytes { try txn.replaceCurrent(of: cursor, key: key, value: $0) }
                    }
                    if !replaced { try put(record, in: state, replacing: true) }
                }
                if replaced {
                    entry = try cursor.next()
                } else {
                    // The cursor lost its place (its entry deleted, or its database emptied, under it): the walk
                    // goes on from the first record after this one, found by its key.
                    entry = try key.withUnsafeBytes { try cursor.seek(atLeast: $0) }
                    if let next = entry, next.key.elementsEqual(key) { entry = try cursor.next() }
                }
            }
        }
        if !moved.isEmpty {
            state.isTouched = true
            for (key, _) in moved { _ = try txn.delete(state.records, key: key) }
            for (_, record) in moved where !record.isDeleted { try put(record, in: state, replacing: false) }
        }
        if let failure { throw failure }
    }

    /// Renames a field in every record of the model (Realm's `renameProperty(onType:from:to:)`).
    public func renameProperty(onType model: String, from oldName: String, to newName: String) throws {
        try enumerateRecords(ofType: model) { $0.rename(oldName, to: newName) }
    }

    /// Deletes every record of the model stored as `model` (Realm's `deleteData(forType:)`). For a model no longer
    /// registered, its databases go too; its id sequence stays, so ids are never reused.
    public func deleteData(forType model: String) throws {
        guard let state = try self.model(model) else { return }
        guard registered.contains(model) else {
            try core.dropModel(model, in: txn)
            models[model] = nil
            return
        }
        state.isTouched = true
        try txn.empty(state.records)
    }

    /// Creates a record of the model stored as `model`: `body` sets its fields, `id` among them.
    ///
    /// - Throws: `StoreError.invalidKey` when `body` sets no `id`, `.duplicatePrimaryKey` when the id is taken.
    public func create(ofType model: String, _ body: (inout DynamicRecord) throws -> Void) throws {
        guard let state = try self.model(model, create: true) else { return }
        var record = DynamicRecord(model: state, fields: RecordFields(), primaryKey: [])
        try body(&record)
        guard !record.primaryKey.isEmpty else {
            throw StoreError.invalidKey(
                model: model, reason: "a record created by a migration needs an id: set(\"id\", to: …)")
        }
        guard !record.isDeleted else { return }
        state.isTouched = true
        try put(record, in: state, replacing: false)
    }

    /// Inserts `value` as a record of its model, encoded with the type registered now. Give it an id: sequences are
    /// moved past the ids a migration writes, not drawn from.
    ///
    /// - Throws: `StoreError.duplicatePrimaryKey` when the id is taken.
    public func insert<M: Model>(_ value: M) throws {
        let name = M.storedName
        guard let state = try self.model(name, create: true) else { return }
        let key = try KeyEncoding.key(value.id)
        let bytes = try state.encodeRecord(value)
        state.isTouched = true
        try core.run("migrate \(name)") {
            do {
                try txn.put(state.records, key: key, value: bytes, flags: .noOverwrite)
            } catch LMDBError.keyExists {
                throw StoreError.duplicatePrimaryKey(model: name, id: KeyEncoding.describe(key))
            }
        }
    }

    private func put(_ record: DynamicRecord, in state: MigratingModel, replacing: Bool) throws {
        do {
            try txn.put(
                state.records, key: record.primaryKey, value: record.fields.serialized,
                flags: replacing ? [] : .noOverwrite)
        } catch LMDBError.keyExists {
            throw StoreError.duplicatePrimaryKey(model: state.name, id: record.id)
        }
    }

    /// Writes the key dictionaries the migration extended.
    func finish() throws {
        for state in models.values where state.dictionaryChanged {
            try txn.put(core.meta, key: Array("keys/\(state.name)".utf8), value: state.dictionary.serialized)
        }
    }
}

/// One model's records during a migration, with the key dictionary their tags refer to.
final class MigratingModel {
    let name: String
    let records: Database
    private(set) var dictionary: KeyDictionary
    private(set) var dictionaryChanged = false
    var isTouched = false
    private let encoder: RecordEncoder
    let decoder = RecordDecoder()

    init(name: String, records: Database, dictionary: KeyDictionary) {
        self.name = name
        self.records = records
        self.dictionary = dictionary
        self.encoder = RecordEncoder(dictionary: dictionary)
    }

    /// The tag of `field`, added to the dictionary when new.
    func tag(for field: String) -> UInt32 {
        if let tag = dictionary.tags[field] { return tag }
        dictionary = dictionary.appending([field])
        dictionaryChanged = true
        encoder.reset(dictionary: dictionary)
        return UInt32(dictionary.names.count - 1)
    }

    /// The encoded form of one field's value.
    func encodeField<T: Encodable>(_ value: T) throws(StoreError) -> [UInt8] {
        Array(RecordFormat.value(ofEncoded: try encodeRecord(value)))
    }

    /// A field's value encoded by `encode` (a declared default), its new keys added to the dictionary.
    func encodeDeclaredField(_ encode: (RecordEncoder) throws -> [UInt8]) throws(StoreError) -> [UInt8] {
        do {
            let bytes = try encode(encoder)
            absorbEncoderNames()
            return bytes
        } catch {
            throw .encodingFailed(model: name, reason: describeEncodingFailure(error))
        }
    }

    private func absorbEncoderNames() {
        let extended = encoder.absorbAddedNames()
        if extended.names.count != dictionary.names.count {
            dictionary = extended
            dictionaryChanged = true
        }
    }

    /// A whole record, its new keys added to the dictionary.
    func encodeRecord<T: Encodable>(_ value: T) throws(StoreError) -> [UInt8] {
        do {
            let bytes = try encoder.encode(value)
            absorbEncoderNames()
            return bytes
        } catch {
            throw .encodingFailed(model: name, reason: describeEncodingFailure(error))
        }
    }

    /// The fields of a stored record.
    func fields(of bytes: UnsafeRawBufferPointer, key: [UInt8]) throws(StoreError) -> RecordFields {
        do {
            return try RecordFields(record: bytes)
        } catch {
            throw .decodingFailed(model: name, id: KeyEncoding.describe(key), field: "", reason: error.description)
        }
    }
}
