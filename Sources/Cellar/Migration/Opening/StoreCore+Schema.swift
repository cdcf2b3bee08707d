import Foundation
import LMDB

/// Opening's schema work: compare each registered model with the schema stored in `_meta`, then apply what may be
/// applied (renames, defaults, migration steps) or say exactly why not.
extension StoreCore {
    static let generationKey = Array("generation".utf8)

    /// What reconciling the stored schema with a configuration did, for the opening that follows.
    struct Reconciliation {
        /// What was compared, model by model, in the configuration's order.
        var models: [ModelSchemaPlan]
        /// Models whose records were rewritten or must be converted: their indexes and backlinks are rebuilt and
        /// every record decoded.
        var rebuild: Set<String> = []
        /// The version a migration ran to, when one ran.
        var migratedTo: Int?
    }

    /// Brings the stored records and schemas in line with `configuration`, before the models' databases are opened.
    ///
    /// - Throws: `schemaVersionTooLow`, `migrationRequired`, `migrationFailed`, or the error of a step.
    func reconcile(_ configuration: Configuration, in txn: LMDB.WriteTransaction) throws -> Reconciliation {
        let opening = try openingPlan(for: configuration, in: txn)
        let plans = opening.models
        if let stored = opening.storedVersion, stored > configuration.schemaVersion {
            throw StoreError.schemaVersionTooLow(stored: stored, requested: configuration.schemaVersion)
        }
        if !opening.unmigratedChanges.isEmpty { throw StoreError.migrationRequired(changes: opening.changes) }
        if opening.rewritesRecords {
            guard configuration.allowsMigration else { throw StoreError.migrationRequired(changes: opening.changes) }
            guard modelsByNameIsEmpty else {
                throw StoreError.configurationConflict(
                    path: path,
                    reason: "opening it with these models rewrites stored records, which the Stores already open "
                        + "would misread; release them before opening it with the new models")
            }
        }
        var result = Reconciliation(models: plans)
        let migration = Migration(
            oldSchemaVersion: opening.storedVersion ?? configuration.schemaVersion,
            registered: Set(plans.map(\.name)), txn: txn, core: self)
        for plan in plans {
            if let formerName = plan.formerName { try moveModel(from: formerName, to: plan.name, in: txn) }
            guard plan.recordCount > 0, !plan.renamedFields.isEmpty || !plan.clearedFields.isEmpty else { continue }
            let properties = plan.clearedFields.isEmpty ? [] : try plan.schema().properties
            try migration.enumerateRecords(ofType: plan.name) { record in
                for (from, to) in plan.renamedFields { record.rename(from, to: to) }
                for path in plan.clearedFields {
                    try record.clear(path: path.split(separator: ".").map(String.init), in: properties)
                }
            }
        }
        for step in opening.steps {
            migration.schemaVersion = step.version
            do {
                try step.body(migration)
            } catch let error as LMDBError {
                throw error
            } catch {
                throw StoreError.migrationFailed(version: step.version, reason: Self.describe(error))
            }
            result.migratedTo = step.version
        }
        for (plan, type) in zip(plans, configuration.models) where plan.recordCount > 0 && !plan.filledFields.isEmpty {
            try fillDefaults(
                plan.filledFields, of: plan.name, declarations: try type.described().declarations, migration: migration)
        }
        try migration.finish()
        if let version = result.migratedTo,
            let dangling = try danglingLink(
                after: migration.touchedModels, schemas: try allSchemas(plans: plans, in: txn), in: txn)
        {
            throw StoreError.migrationFailed(version: version, reason: dangling)
        }
        result.rebuild = migration.touchedModels
        for plan in plans where plan.formerName != nil || plan.changesValues {
            result.rebuild.insert(plan.name)
        }
        let versionChanged = opening.storedVersion.map { $0 != configuration.schemaVersion } ?? false
        for (plan, type) in zip(plans, configuration.models) where plan.recordCount > 0 {
            // Records decoded before anything was written stand unless something rewrote them since; after migration
            // steps, a model rebuilt below has every record decoded there, with a migration's words for what fails.
            guard result.migratedTo == nil || !result.rebuild.contains(plan.name) else { continue }
            let rewritten = plan.rewritesRecords || result.migratedTo != nil
            let opaqueAfterBump = try versionChanged && plan.schema().holdsOpaque
            guard rewritten || opaqueAfterBump else { continue }
            // Every record when the fields changed, the first one otherwise (coding that changed alone).
            let everyRecord = plan.decodesEveryRecord || plan.unreadable != nil || opaqueAfterBump
            guard
                let change = try unreadableRecord(
                    of: type, storedAs: plan.name, in: txn, firstOnly: !everyRecord)
            else { continue }
            if let version = result.migratedTo {
                throw StoreError.migrationFailed(version: version, reason: change.description)
            }
            let named = opening.changes.contains { $0.handling == .needsMigration && $0.property == change.property }
            throw StoreError.migrationRequired(changes: opening.changes + (named ? [] : [change]))
        }
        try trackMigratedRecords(of: result.rebuild, in: txn)
        for plan in plans where plan.autoIncrement {
            let turnedOn = plan.changes.contains(.autoIncrementChanged(model: plan.name, isOn: true))
            if turnedOn || result.rebuild.contains(plan.name) {
                try advanceSequence(of: plan.name, migration: migration)
            }
        }
        var derivedChanged = false
        for (plan, type) in zip(plans, configuration.models) {
            try storeSchema(plan, encoded: try type.described().bytes, in: txn)
            derivedChanged =
                derivedChanged
                || plan.changes.contains {
                    switch $0 {
                    case .indexAdded, .indexRemoved, .linkAdded, .linkRemoved: true
                    default: false
                    }
                }
        }
        if opening.storedVersion != configuration.schemaVersion {
            try txn.put(
                meta, key: Self.versionKey,
                value: withUnsafeBytes(of: Int64(configuration.schemaVersion).littleEndian, Array.init))
        }
        if opening.rewritesRecords || derivedChanged {
            try txn.put(
                meta, key: Self.generationKey,
                value: withUnsafeBytes(of: (try storedGeneration(in: txn) &+ 1).littleEndian, Array.init))
        }
        return result
    }

