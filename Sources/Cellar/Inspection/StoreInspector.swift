import Foundation
import LMDB

/// A store opened read-only without its app's model types, for the `cellar` tool: what `_meta` says about each
/// stored model, its records as `RecordValue`s, and checks that need no Swift type.
///
/// Opening one never writes: not the data file, not the reader table of the lock file (stale readers stay for
/// `overview` to report), not the folder.
package final class StoreInspector: Sendable {
    let core: StoreCore

    /// Opens the store in `directory` read-only.
    ///
    /// - Throws: `StoreError.io` when there is no store there; `incompatibleFile` or `corruptedFile` as `Store` does.
    package init(at directory: URL) throws(StoreError) {
        var configuration = Configuration(models: [])
        configuration.readOnly = true
        core = try StoreCore.open(directory: directory, configuration: configuration)
    }

    /// The store's folder.
    package var directory: URL { core.directory }

    /// The models the file holds, by name, as `_meta` describes them, with their record and entry counts.
    package func models() throws(StoreError) -> [StoredModel] {
        try read("read the schemas of") { txn in
            try core.storedModelNames(in: txn).map { name in try model(named: name, in: txn) }
        }
    }

    /// The model stored as `name`, or `nil` when the file holds none of that name.
    package func model(named name: String) throws(StoreError) -> StoredModel? {
        try read("read the schema of") { txn in
            try txn.get(core.meta, key: Array("schema/\(name)".utf8)) == nil ? nil : try model(named: name, in: txn)
        }
    }

    private func model(named name: String, in txn: ReadTransaction) throws -> StoredModel {
        guard let bytes = try txn.get(core.meta, key: Array("schema/\(name)".utf8)) else {
            throw StoreError.corruptedFile(path: core.path, reason: "the stored schema of \(name) is missing")
        }
        let schema: ModelSchema
        do { schema = try JSONDecoder().decode(ModelSchema.self, from: Data(bytes)) } catch {
            throw StoreError.corruptedFile(path: core.path, reason: "the stored schema of \(name) is damaged")
        }
        func entries(_ database: String) throws -> Int? {
            try txn.openDatabase(named: database).map { try txn.statistics($0).entries }
        }
        var nextID: Int64?
        if let stored = try txn.get(core.meta, key: Array("seq/\(name)".utf8)), stored.count == 8 {
            nextID = Int64(littleEndian: stored.loadUnaligned(as: Int64.self))
        }
        return StoredModel(
            schema: schema, recordCount: try entries(DatabaseName.records(name)) ?? 0,
            indexes: try schema.indexes.map { index in
                StoredModel.Database(name: index.database, entries: try entries(index.database))
            },
            links: try schema.links.map { link in
                StoredModel.Link(description: link.label, database: link.database, entries: try entries(link.database))
            }, nextID: nextID, dictionary: try core.storedDictionary(name, in: txn))
    }

    /// Runs `body` in one read transaction, its failures told as `StoreError`s that say what was being done.
    func read<R>(_ operation: String, _ body: (ReadTransaction) throws -> R) throws(StoreError) -> R {
        try core.run("\(operation) the store") { try core.environment.read(body) }
    }
}

/// A model as the file describes it, without its Swift type.
package struct StoredModel: Sendable {
    /// An index or backlink database and how many entries it holds (`nil` when the file lacks it).
    package struct Database: Sendable, Hashable {
        package let name: String
        package let entries: Int?
    }

    /// A link the model declares, as the stored schema words it (`dogs → Dog (deleteRule: .cascade, targetDeleteRule: .removeLink)`).
    package struct Link: Sendable, Hashable {
        package let description: String
        package let database: String
        package let entries: Int?
    }

    let schema: ModelSchema
    package let recordCount: Int
    package let indexes: [Database]
    package let links: [Link]
    /// The next id of an auto-increment model.
    package let nextID: Int64?
    let dictionary: KeyDictionary

    package var name: String { schema.name }
    package var autoIncrement: Bool { schema.autoIncrement }
    /// The model's fields, nested ones indented, with their kinds in Realm's words: `name: string`, `owner: int?`.
    package var fieldLines: [String] { Self.lines(schema.properties, depth: 0) }

    private static func lines(_ properties: [PropertyShape], depth: Int) -> [String] {
        properties.flatMap { property -> [String] in
            let line =
                String(repeating: "  ", count: depth) + property.name + ": " + property.shape.kindName
                + (property.isOptional ? "?" : "")
            switch property.shape {
            case .object(let fields), .list(.object(let fields)), .dictionary(.object(let fields)):
                return [line] + lines(fields, depth: depth + 1)
            default: return [line]
            }
        }
    }
}
