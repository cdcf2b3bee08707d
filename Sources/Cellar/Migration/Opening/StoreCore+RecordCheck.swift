import LMDB

/// Opening's check of stored records against a model whose shape capture does not look into: when the schema or the
/// schema version changed, every record is decoded with the model's type, so that a record it can no longer read is
/// a migration at opening and not an error at some later read.
extension StoreCore {
    /// The change that makes opening a migration, when a record of `plan`'s model no longer decodes as `type`;
    /// `nil` when every record reads.
    func unreadableRecord(
        of type: any Model.Type, plan: ModelSchemaPlan, in txn: ReadTransaction
    ) throws -> SchemaChange? {
        guard let records = try txn.openDatabase(named: DatabaseName.records(plan.name)) else { return nil }
        let dictionary = try storedDictionary(plan.name, in: txn)
        guard let (key, error) = try type.firstUnreadableRecord(in: txn, records: records, dictionary: dictionary)
        else { return nil }
        let path = Self.codingPath(of: error)
        let property = path.first ?? plan.schema.properties.first(where: { $0.shape.holdsOpaque })?.name ?? "?"
        return .propertyUnreadable(
            model: plan.name, property: path.isEmpty ? property : path.joined(separator: "."),
            reason: "the record with id \(KeyEncoding.describe(key)) says: \(Self.describeDecoding(error))")
    }

    private static func codingPath(of error: any Error) -> [String] {
        let context: DecodingError.Context? =
            switch error {
            case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
                DecodingError.valueNotFound(_, let context), DecodingError.keyNotFound(_, let context):
                context
            default: nil
            }
        return context?.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue } ?? []
    }

    private static func describeDecoding(_ error: any Error) -> String {
        let text =
            switch error {
            case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
                DecodingError.valueNotFound(_, let context):
                context.debugDescription
            case DecodingError.keyNotFound(let key, _): "the key '\(key.stringValue)' is missing"
            default: String(describing: error)
            }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}

extension Model {
    /// The key of the first stored record that does not decode as this model, and the error it gave.
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
                found = (Array(entry.key), error)
                return false
            }
        }
        return found
    }
}
