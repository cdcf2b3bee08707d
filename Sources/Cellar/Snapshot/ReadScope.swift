import Foundation
import LMDB

/// What a `Snapshot` and a write `WriteTransaction` share: the reads of one version of the store, written once.
///
/// A scope exists only inside the closure of `Store.read` or `Store.write`, on its thread. Everything decoded from
/// it is a copy that may go anywhere.
public class ReadScope {
    /// The store this scope reads.
    public let store: Store

    init(store: Store) { self.store = store }

    deinit { integerKey.deallocate() }

    /// The version this scope reads; for a write transaction, the version it creates when it commits.
    public var version: StoreVersion {
        get throws(StoreError) { StoreVersion(rawValue: try lmdb.id) }
    }

    /// The record of type `type` with primary key `id`, or `nil`. A transaction sees its own writes.
    public func object<M: Model>(_ type: M.Type, id: M.ID) throws(StoreError) -> M? {
        try fetch(type, id: id)
    }

    /// How many records of `type` exist, read from the database's header without a scan.
    public func count<M: Model>(_ type: M.Type) throws(StoreError) -> Int {
        try recordCount(modelInfo(for: type))
    }

    /// A query over the records of `type` in this scope. It runs when asked for results, inside the closure and on
    /// its thread; used anywhere else it throws `StoreError.transactionEnded`.
    public func objects<M: Model>(_ type: M.Type) -> Query<M> {
        Query(source: .scope(scope))
    }

    // MARK: What each kind of scope provides

    /// The LMDB transaction behind the scope, while it lasts.
    var lmdb: ReadTransaction {
        get throws(StoreError) { throw .transactionEnded }
    }

    /// The key dictionary this scope decodes `info`'s records with.
    func dictionary(for info: ModelInfo) throws(StoreError) -> KeyDictionary { info.dictionary }

    /// Makes the full-text indexes of `info`'s model whole before a search reads them: a write transaction writes
    /// the postings it keeps in memory.
    func prepareFullTextRead(_ info: ModelInfo) throws(StoreError) {}

    /// Reads the dictionary again from the file, after a record named a tag this process had not seen.
    func reloadDictionary(for info: ModelInfo) throws(StoreError) -> KeyDictionary { try storedDictionary(for: info) }

    private(set) lazy var scope = ScopeToken(self)
    /// One decoder for every record this scope reads, so its buffers are allocated once. (A constant, not a lazy
    /// property: reading a lazy one retains it, once per record.)
    let recordDecoder = RecordDecoder()
    /// Room for the key of a lookup, reused for the same reason.
    var keyScratch: [UInt8] = []
    /// Room for an integer key, the most common: written and read in place, with no closure around its use.
    let integerKey = UnsafeMutableRawPointer.allocate(
        byteCount: KeyEncoding.SignedKey.room, alignment: MemoryLayout<UInt64>.alignment)
    /// The model read last, and the store's record of it.
    private var lastModel: (type: ObjectIdentifier, info: ModelInfo)?
}

extension ReadScope {
    func lmdbError(_ error: LMDBError, _ operation: String) -> StoreError {
        store.core.error(error, operation)
    }

