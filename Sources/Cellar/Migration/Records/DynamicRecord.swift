import Foundation

/// A stored record read without its Swift type, as a migration sees it: named fields with typed getters, and edits
/// that touch only the fields they name (Realm's `MigrationObject`).
///
/// ```swift
/// try migration.enumerateRecords(ofType: "Pet") { pet in
///     let name = try pet.value("name", as: String.self) ?? ""
///     try pet.set("displayName", to: name.capitalized)
///     pet.remove("legacyFlag")
/// }
/// ```
///
/// Setting `id` gives the record a new primary key.
public struct DynamicRecord {
    /// The stored name of the record's model.
    public let model: String
    var fields: RecordFields
    let context: MigratingModel
    /// The record's primary key; changed by setting `id`.
    var primaryKey: [UInt8]
    /// Set by `delete()`.
    var isDeleted = false
    /// Set by every edit, so that only edited records are written back.
    var isEdited = false

    init(model: MigratingModel, fields: RecordFields, primaryKey: [UInt8]) {
        self.model = model.name
        self.context = model
        self.fields = fields
        self.primaryKey = primaryKey
    }

    /// The record's id, described as messages show it.
    public var id: String { KeyEncoding.describe(primaryKey) }

    /// The names of the record's fields, in stored order.
    public var fieldNames: [String] { fields.names(in: context.dictionary) }

    /// Whether the record has a field named `field`.
    public func contains(_ field: String) -> Bool { fields.index(of: field, in: context.dictionary) != nil }

    /// The value of `field` as `T`, or `nil` when the record lacks it or stores `nil`.
    ///
    /// - Throws: `StoreError.decodingFailed` when the stored value cannot be read as `T`.
    public func value<T: Decodable>(_ field: String, as type: T.Type = T.self) throws(StoreError) -> T? {
        guard let position = fields.index(of: field, in: context.dictionary) else { return nil }
        if fields.valueType(at: position) == RecordFormat.ValueType.null.rawValue { return nil }
        if let scalar = fields.withValue(at: position, { ScalarField.value(T.self, in: $0, at: $1) }) { return scalar }
        do {
            return try fields.withValue(at: position) { bytes, offset in
                try context.decoder.decode(T.self, from: bytes, at: offset, dictionary: context.dictionary)
            }
        } catch let error as DecodingError {
            throw StoreError(error, model: model, id: id).at(field)
        } catch {
            throw .decodingFailed(model: model, id: id, field: field, reason: "\(error)")
        }
    }

    /// The whole record decoded as `type`: a model type kept from an older version, or the new one.
    ///
    /// - Throws: `StoreError.decodingFailed` naming the field that does not fit.
    public func decode<T: Decodable>(as type: T.Type) throws(StoreError) -> T {
        do {
            return try fields.serialized.withUnsafeBytes { bytes in
                try context.decoder.decode(T.self, from: bytes, dictionary: context.dictionary)
            }
        } catch let error as DecodingError {
            throw StoreError(error, model: model, id: id)
        } catch {
            throw .decodingFailed(model: model, id: id, field: "", reason: "\(error)")
        }
    }

    /// Sets `field` to `value`, adding the field when the record lacks it. Setting `id` changes the primary key.
    ///
    /// - Throws: `StoreError.encodingFailed` when `value` cannot be encoded; `.keyTooLong` or `.invalidKey` for an id
    ///   that cannot be a key.
    public mutating func set<T: Encodable>(_ field: String, to value: T) throws(StoreError) {
        if field == "id" {
            do {
                primaryKey = try KeyEncoding.key(value)
            } catch {
                throw .invalidKey(model: model, reason: "\(error)")
            }
        }
        let encoded: [UInt8]
        if let scalar = ScalarField.encoded(value) {
            encoded = scalar
        } else {
            encoded = try context.encodeField(value)
        }
        isEdited = true
        if let position = fields.index(of: field, in: context.dictionary) {
            fields.fields[position].value = .new(encoded)
        } else {
            fields.fields.append(.init(key: .tag(context.tag(for: field)), value: .new(encoded)))
        }
    }

    /// Adds a field whose value is already encoded.
    mutating func append(_ field: String, encoded value: [UInt8]) {
        fields.fields.append(.init(key: .tag(context.tag(for: field)), value: .new(value)))
        isEdited = true
    }

    /// Removes `field`; does nothing when the record lacks it.
    public mutating func remove(_ field: String) {
        guard let position = fields.index(of: field, in: context.dictionary) else { return }
        fields.fields.remove(at: position)
        isEdited = true
    }

    /// Removes the field at a dotted `path` (`address.zip`) in every object it reaches, nested values and the elements
    /// of lists and dictionaries included; `properties` (the model's fields) tell those apart.
    mutating func clear(path: [String], in properties: [PropertyShape]) throws(StoreError) {
        guard let first = path.first else { return }
        guard path.count > 1 else { return remove(first) }
        guard let position = fields.index(of: first, in: context.dictionary),
            let shape = properties.first(where: { $0.name == first })?.shape
        else { return }
        let dictionary = context.dictionary
        let edited: [UInt8]?
        do {
            edited = try fields.withValue(at: position) { (bytes, offset) throws(RecordFields.Damaged) in
                try RecordFields.removing(
                    path.dropFirst(), fromValueAt: offset, in: bytes, shape: shape, dictionary: dictionary)
            }
        } catch {
            throw .decodingFailed(model: model, id: id, field: first, reason: "the value's bytes are damaged")
        }
        guard let edited else { return }
        fields.fields[position].value = .new(edited)
        isEdited = true
    }

    /// Moves the value of `field` to `newName`, replacing any value there; does nothing when the record lacks
    /// `field`.
    public mutating func rename(_ field: String, to newName: String) {
        guard field != newName, contains(field) else { return }
        if let existing = fields.index(of: newName, in: context.dictionary) { fields.fields.remove(at: existing) }
        guard let position = fields.index(of: field, in: context.dictionary) else { return }
        fields.fields[position].key = .tag(context.tag(for: newName))
        isEdited = true
    }

    /// Deletes the record when the enumeration that handed it out moves on.
    public mutating func delete() { isDeleted = true }
}

extension StoreError {
    /// The same decoding failure, named at `field` of the record.
    fileprivate func at(_ field: String) -> StoreError {
        guard case .decodingFailed(let model, let id, let inner, let reason) = self else { return self }
        return .decodingFailed(model: model, id: id, field: inner.isEmpty ? field : field + "." + inner, reason: reason)
    }
}
