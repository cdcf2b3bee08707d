import Foundation

@testable import Cellar

/// One fuzz target for each kind of bytes Cellar reads and did not write itself. Each must never crash, hang or trip
/// a sanitizer, whatever the input; errors are the expected answer to most inputs.
public enum Readers {
    /// A stored record, through every reader of records: `Codable` and generated decoding, the reader without a type
    /// (`cellar`, migrations), the field editor of migrations and sync, the checks queries make on record bytes, and
    /// the link edit of delete rules. Each input is read as it is (the checksum refuses almost all of it) and again
    /// sealed with its checksum, as a writer of the format would store it, so that the readers behind the checksum
    /// meet it. The seeds are records of both fuzz models, without their checksum.
    public static let record = FuzzTarget(
        name: "record",
        seeds: { try sampleRecords().map { Array($0.dropLast(RecordFormat.checksumSize)) } },
        body: { input in
            readRecord(input)
            var sealed = Array(input)
            RecordFormat.seal(&sealed)
            sealed.withUnsafeBytes(readRecord)
        })

    private static func readRecord(_ bytes: UnsafeRawBufferPointer) {
        let decoder = RecordDecoder()
        let dictionary = sampleDictionary
        _ = try? decoder.decodeRecord(FuzzPet.self, from: bytes, dictionary: dictionary)
        _ = try? decoder.decodeRecord(FuzzOwner.self, from: bytes, dictionary: dictionary)
        _ = try? decoder.decode(FuzzOwner.self, from: bytes, dictionary: dictionary)
        if let value = try? RecordValue(record: bytes, dictionary: dictionary) {
            _ = value.value(at: ["address", "street"])
            _ = String(describing: value)
        }
        if let fields = try? RecordFields(record: bytes) {
            _ = fields.serialized
            for position in fields.fields.indices { _ = fields.valueType(at: position) }
        }
        for filter in filters(decoder: decoder) { _ = filter.mayMatch(bytes) }
        guard let body = RecordFormat.uncheckedBody(of: bytes), let (start, end) = RecordEntries.container(of: body)
        else { return }
        let keyLimit = RecordEntries.keyLimit(of: dictionary)
        for tag in 0..<UInt64(dictionary.names.count + 1) {
            _ = RecordEntries.locate(tag << 1, in: body, from: start, to: end, keyLimit: keyLimit)
        }
        for (name, isList, target) in [("pets", true, "pet-1"), ("owner", false, "")] {
            guard let tag = dictionary.tags[name], let key = try? KeyEncoding.key(isList ? target : "x") else {
                continue
            }
            _ = LinkBytes.removing(
                [key], fromFieldCoded: UInt64(tag) << 1, isList: isList, in: Array(body), keyLimit: keyLimit)
        }
    }

    /// The byte filters of conditions of each kind a query checks on record bytes.
    private static func filters(decoder: RecordDecoder) -> [BytesFilter] {
        var filters: [BytesFilter] = []
        if let keys = StoredFields.keys(of: FuzzPet.self) {
            let conditions: [Condition<FuzzPet>] = [
                \.age == 3, \.name == "Pet number 3", \.age == 3 || \.name == "x", \.chip == nil, \.weight == 1.5,
            ]
            for condition in conditions {
                if let filter = BytesFilter(condition.node, keys: keys, decoder: decoder, dictionary: sampleDictionary)
                {
                    filters.append(filter)
                }
            }
        }
        if let keys = StoredFields.keys(of: FuzzOwner.self),
            let filter = BytesFilter(
                (\FuzzOwner.name == "Owner 2").node, keys: keys, decoder: decoder, dictionary: sampleDictionary)
        {
            filters.append(filter)
        }
        return filters
    }