    /// What opening with a configuration would do: the schema changes, model by model, and the migration steps.
    struct OpeningPlan {
        let models: [ModelSchemaPlan]
        let storedVersion: Int?
        /// The steps above the stored version, up to the configuration's, in order.
        let steps: [MigrationStep]

        /// The changes in words: the comparison's, and a record's that did not read when no change names its property.
        var changes: [SchemaChange] { models.flatMap(\.reportedChanges) }
        /// Changes that need a migration when no step runs: opening refuses them.
        var unmigratedChanges: [SchemaChange] { steps.isEmpty ? models.flatMap(\.changesNeedingMigration) : [] }
        var rewritesRecords: Bool { !steps.isEmpty || models.contains { $0.rewritesRecords || $0.formerName != nil } }
    }

    /// What opening with `configuration` would change; reads only.
    func openingPlan(for configuration: Configuration, in txn: ReadTransaction) throws -> OpeningPlan {
        let storedVersion = try storedSchemaVersion(in: txn)
        let from = storedVersion ?? configuration.schemaVersion
        let steps = configuration.migrations.filter { $0.version > from && $0.version <= configuration.schemaVersion }
            .sorted { $0.version < $1.version }
        return OpeningPlan(
            models: try schemaPlans(for: configuration, decodingRecords: steps.isEmpty, in: txn),
            storedVersion: storedVersion, steps: steps)
    }

