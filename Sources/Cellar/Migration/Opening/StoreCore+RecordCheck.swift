import LMDB

/// Opening's check of stored records against a model whose shape capture does not look into: when the schema or the
/// schema version changed, every record is decoded with the model's type, so that a record it can no longer read is
/// a migration at opening and not an error at some later read.
extension StoreCore {
    /// The change that makes opening a migration, when a record of `plan`'s model no longer decodes as `type`;
    /// `nil` when every record reads.
    ///
    /// - Throws: `decodingFailed` for a record whose bytes changed after they were written (its checksum does not
    ///   match): damage, which no migration mends.
    func unreadableRecord(
        of type: any Model.Type, plan: ModelSchemaPlan, in txn: ReadTransaction
    ) throws -> SchemaChange? {
        guard let records = try txn.openDatabase(named: DatabaseName.records(plan.name)) else { return nil }
        let dictionary = try storedDictionary(plan.name, in: txn)
        guard let (key, error) = try type.firstUnreadableRecord(in: txn, records: records, dictionary: dictionary)
        else { return nil }
        if let damage = error as? RecordFormat.Damage {
            throw StoreError.decodingFailed(
                model: plan.name, id: KeyEncoding.describe(key), field: "", reason: damage.description)
        }
        let failure = DecodingFailure(error)
        let property =
            try failure.path.first ?? plan.schema().properties.first(where: { $0.shape.holdsOpaque })?.name ?? "?"
        let reason = failure.reason.count > 200 ? String(failure.reason.prefix(200)) + "…" : failure.reason
        return .propertyUnreadable(
            model: plan.name, property: failure.path.isEmpty ? property : failure.path.joined(separator: "."),
            reason: "the record with id \(KeyEncoding.describe(key)) says: \(reason)")
    }
}

/// What a `DecodingError` says, read in one place: the path of names to the value, and the reason in words.
struct DecodingFailure {
    /// The coding path, list positions as `[n]`.
    let path: [String]
    let reason: String

    init(_ error: any Error) {
        let context: DecodingError.Context?
        switch error {
        case DecodingError.keyNotFound(let key, let found):
            context = found
            reason = "the key '\(key.stringValue)' is missing"
        case DecodingError.dataCorrupted(let found), DecodingError.typeMismatch(_, let found),
            DecodingError.valueNotFound(_, let found):
            context = found
            reason = found.debugDescription
        default:
            context = nil
            reason = String(describing: error)
        }
        path = context?.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue } ?? []
    }
}

extension Model {
    /// The key of the first stored record that does not decode as this model, and the error it gave: a
    /// `RecordFormat.Damage` when the record's checksum or format byte is wrong, a decoding error otherwise.
    static func firstUnreadableRecord(
        in txn: ReadTransaction, records: Database, dictionary: KeyDictionary
    ) throws -> ([UInt8], any Error)? {
        let decoder = RecordDecoder()
        var found: ([UInt8], any Error)?
        try txn.walk(records) { entry in
            do {
                _ = try decoder.decodeRecord(Self.self, from: entry.value, dictionary: dictionary)
                return true
            } catch {
                found = (Array(entry.key), RecordFormat.Damage.underlying(error) ?? error)
                return false
            }
        }
        return found
    }
}