    /// Key bytes, as indexes, backlinks and the full-text index store them and messages and `cellar` describe them.
    public static let key = FuzzTarget(
        name: "key",
        seeds: {
            var seeds: [[UInt8]] = []
            for n in 0..<4 {
                let pet = FuzzPet.sample(n)
                seeds.append(try KeyEncoding.key(pet.id))
                seeds.append(try KeyEncoding.key(pet.age))
                seeds.append(try KeyEncoding.key(pet.born))
                seeds.append(try KeyEncoding.key(pet.chip))
                seeds.append(try KeyEncoding.key(pet.weight))
                seeds.append(try KeyEncoding.key(Int64(n) - 2))
                var list: [UInt8] = []
                IndexKeys.append(try pet.tags.map { try KeyEncoding.key($0) }, to: &list)
                seeds.append(list)
            }
            seeds.append(PostingBlock.termKey(Array("dog".utf8)))
            return seeds
        },
        body: { input in
            _ = KeyEncoding.describe(input)
            _ = IndexKeys.split(Array(input))
            _ = PostingBlock.parse(key: input)
        })

    /// A whole `data.mdb`, through the check of its pages that opening runs before LMDB reads any (every page: the
    /// inputs are far below the size where opening checks only the pages it reads).
    public static let pages = FuzzTarget(
        name: "pages",
        seeds: { [try sampleStoreFile()] },
        body: { input in
            let folder = folder(named: "pages", holding: input)
            var configuration = Configuration(models: [])
            configuration.readOnly = true
            _ = try? StoreCore.open(directory: folder, configuration: configuration)
        })

    /// A whole `data.mdb`, opened as `cellar info`, `cellar dump` and `cellar verify` open a folder, then by an app
    /// with the fuzz models, read-only and then for writing: every record read, every query kind run,
    /// `verifyIntegrity()`, a write.
    public static let open = FuzzTarget(
        name: "open",
        seeds: { [try sampleStoreFile()] },
        body: { input in
            let folder = folder(named: "open", holding: input)
            inspect(folder)
            readAsApp(folder, readOnly: true)
            readAsApp(folder, readOnly: false)
        })

    /// What `cellar` does with a folder.
    private static func inspect(_ folder: URL) {
        guard let inspector = try? StoreInspector(at: folder) else { return }
        _ = try? inspector.overview()
        if let models = try? inspector.models() {
            for model in models {
                var count = 0
                try? inspector.forEachRecord(of: model) { _ in
                    count += 1
                    return count < 100
                }
            }
        }
        _ = try? inspector.verify()
    }

    /// What an app does with a store of the fuzz models.
    private static func readAsApp(_ folder: URL, readOnly: Bool) {
        var configuration = Configuration(models: fuzzModels)
        configuration.readOnly = readOnly
        guard let store = try? Store(at: folder, configuration: configuration) else { return }
        _ = try? store.objects(FuzzPet.self).results()
        _ = try? store.objects(FuzzOwner.self).results()
        _ = try? store.object(FuzzPet.self, id: "pet-3")
        _ = try? store.objects(FuzzPet.self).where(\.age == 3).results()
        _ = try? store.objects(FuzzPet.self).where(\.weight > 2).sorted(by: \.age).results()
        _ = try? store.objects(FuzzPet.self).where(.matches(\.name, "number")).results()
        _ = try? store.objects(FuzzOwner.self).where(\.name == "Owner 2").results()
        _ = try? store.read { scope in try scope.objects(FuzzPet.self).where(.contains(\.tags, "all")).count() }
        _ = try? store.verifyIntegrity()
        if !readOnly {
            _ = try? store.write { tx in
                try tx.delete(FuzzOwner.self, id: 1)
                try tx.insert(FuzzPet.sample(40))
            }
        }
    }