    /// The changes opening with `configuration` would make, model by model, with what a decode of their stored
    /// records said (``ModelSchemaPlan/recordCheck``) unless migration steps run first (`decodingRecords` false):
    /// then the records are decoded after the steps.
    private func schemaPlans(
        for configuration: Configuration, decodingRecords: Bool, in txn: ReadTransaction
    ) throws -> [ModelSchemaPlan] {
        try configuration.models.map { type in
            var plan = try schemaPlan(for: type, in: txn)
            guard decodingRecords, plan.recordCheck != .none else { return plan }
            // The first record of an unchanged model is decoded once per process and data file (its device and
            // inode): the type cannot change while the process runs, and the file's records change by writes of
            // this model, or of another version of the app, which stores its own schema first. A sample that was
            // damaged, or did not read, is looked at again next time.
            let sample = SampledModel(type: ObjectIdentifier(type), file: fileIdentity)
            let sampling = plan.recordCheck == .first && !plan.fieldsChanged
            if sampling, sampledModels.withLock({ $0.contains(sample) }) { return plan }
            var sampled = false
            plan.unreadable = try unreadableRecord(
                of: type, storedAs: plan.formerName ?? plan.name, in: txn, firstOnly: plan.recordCheck == .first,
                decodedOne: &sampled)
            if sampling, sampled { _ = sampledModels.withLock { $0.insert(sample) } }
            return plan
        }
    }

    /// What opening changes for `type`: its described schema compared with the stored one.
    private func schemaPlan(for type: any Model.Type, in txn: ReadTransaction) throws -> ModelSchemaPlan {
        let (describedBytes, declarations) = try type.described()
        let registration = try type.registration()
        let name = registration.name
        func recordCount(storedUnder name: String) throws -> Int? {
            try txn.openDatabase(named: DatabaseName.records(name)).map { try txn.statistics($0).entries }
        }
        if let bytes = try txn.get(meta, key: Array("schema/\(name)".utf8)), bytes.equals(describedBytes) {
            // Unchanged, the case of nearly every opening: found by comparing bytes, without decoding them.
            return ModelSchemaPlan(
                unchanged: type, name: name, autoIncrement: registration.numbersIDs,
                retired: try retiredProperties(name, in: txn), recordCount: try recordCount(storedUnder: name) ?? 0)
        }
        let described = try type.describedSchema()
        var stored: (schema: ModelSchema, name: String)?
        for name in [described.name] + declarations.formerNames {
            if let schema = try storedSchema(name, in: txn) {
                stored = (schema, name)
                break
            }
        }
        let records = try recordCount(storedUnder: stored?.name ?? described.name)
        return ModelSchemaPlan(
            described: described, declarations: declarations, stored: stored?.schema,
            retired: try stored.map { try retiredProperties($0.name, in: txn) } ?? [], storedUnder: stored?.name,
            hasRecordsDatabase: records != nil, recordCount: records ?? 0)
    }

    /// The schema version stored in the file; `nil` for a new store.
    func storedSchemaVersion(in txn: ReadTransaction) throws -> Int? {
        guard let stored = try txn.get(meta, key: Self.versionKey) else { return nil }
        guard stored.count == 8 else {
            throw StoreError.corruptedFile(path: path, reason: "the stored schema version is damaged")
        }
        return Int(Int64(littleEndian: stored.loadUnaligned(as: Int64.self)))
    }

    /// The counter raised whenever an opening rewrites records or changes indexes; a `Store` opened before such a
    /// change refuses to go on.
    func storedGeneration(in txn: ReadTransaction) throws -> UInt64 {
        guard let stored = try txn.get(meta, key: Self.generationKey) else { return 0 }
        guard stored.count == 8 else {
            throw StoreError.corruptedFile(path: path, reason: "the stored schema generation is damaged")
        }
        return UInt64(littleEndian: stored.loadUnaligned(as: UInt64.self))
    }

    /// The key dictionary stored for the model stored as `name`.
    func storedDictionary(_ name: String, in txn: ReadTransaction) throws -> KeyDictionary {
        guard let stored = try txn.get(meta, key: Array("keys/\(name)".utf8)) else { return .empty }
        guard let parsed = KeyDictionary.deserialize(stored) else {
            throw StoreError.corruptedFile(path: path, reason: "the key dictionary of \(name) is damaged")
        }
        return parsed
    }

    func storedSchema(_ name: String, in txn: ReadTransaction) throws -> ModelSchema? {
        guard let stored = try txn.get(meta, key: Array("schema/\(name)".utf8)) else { return nil }
        do {
            return try JSONDecoder().decode(ModelSchema.self, from: Data(stored))
        } catch {
            throw StoreError.corruptedFile(path: path, reason: "the stored schema of \(name) is damaged")
        }
    }

