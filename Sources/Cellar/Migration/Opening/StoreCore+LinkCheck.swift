import LMDB

/// After a migration's steps: every link into a model they wrote must still lead to a record. A step edits records
/// without their types and deletes without delete rules, so what it leaves is checked, not trusted.
extension StoreCore {
    /// The first link, from any registered model, that leads into a model in `touched` (or out of one) to a record
    /// that does not exist, in words; `nil` when every such link leads somewhere.
    func danglingLink(after touched: Set<String>, schemas: [ModelSchema], in txn: ReadTransaction) throws -> String? {
        guard !touched.isEmpty else { return nil }
        for schema in schemas {
            let links = schema.links.filter {
                !$0.allowsDangling && (touched.contains(schema.name) || touched.contains($0.target))
            }
            guard !links.isEmpty, let records = try txn.openDatabase(named: DatabaseName.records(schema.name))
            else { continue }
            let dictionary = try storedDictionary(schema.name, in: txn)
            let targets = try links.map { try txn.openDatabase(named: DatabaseName.records($0.target)) }
            var found: String?
            try txn.walk(records) { entry in
                guard let record = try? RecordValue(record: entry.value, dictionary: dictionary) else { return true }
                for (link, target) in zip(links, targets) {
                    let shape = schema.shape(at: link.property.split(separator: "."))
                    guard let keys = try? link.targetKeys(in: record, shape: shape) else { continue }
                    for key in keys where try target.flatMap({ try txn.get($0, key: key) }) == nil {
                        found =
                            "\(schema.name).\(link.property) of the record with id \(KeyEncoding.describe(Array(entry.key))) "
                            + "links to the \(link.target) with id \(KeyEncoding.describe(key)), which does not exist "
                            + "after the migration; delete or change that \(schema.name) in the step too "
                            + "(Migration.enumerateRecords(ofType: \"\(schema.name)\"))"
                        return false
                    }
                }
                return true
            }
            if let found { return found }
        }
        return nil
    }
}