    func storedDictionary(for info: ModelInfo) throws(StoreError) -> KeyDictionary {
        let txn = try lmdb
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(store.core.meta, key: info.dictionaryKey) } catch { throw lmdbError(error, "read") }
        guard let stored else { return .empty }
        guard let dictionary = KeyDictionary.deserialize(stored) else {
            throw .corruptedFile(path: store.core.path, reason: "the key dictionary of \(info.name) is damaged")
        }
        return dictionary
    }

    func primaryKey<M: Model>(_ id: M.ID, of type: M.Type) throws(StoreError) -> [UInt8] {
        if let integer = KeyEncoding.signedInteger(id) { return KeyEncoding.SignedKey(integer).bytes }
        var key: [UInt8] = []
        try encodePrimaryKey(id, of: type, into: &key)
        return key
    }

    /// Appends the key bytes of `id` to `key`, checking LMDB's key size limit.
    func encodePrimaryKey<M: Model>(_ id: M.ID, of type: M.Type, into key: inout [UInt8]) throws(StoreError) {
        do {
            try KeyEncoding.append(id, to: &key)
        } catch KeyEncoding.Failure.notANumber {
            throw .invalidKey(model: M.schema.name, reason: "NaN has no place in an order")
        } catch KeyEncoding.Failure.unsupported(let reason) {
            throw .invalidKey(model: M.schema.name, reason: reason)
        } catch {
            throw .invalidKey(model: M.schema.name, reason: "\(error)")
        }
        let limit = store.core.environment.maxKeySize
        guard key.count <= limit else {
            throw .keyTooLong(model: M.schema.name, property: "id", length: key.count, limit: limit)
        }
    }

    /// Decodes one record, reloading the key dictionary once if another writer added keys since.
    func decode<M: Model>(
        _ type: M.Type, _ bytes: UnsafeRawBufferPointer, key: some Collection<UInt8>, info: ModelInfo
    ) throws(StoreError) -> M {
        var dictionary = try self.dictionary(for: info)
        return try decode(type, bytes, key: key, info: info, dictionary: &dictionary)
    }

    /// Decodes one record with `dictionary`, replacing it with the stored one if the record names a tag it lacks.
    @inline(__always)
    func decode<M: Model>(
        _ type: M.Type, _ bytes: UnsafeRawBufferPointer, key: some Collection<UInt8>, info: ModelInfo,
        dictionary: inout KeyDictionary
    ) throws(StoreError) -> M {
        do {
            return try recordDecoder.decodeRecord(M.self, from: bytes, dictionary: dictionary)
        } catch {
            return try decode(M.self, bytes, key: key, info: info, dictionary: &dictionary, after: error)
        }
    }

    /// The record a first decoding failed on: decoded again after reloading the key dictionary when it named a tag
    /// the dictionary lacked, or the failure as a `StoreError` with the record's id and field.
    private func decode<M: Model>(
        _ type: M.Type, _ bytes: UnsafeRawBufferPointer, key: some Collection<UInt8>, info: ModelInfo,
        dictionary: inout KeyDictionary, after failure: any Error
    ) throws(StoreError) -> M {
        var failure = failure
        if failure is RecordDecoder.UnknownKeyTag {
            dictionary = try reloadDictionary(for: info)
            do {
                return try recordDecoder.decodeRecord(M.self, from: bytes, dictionary: dictionary)
            } catch is RecordDecoder.UnknownKeyTag {
                throw .decodingFailed(
                    model: info.name, id: KeyEncoding.describe(key), field: "",
                    reason: "the record names a key its model's key dictionary does not have")
            } catch {
                failure = error
            }
        }
        if let error = failure as? DecodingError {
            throw StoreError(error, model: info.name, id: KeyEncoding.describe(key))
        }
        throw .decodingFailed(model: info.name, id: KeyEncoding.describe(key), field: "", reason: "\(failure)")
    }

    func fetch<M: Model>(_ type: M.Type, id: M.ID) throws(StoreError) -> M? {
        let info = try modelInfo(for: M.self)
        let txn = try lmdb
        // Integer ids, the most common, are encoded on the stack: no buffer to manage per read.
        if let integer = KeyEncoding.signedInteger(id) {
            let key = KeyEncoding.SignedKey(integer).write(to: integerKey)
            let found: UnsafeRawBufferPointer?
            do { found = try txn.get(info.records, key: key) } catch { throw lmdbError(error, "read") }
            guard let found else { return nil }
            return try decode(M.self, found, key: key, info: info)
        }
        var key = keyScratch
        keyScratch = []  // hand the buffer over while it is in use, so it is not copied
        defer { keyScratch = key }
        key.removeAll(keepingCapacity: true)
        try encodePrimaryKey(id, of: M.self, into: &key)
        let found: UnsafeRawBufferPointer?
        do { found = try txn.get(info.records, key: key) } catch { throw lmdbError(error, "read") }
        guard let found else { return nil }
        return try decode(M.self, found, key: key, info: info)
    }

    /// The store's record of a model, remembered for the next call: a scope usually reads one model many times.
    func modelInfo<M: Model>(for type: M.Type) throws(StoreError) -> ModelInfo {
        if let last = lastModel, last.type == ObjectIdentifier(type) { return last.info }
        let info = try store.info(for: type)
        lastModel = (ObjectIdentifier(type), info)
        return info
    }

    func recordCount(_ info: ModelInfo) throws(StoreError) -> Int {
        let txn = try lmdb
        do { return try txn.statistics(info.records).entries } catch { throw lmdbError(error, "count") }
    }

    /// Whether large results of `M` are decoded on more than one core. Not for a model with generated record code:
    /// its records decode as fast as the walk reaches them (about 800 instructions a record), and gathering them
    /// for the workers, then joining the workers' arrays, costs more than a second core saves (a scan of 100,000
    /// dogs: 7.8 million a second on two cores, 11 million on one).
    func decodesInParallel<M: Model>(_ type: M.Type) -> Bool {
        ParallelDecoding.workers > 1 && store.configuration.decodesInParallel && M._recordKeys == nil
    }

    /// Decodes records read from this transaction, in order, keeping those `keep` accepts; on every core when
    /// there are many and the configuration allows it (`decodesInParallel`), each worker checking the records it
    /// decodes.
    func decodeAll<M: Model>(
        _ type: M.Type, _ entries: [Entry], info: ModelInfo, keeping keep: (@Sendable (M) -> Bool)? = nil
    ) throws(StoreError) -> [M] {
        var dictionary = try self.dictionary(for: info)
        if entries.count >= ParallelDecoding.minimumRecords, decodesInParallel(M.self) {
            return try decodeInParallel(M.self, entries, info: info, dictionary: &dictionary, keeping: keep)
        }
        // Each value is moved into place in storage made once for all: appending to a generic array copies it
        // and checks the array's uniqueness, once per record.
        var failure: StoreError?
        let values = [M](initializingUpTo: entries.count) { base, count in
            do throws(StoreError) {
                try decodeInPlace(entries[...], at: base, count: &count, info: info, dictionary: &dictionary, keep)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return values
    }

    /// Decodes `entries` on this thread into the storage at `base + count` and on, keeping those `keep` accepts, and
    /// counts them in `count`: each value decoded in place, and dropped there if not kept, so that none is copied. On
    /// an error, what `count` counts is initialized and nothing past it.
    private func decodeInPlace<M: Model>(
        _ entries: ArraySlice<Entry>, at base: UnsafeMutablePointer<M>, count: inout Int, info: ModelInfo,
        dictionary: inout KeyDictionary, _ keep: (@Sendable (M) -> Bool)?
    ) throws(StoreError) {
        for (key, value) in entries {
            (base + count).initialize(to: try decode(M.self, value, key: key, info: info, dictionary: &dictionary))
            if let keep, !keep((base + count).pointee) {
                (base + count).deinitialize(count: 1)
                continue
            }
            count += 1
        }
    }

    /// Decodes `entries` in one chunk per core, each worker straight into its part of the result's storage: no
    /// array per chunk to copy from and free. The entries point into pages of this transaction, which stay mapped and
    /// unchanged while it is open; workers never call into the transaction itself. A chunk that meets a key tag newer
    /// than `dictionary`, or fails, is decoded again here, after the dictionary has been reloaded, so that the error
    /// names the record.
    ///
    /// No memory is written by two threads: the workers only read `entries` and `shared` (immutable but for its
    /// field tables, behind their lock), each initializes its own range of the storage and reports how many records
    /// it kept under `kept`'s lock, which this thread takes to read them once `concurrentPerform` has returned. Then
    /// this thread moves each chunk's records down to follow the previous chunk's (records a `keep` dropped leave
    /// gaps).
    private func decodeInParallel<M: Model>(
        _ type: M.Type, _ entries: [Entry], info: ModelInfo, dictionary: inout KeyDictionary,
        keeping keep: (@Sendable (M) -> Bool)?
    ) throws(StoreError) -> [M] {
        let chunkCount = ParallelDecoding.workers
        let chunkSize = (entries.count + chunkCount - 1) / chunkCount
        let total = entries.count
        @Sendable func chunkRange(_ chunk: Int) -> Range<Int> {
            chunk * chunkSize..<min((chunk + 1) * chunkSize, total)
        }
        let shared = dictionary
        // How many records each chunk decoded and kept, at the start of its range; `nil` for a chunk that failed
        // (and left its range uninitialized).
        let kept = Lock<[Int: Int]>([:])
        var failure: StoreError?
        let values = [M](initializingUpTo: entries.count) { base, count in
            let storage = UncheckedSendable(base)
            entries.withUnsafeBufferPointer { all in
                let all = UncheckedSendable(all)
                DispatchQueue.concurrentPerform(iterations: chunkCount) { chunk in
                    let range = chunkRange(chunk)
                    let start = storage.value + range.lowerBound
                    let decoder = RecordDecoder()
                    var written = 0
                    do {
                        for (_, value) in all.value[range] {
                            (start + written).initialize(
                                to: try decoder.decodeRecord(M.self, from: value, dictionary: shared))
                            if let keep, !keep((start + written).pointee) {
                                (start + written).deinitialize(count: 1)
                                continue
                            }
                            written += 1
                        }
                        kept.withLock { $0[chunk] = written }
                    } catch {
                        start.deinitialize(count: written)
                    }
                }
            }
            for chunk in 0..<chunkCount {
                let range = chunkRange(chunk)
                if let written = kept.withLock({ $0[chunk] }) {
                    // Down to follow the records before it: the regions may overlap, which a move allows.
                    if count != range.lowerBound {
                        (base + count).moveInitialize(from: base + range.lowerBound, count: written)
                    }
                    count += written
                    continue
                }
                // A failed chunk is decoded again on this thread, into its own range (free: the chunks before it
                // end at or below its start), which reloads the dictionary or reports the failing record.
                do throws(StoreError) {
                    try decodeInPlace(
                        entries[range], at: base, count: &count, info: info, dictionary: &dictionary, keep)
                } catch {
                    failure = error
                    // The later chunks' records are not part of the array: deinitialize them before it is made.
                    for later in chunk + 1..<chunkCount {
                        if let written = kept.withLock({ $0[later] }) {
                            (base + chunkRange(later).lowerBound).deinitialize(count: written)
                        }
                    }
                    return
                }
            }
        }
        if let failure { throw failure }
        return values
    }
}

/// When and how widely a large query decodes its records in parallel.
enum ParallelDecoding {
    /// Below this many records, starting workers costs more than it saves.
    static let minimumRecords = 4_096
    static let workers = min(ProcessInfo.processInfo.activeProcessorCount, 8)
}

/// Hands a value to concurrent workers that only read it.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension StoreError {
    init(_ error: DecodingError, model: String, id: String) {
        let (context, reason): (DecodingError.Context, String) =
            switch error {
            case .typeMismatch(_, let context): (context, context.debugDescription)
            case .valueNotFound(_, let context): (context, context.debugDescription)
            case .keyNotFound(let key, let context): (context, "no value for \"\(key.stringValue)\"")
            case .dataCorrupted(let context): (context, context.debugDescription)
            @unknown default: (.init(codingPath: [], debugDescription: ""), "\(error)")
            }
        var path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
        if case .keyNotFound(let key, _) = error { path.append(key.stringValue) }
        self = .decodingFailed(
            model: model, id: id, field: path.joined(separator: ".").replacingOccurrences(of: ".[", with: "["),
            reason: reason)
    }
}