    /// The schema of every model the file describes: the configuration's as described, the others as stored.
    private func allSchemas(plans: [ModelSchemaPlan], in txn: ReadTransaction) throws -> [ModelSchema] {
        let registered = Set(plans.map(\.name))
        let others = try storedModelNames(in: txn).filter { !registered.contains($0) }
        return (try plans.map { try $0.schema() }) + (try others.compactMap { try storedSchema($0, in: txn) })
    }

    /// The stored names of every model the file describes.
    func storedModelNames(in txn: ReadTransaction) throws -> [String] {
        // "schema0" is the first key past every "schema/…" ("0" follows "/").
        let schemas = KeyRange(lower: Array("schema/".utf8), upper: Array("schema0".utf8))
        var names: [String] = []
        try txn.walk(meta, range: schemas) { entry in
            names.append(String(decoding: entry.key.dropFirst("schema/".utf8.count), as: UTF8.self))
            return true
        }
        return names
    }

    /// The links the stored schema describes from models outside `registered`, by target: what a delete must not
    /// leave dangling though this configuration does not name their models. Links that may dangle are left out.
    func foreignLinks(registered: Set<String>, in txn: ReadTransaction) throws -> [String: [ForeignLink]] {
        var found: [String: [ForeignLink]] = [:]
        for name in try storedModelNames(in: txn) where !registered.contains(name) {
            guard let schema = try storedSchema(name, in: txn) else { continue }
            for link in schema.links where !link.allowsDangling {
                guard let database = try txn.openDatabase(named: link.database) else { continue }
                found[link.target, default: []].append(ForeignLink(link: link, model: name, database: database))
            }
        }
        return found
    }

    /// The properties removed from the model stored as `name` whose values may remain in its records.
    private func retiredProperties(_ name: String, in txn: ReadTransaction) throws -> [PropertyShape] {
        guard let stored = try txn.get(meta, key: Array("retired/\(name)".utf8)) else { return [] }
        do {
            return try JSONDecoder().decode([PropertyShape].self, from: Data(stored))
        } catch {
            throw StoreError.corruptedFile(path: path, reason: "the removed properties of \(name) are damaged")
        }
    }

    /// Stores the plan's schema (already encoded) and removed properties, writing only what differs.
    private func storeSchema(_ plan: ModelSchemaPlan, encoded: [UInt8], in txn: LMDB.WriteTransaction) throws {
        let key = Array("schema/\(plan.name)".utf8)
        if try txn.get(meta, key: key)?.equals(encoded) != true { try txn.put(meta, key: key, value: encoded) }
        let retiredKey = Array("retired/\(plan.name)".utf8)
        if plan.retired.isEmpty {
            _ = try txn.delete(meta, key: retiredKey)
        } else {
            let bytes = Array(try ModelSchema.encoder.encode(plan.retired))
            if try txn.get(meta, key: retiredKey)?.equals(bytes) != true {
                try txn.put(meta, key: retiredKey, value: bytes)
            }
        }
    }

    /// Moves a renamed model's records, key dictionary and sequence to its new name; its old indexes and backlinks
    /// are dropped (the new ones are built under the new name).
    private func moveModel(from formerName: String, to name: String, in txn: LMDB.WriteTransaction) throws {
        if let old = try txn.openDatabase(named: DatabaseName.records(formerName)) {
            let new = try txn.createDatabase(named: DatabaseName.records(name))
            guard try txn.statistics(new).entries == 0 else {
                throw StoreError.invalidSchema(
                    model: name,
                    reason:
                        "records are stored both as \(formerName) (a former name) and as \(name); migrate or delete "
                        + "one of them")
            }
            var entries: [([UInt8], [UInt8])] = []
            try txn.walk(old) { entry in
                entries.append((Array(entry.key), Array(entry.value)))
                return true
            }
            for (key, value) in entries { try txn.put(new, key: key, value: value, flags: .append) }
            try txn.drop(old)
        }
        for prefix in ["keys/", "seq/"] {
            let oldKey = Array((prefix + formerName).utf8)
            if let value = try txn.get(meta, key: oldKey).map(Array.init) {
                try txn.put(meta, key: Array((prefix + name).utf8), value: value)
                _ = try txn.delete(meta, key: oldKey)
            }
        }
        try dropDerivedDatabases(of: formerName, in: txn)
        _ = try txn.delete(meta, key: Array("schema/\(formerName)".utf8))
        if let retired = try txn.get(meta, key: Array("retired/\(formerName)".utf8)).map(Array.init) {
            try txn.put(meta, key: Array("retired/\(name)".utf8), value: retired)
            _ = try txn.delete(meta, key: Array("retired/\(formerName)".utf8))
        }
    }

