/// The primary keys a transaction inserted, updated and deleted, per model, in order: what observers are told.
///
/// Each write transaction writes its log into the `_changes` database, keyed by the version it creates, in the same
/// commit: observers in this process and in others read what changed between two versions from there, without
/// re-running their queries to find out. A model with more than `ChangeLog.keyLimit` changes in one transaction is
/// logged as changed wholesale.
struct ChangeLog {
    enum Kind: UInt8 {
        case inserted = 0
        case updated = 1
        case deleted = 2
    }

    struct Change {
        let kind: Kind
        let key: [UInt8]
    }

    /// The changes of each model, in order; `nil` once a model has more than `keyLimit` of them (changed wholesale),
    /// so that a bulk write does not hold every key it wrote until the commit.
    private(set) var byModel: [String: [Change]?] = [:]

    /// Beyond this many changes of one model in one transaction, the log says "everything" instead of listing them:
    /// a bulk import would otherwise double its size in the log.
    static let keyLimit = 1_000
    /// How many versions the log keeps. An observer further behind reads the whole query again.
    static let retainedVersions: UInt64 = 1_000
    /// Old entries are dropped once every this many versions, together.
    static let pruneInterval: UInt64 = 64

    var isEmpty: Bool { byModel.isEmpty }

    /// Logs one change; returns whether the model is now logged as changed wholesale.
    @discardableResult
    mutating func record(_ kind: Kind, key: [UInt8], model: String) -> Bool {
        guard var changes = byModel.removeValue(forKey: model) ?? [] else {
            byModel[model] = .some(nil)
            return true
        }
        changes.append(Change(kind: kind, key: key))
        let wholesale = changes.count > Self.keyLimit
        byModel[model] = wholesale ? .some(nil) : changes
        return wholesale
    }

    /// The stored form: a format byte, then per model its name, a flag (0 listed, 1 wholesale) and, when listed, the
    /// changes (kind, key).
    var serialized: [UInt8] {
        var bytes: [UInt8] = [1]
        for (model, changes) in byModel.sorted(by: { $0.key < $1.key }) {
            Varint.append(UInt64(model.utf8.count), to: &bytes)
            bytes.append(contentsOf: model.utf8)
            guard let changes else {
                bytes.append(1)
                continue
            }
            bytes.append(0)
            Varint.append(UInt64(changes.count), to: &bytes)
            for change in changes {
                bytes.append(change.kind.rawValue)
                Varint.append(UInt64(change.key.count), to: &bytes)
                bytes.append(contentsOf: change.key)
            }
        }
        return bytes
    }
}

/// The records changed between two versions, read from the change log: per model, the primary keys touched, or
/// `nil` for a model changed wholesale.
struct ChangedRecords: Sendable {
    private(set) var byModel: [String: Set<KeyBytes>?] = [:]

    /// Whether any of `models` changed.
    func touches(_ models: some Sequence<String>) -> Bool { models.contains { byModel[$0] != nil } }

    /// The keys of `model` that changed; `nil` when it changed wholesale (or not at all: ask `touches` first).
    func keys(of model: String) -> Set<KeyBytes>? { byModel[model] ?? nil }

    /// Whether `model` changed wholesale: too many of its records for the log to list.
    func changedWholesale(_ model: String) -> Bool { byModel[model].map { $0 == nil } ?? false }

    /// Whether the record of `model` with `key` may have changed: it is listed, or its model changed wholesale.
    func mayHaveChanged(_ key: KeyBytes, of model: String) -> Bool {
        guard let changed = byModel[model] else { return false }
        return changed?.contains(key) ?? true
    }

    /// Adds one logged transaction; `false` when its bytes are damaged.
    mutating func add(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var reader = ByteReader(bytes)
        do {
            guard try reader.byte() == 1 else { return false }
            while !reader.isAtEnd {
                let name = try reader.bytes(Int(clamping: try reader.varint()))
                guard let model = String(validating: name, as: UTF8.self) else { return false }
                if try reader.byte() == 1 {
                    byModel[model] = .some(nil)
                    continue
                }
                let count = try reader.varint()
                var keys: Set<KeyBytes>? = byModel[model] == nil ? [] : byModel[model] ?? nil
                for _ in 0..<count {
                    _ = try reader.byte()
                    let key = Array(try reader.bytes(Int(clamping: try reader.varint())))
                    keys?.insert(KeyBytes(key))
                }
                byModel[model] = .some(keys)
            }
            return true
        } catch {
            return false
        }
    }
}
