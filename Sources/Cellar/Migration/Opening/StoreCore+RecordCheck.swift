import LMDB

/// Opening's check of stored records against the model: the records, decoded by the model's own type, say whether it
/// still reads them. Every record when the model's fields changed, the first one at every other opening, so that a
/// record the model can no longer read is a migration at opening and not an error at some later read. These are the
/// only values Cellar hands a model's `init(from:)` at opening: records its own encoding wrote.
extension StoreCore {
    /// The change that makes opening a migration, when a record of the model stored as `name` no longer decodes as
    /// `type`; `nil` when every record looked at reads. A first record that reads teaches this process how the
    /// model's records tie to its stored properties (`CodableFields`).
    ///
    /// - Throws: `decodingFailed` for a record whose bytes changed after they were written (its checksum does not
    ///   match): damage, which no migration mends.
    func unreadableRecord(
        of type: any Model.Type, storedAs name: String, in txn: ReadTransaction, firstOnly: Bool
    ) throws -> SchemaChange? {
        var decodedOne = false
        return try unreadableRecord(of: type, storedAs: name, in: txn, firstOnly: firstOnly, decodedOne: &decodedOne)
    }

    /// The same, and whether a record was decoded (`decodedOne`): not when the model has none, or its first one
    /// was damaged or did not read.
    func unreadableRecord(
        of type: any Model.Type, storedAs name: String, in txn: ReadTransaction, firstOnly: Bool,
        decodedOne: inout Bool
    ) throws -> SchemaChange? {
        guard let records = try txn.openDatabase(named: DatabaseName.records(name)) else { return nil }
        let dictionary = try storedDictionary(name, in: txn)
        let (found, decoded) = try type.firstUnreadableRecord(
            in: txn, records: records, dictionary: dictionary, firstOnly: firstOnly)
        decodedOne = decoded
        guard let (key, error) = found else { return nil }
        if let damage = error as? RecordFormat.Damage {
            throw StoreError.decodingFailed(
                model: name, id: KeyEncoding.describe(key), field: "", reason: damage.description)
        }
        let failure = DecodingFailure(error)
        let reason = failure.reason.count > 200 ? String(failure.reason.prefix(200)) + "…" : failure.reason
        return .propertyUnreadable(
            model: name, property: failure.path.isEmpty ? "init(from:)" : failure.path.joined(separator: "."),
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
            context = DecodingError.Context(
                codingPath: found.codingPath + [key], debugDescription: found.debugDescription)
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
    /// The key of the first stored record (of all, or of the first alone) that does not decode as this model, and
    /// the error it gave: a `RecordFormat.Damage` when the record's checksum or format byte is wrong, a decoding
    /// error otherwise. The first record that decodes teaches this process the model's keys and fields.
    static func firstUnreadableRecord(
        in txn: ReadTransaction, records: Database, dictionary: KeyDictionary, firstOnly: Bool = false
    ) throws -> (failure: ([UInt8], any Error)?, decodedOne: Bool) {
        let decoder = RecordDecoder()
        var found: ([UInt8], any Error)?
        var learnt = false
        try txn.walk(records) { entry in
            do {
                let value = try decoder.decodeRecord(Self.self, from: entry.value, dictionary: dictionary)
                if !learnt {
                    CodableFields.learn(from: value, dictionary: dictionary)
                    learnt = true
                }
                return !firstOnly
            } catch {
                let damage = RecordFormat.Damage.underlying(error)
                // The first record alone is a sample: a damaged one says nothing of the model, and reads and
                // `verifyIntegrity()` report it, while opening goes on so that it can be deleted.
                if firstOnly, damage != nil { return false }
                found = (Array(entry.key), damage ?? error)
                return false
            }
        }
        return (found, learnt)
    }
}