    /// Drops the indexes and backlink databases listed for the model stored as `model`, and the list.
    private func dropDerivedDatabases(of model: String, in txn: LMDB.WriteTransaction) throws {
        let listKey = Array("indexes/\(model)".utf8)
        guard let list = try txn.get(meta, key: listKey).map({ String(decoding: $0, as: UTF8.self) }) else { return }
        for database in list.split(separator: "\n") {
            if let derived = try txn.openDatabase(named: String(database)) { try txn.drop(derived) }
        }
        _ = try txn.delete(meta, key: listKey)
    }

    /// Removes a model this configuration does not register: its records, indexes, backlinks and schema. Its
    /// sequence stays, so that its ids are never handed out again if it comes back.
    func dropModel(_ model: String, in txn: LMDB.WriteTransaction) throws {
        if let records = try txn.openDatabase(named: DatabaseName.records(model)) { try txn.drop(records) }
        try dropDerivedDatabases(of: model, in: txn)
        for prefix in ["keys/", "schema/", "retired/"] { _ = try txn.delete(meta, key: Array((prefix + model).utf8)) }
    }

    /// Writes each declared default into every record that lacks the field.
    private func fillDefaults(
        _ fields: [String], of model: String, declarations: SchemaDeclarations, migration: Migration
    ) throws {
        guard let state = try migration.model(model) else { return }
        var values: [(String, [UInt8])] = []
        for field in fields {
            guard let encode = declarations.defaultValues[field] else { continue }
            values.append((field, try state.encodeDeclaredField(encode)))
        }
        try migration.enumerateRecords(ofType: model) { record in
            for (field, value) in values where !record.contains(field) { record.append(field, encoded: value) }
        }
    }

    /// Moves the sequence of an auto-increment model past its largest stored id, so that no id is handed out twice.
    private func advanceSequence(of model: String, migration: Migration) throws {
        guard let state = try migration.model(model) else { return }
        var largest: Int64?
        try migration.txn.walk(state.records, descending: true) { entry in
            let record = DynamicRecord(
                model: state, fields: try state.fields(of: entry.value, key: Array(entry.key)),
                primaryKey: Array(entry.key))
            largest = try record.value("id", as: Int64.self)
            return false
        }
        guard let largest, largest < Int64.max else { return }
        let key = Array("seq/\(model)".utf8)
        if let stored = try migration.txn.get(meta, key: key), stored.count == 8,
            Int64(littleEndian: stored.loadUnaligned(as: Int64.self)) > largest
        {
            return
        }
        try migration.txn.put(meta, key: key, value: withUnsafeBytes(of: (largest + 1).littleEndian, Array.init))
    }

    /// A step's error in words for `migrationFailed`: a duplicate id is said as a migration makes it (a record
    /// created, inserted or re-keyed onto an id another record keeps), not with the advice for a write.
    private static func describe(_ error: any Error) -> String {
        if case StoreError.duplicatePrimaryKey(let model, let id) = error {
            return "the step would leave two \(model) records with id \(id): a record it created, inserted or re-keyed "
                + "takes an id another record keeps"
        }
        return String(describing: error)
    }
}

extension Model {
    /// The model's schema as opening compares it: described once per process from its type's metadata and its
    /// `Schema`, as a type cannot change while it runs, and decoded from its record form at each call (see
    /// `describedSchemas`): Cellar's own decoder reads it in a fraction of what `JSONDecoder` spends on the stored form.
    static func describedSchema() throws(StoreError) -> ModelSchema {
        let form = try describedForm()
        do {
            return try form.record.withUnsafeBytes { bytes in
                try RecordDecoder.decode(ModelSchema.self, from: bytes, dictionary: form.dictionary)
            }
        } catch {
            throw .invalidSchema(model: schema.name, reason: "its described schema could not be read back: \(error)")
        }
    }