    /// A value under a key of `_meta` (the stored schema, its removed properties, a key dictionary, an id sequence,
    /// the index descriptors, the schema version, the generation, the format marker), written into a real store
    /// before an app and `cellar` open it. The input's first byte picks the key; the rest is the value.
    public static let meta = FuzzTarget(
        name: "meta",
        seeds: {
            let file = try sampleStoreFile()
            let folder = freshFolder("meta-seeds")
            try Data(file).write(to: folder.appendingPathComponent("data.mdb"))
            let store = try Store(at: folder, configuration: Configuration(models: fuzzModels))
            var seeds: [[UInt8]] = []
            try store.core.environment.read { txn in
                for (position, key) in metaKeys.enumerated() {
                    if let value = try txn.get(store.core.meta, key: Array(key.utf8)) {
                        seeds.append([UInt8(position)] + Array(value))
                    }
                }
            }
            return seeds
        },
        body: { input in
            guard let choice = input.first, let file = pristineStore else { return }
            let folder = freshFolder("meta")
            _ = FileManager.default.createFile(
                atPath: folder.appendingPathComponent("data.mdb").path, contents: Data(file))
            let key = Array(metaKeys[Int(choice) % metaKeys.count].utf8)
            do {
                let store = try Store(at: folder, configuration: Configuration(models: fuzzModels))
                try store.core.environment.write { txn in
                    try txn.put(store.core.meta, key: key, value: Array(input.dropFirst()))
                }
            } catch {
                return
            }
            inspect(folder)
            readAsApp(folder, readOnly: true)
            readAsApp(folder, readOnly: false)
        })

    /// The keys of `_meta` the meta target writes.
    private static let metaKeys = [
        "schema/FuzzPet", "schema/FuzzOwner", "retired/FuzzPet", "keys/FuzzPet", "keys/FuzzOwner", "seq/FuzzOwner",
        "indexes/FuzzPet", "indexes/FuzzOwner", "version", "generation", "format",
    ]

    /// The sample store's file, made once.
    private static let pristineStore: [UInt8]? = try? sampleStoreFile()

    /// One transaction's entry of the change log, as observers of this and other processes read it.
    public static let changelog = FuzzTarget(
        name: "changelog",
        seeds: {
            let folder = freshFolder("changelog-seeds")
            let store = try Store(at: folder, configuration: Configuration(models: fuzzModels))
            try store.write { tx in
                for n in 0..<3 { try tx.insert(FuzzPet.sample(n)) }
                try tx.insert(FuzzOwner.sample(2))
            }
            try store.write { tx in try tx.delete(FuzzPet.self, id: "pet-1") }
            var seeds: [[UInt8]] = []
            try store.core.environment.read { txn in
                _ = try txn.walk(store.core.changeLog) { entry in
                    seeds.append(Array(entry.value))
                    return true
                }
            }
            return seeds
        },
        body: { input in
            var changes = ChangedRecords()
            if changes.add(input) {
                _ = changes.touches(["FuzzPet"])
                _ = changes.keys(of: "FuzzPet")
                _ = changes.changedWholesale("FuzzOwner")
            }
        })

    /// A block of a word's postings, a word's document count and the index's statistics, as search and
    /// `verifyIntegrity()` read them.
    public static let search = FuzzTarget(
        name: "search",
        seeds: {
            let folder = freshFolder("search-seeds")
            let store = try Store(at: folder, configuration: Configuration(models: fuzzModels))
            try store.write { tx in for n in 0..<40 { try tx.insert(FuzzPet.sample(n)) } }
            let info = try store.info(for: FuzzPet.self)
            var seeds: [[UInt8]] = []
            try store.core.environment.read { txn in
                for databases in info.fullText {
                    for database in [databases.postings, databases.documents] {
                        try txn.walk(database) { entry in
                            // The first document of a block (from its key) ahead of the block.
                            let first = PostingBlock.parse(key: entry.key)?.first ?? 0
                            seeds.append(withUnsafeBytes(of: first.littleEndian, Array.init) + Array(entry.value))
                            return seeds.count < 64
                        }
                    }
                }
            }
            return seeds
        },
        body: { input in
            guard input.count >= 8 else { return }
            let first = input.loadUnaligned(as: UInt64.self).littleEndian
            let block = UnsafeRawBufferPointer(rebasing: input[8...])
            _ = PostingBlock.decode(block, first: first)
            _ = PostingBlock.head(block, first: first)
            _ = FullTextStorage.Statistics(block)
            var reader = Varint.Reader(block)
            while reader.next() != nil {}
        })
}