    /// The described schema as stored (encoded), and the changes the `Schema` declares: described once per process.
    /// Comparing the bytes with the stored ones, as nearly every opening does, needs no decoding.
    static func described() throws(StoreError) -> DescribedSchema {
        (try describedForm().stored, Self.schema.declarations)
    }

    private static func describedForm() throws(StoreError) -> DescribedForm {
        let identity = ObjectIdentifier(Self.self)
        if let form = describedSchemas.withLock({ $0[identity] }) { return form }
        let schema = describeSchema(Self.schema)
        let form: DescribedForm
        do {
            let encoder = RecordEncoder(dictionary: .empty)
            let record = try encoder.encode(schema)
            form = DescribedForm(
                stored: Array(try ModelSchema.encoder.encode(schema)), record: record,
                dictionary: encoder.absorbAddedNames())
        } catch {
            throw .invalidSchema(model: schema.name, reason: "its described schema could not be encoded: \(error)")
        }
        describedSchemas.withLock { $0[identity] = form }
        return form
    }

    /// Describes the model's schema, as the first opening in a process does.
    static func describeSchema() -> ModelSchema { describeSchema(Self.schema) }

    /// The model's fields from its stored properties (`SchemaReflection`: no value is made and none of its code
    /// runs), its indexes and links from its `Schema`. A `@Record` model's fields are those its generated code
    /// writes, in their order.
    private static func describeSchema(_ schema: Schema<Self>) -> ModelSchema {
        var properties = SchemaReflection.properties(of: Self.self)
        if let keys = Self._recordKeys {
            properties = keys.names.map { name in
                properties.first { $0.name == name } ?? PropertyShape(name: name, shape: .opaque("?"), isOptional: true)
            }
        }
        return ModelSchema(
            name: schema.name, properties: properties,
            indexes: schema.indexes.map { $0.descriptor(model: schema.name) }
                + schema.fullTextIndexes.map { $0.descriptor(model: schema.name) },
            links: schema.links.map { $0.descriptor(model: schema.name) }, autoIncrement: schema.sequence != nil)
    }
}

typealias DescribedSchema = (bytes: [UInt8], declarations: SchemaDeclarations)

/// A model type whose first stored record in a data file read at an opening of this process.
private struct SampledModel: Hashable {
    let type: ObjectIdentifier
    let file: String
}

/// The models whose first record an opening of this process decoded without fault, by file.
private let sampledModels = Lock<Set<SampledModel>>([])

/// The described schemas of this process, in their stored form. Kept as bytes rather than as `ModelSchema`s: a
/// `ValueShape` is an `indirect enum`, whose boxes Swift points to with the case in the pointer's spare bits, and a
/// process-wide table of them reads to LeakSanitizer as leaked memory (`swift test --sanitize=address`). Decoding one
/// costs microseconds, once per model an opening registers.
private let describedSchemas = Lock<[ObjectIdentifier: DescribedForm]>([:])

/// A described schema, kept as bytes: as stored (JSON), and in Cellar's record format with the key dictionary it was
/// written with, which decodes faster.
private struct DescribedForm: Sendable {
    let stored: [UInt8]
    let record: [UInt8]
    let dictionary: KeyDictionary
}

extension ModelSchema {
    /// The stored form: JSON with sorted keys, so that equal schemas have equal bytes and `mdb_dump` shows them.
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }
}

/// For Cellar's benchmarks: what the first opening in a process spends on schemas before it reads the file, described
/// without the per-process cache and encoded as stored. Returns the number of properties found.
@_spi(Benchmarks) public func describeSchemasUncached(_ models: [any Model.Type]) throws -> Int {
    var properties = 0
    for type in models {
        let schema = type.describeSchema()
        _ = try ModelSchema.encoder.encode(schema)
        properties += schema.properties.count
    }
    return properties
}
