import Foundation

/// What a process wrote to a store's `data.mdb` and when it synced, in order, as `Tests/CrashLog/crashlog.c` records
/// it; and the files a power cut could have left at any point of it.
struct WriteLog {
    enum Operation {
        /// A write the kernel took: on the disk only once a sync follows (`durable`: written through a descriptor
        /// opened with `O_DSYNC`, on the disk when the call returned).
        case write(offset: Int, bytes: [UInt8], durable: Bool)
        /// `fsync`/`fdatasync`: every write before it is on the disk.
        case sync
        case truncate(length: Int)
        /// The program said transaction `number` returned from its commit.
        case acknowledged(number: Int)
    }

    var operations: [Operation] = []

    /// Reads a log; throws when it ends inside a record.
    init(contentsOf url: URL) throws {
        let data = [UInt8](try Data(contentsOf: url))
        var offset = 0
        func number() throws -> Int {
            guard offset + 8 <= data.count else { throw CocoaError(.fileReadCorruptFile) }
            var value: UInt64 = 0
            for byte in data[offset..<offset + 8].reversed() { value = value << 8 | UInt64(byte) }
            offset += 8
            // A file offset or a length, far below this: anything else is a damaged log.
            guard value < 1 << 48 else { throw CocoaError(.fileReadCorruptFile) }
            return Int(value)
        }
        while offset < data.count {
            let kind = data[offset]
            offset += 1
            switch kind {
            case UInt8(ascii: "W"), UInt8(ascii: "D"):
                let start = try number()
                let length = try number()
                guard offset + length <= data.count else { throw CocoaError(.fileReadCorruptFile) }
                operations.append(
                    .write(
                        offset: start, bytes: Array(data[offset..<offset + length]),
                        durable: kind == UInt8(ascii: "D")))
                offset += length
            case UInt8(ascii: "S"): operations.append(.sync)
            case UInt8(ascii: "T"): operations.append(.truncate(length: try number()))
            case UInt8(ascii: "A"): operations.append(.acknowledged(number: try number()))
            default: throw CocoaError(.fileReadCorruptFile)
            }
        }
    }

    /// One file a power cut could leave.
    struct CrashState {
        var image: [UInt8]
        /// The operations done before the cut.
        var cut: Int
        /// The newest transaction acknowledged before the cut (0: none).
        var acknowledged: Int
        /// Of the writes not synced before the cut: how many reached the disk, how many of those in part.
        var unsynced: Int
        var kept: Int
        var torn: Int
    }

    /// The states a power cut could leave, from `base` (the file before the log began): at every point between two
    /// operations, the file with every write up to the last sync and every durable write, and of the writes since
    /// the last sync none, all, and `variants` random subsets (in the order issued), some of them torn (a prefix of
    /// whole 512-byte sectors).
    ///
    /// The states are made one at a time and handed to `body`: a long log has thousands, each a whole file.
    func forEachCrashState(
        base: [UInt8], variants: Int, using random: inout some RandomNumberGenerator,
        _ body: (CrashState) throws -> Void
    ) rethrows {
        var synced = base
        var lastSync = 0
        var acknowledged = 0
        for cut in 0...operations.count {
            if cut > 0 {
                switch operations[cut - 1] {
                case .sync:
                    for operation in operations[lastSync..<cut] { Self.apply(operation, to: &synced) }
                    lastSync = cut
                case .acknowledged(let number): acknowledged = number
                default: break
                }
            }
            let since = operations[lastSync..<cut]
            let unsynced = since.indices.filter {
                if case .write(_, _, false) = operations[$0] { return true }
                if case .truncate = operations[$0] { return true }
                return false
            }
            var choices: [[Int: Int?]] = [[:]]  // write index → kept bytes (nil: whole); absent: lost
            if !unsynced.isEmpty {
                choices.append(Dictionary(uniqueKeysWithValues: unsynced.map { ($0, nil) }))
                for _ in 0..<variants {
                    var choice: [Int: Int?] = [:]
                    for index in unsynced where Bool.random(using: &random) {
                        if case .write(_, let bytes, _) = operations[index], bytes.count > 512,
                            Int.random(in: 0..<3, using: &random) == 0
                        {
                            choice[index] = 512 * Int.random(in: 1...((bytes.count - 1) / 512), using: &random)
                        } else {
                            choice[index] = .some(nil)
                        }
                    }
                    choices.append(choice)
                }
            }
            for choice in choices {
                var image = synced
                for index in since.indices {
                    switch operations[index] {
                    case .write(let offset, let bytes, true):
                        Self.write(bytes[...], at: offset, to: &image)
                    case .write(let offset, let bytes, false):
                        guard let kept = choice[index] else { continue }
                        Self.write(bytes[..<(kept ?? bytes.count)], at: offset, to: &image)
                    case .truncate:
                        if choice[index] != nil { Self.apply(operations[index], to: &image) }
                    default: break
                    }
                }
                try body(
                    CrashState(
                        image: image, cut: cut, acknowledged: acknowledged, unsynced: unsynced.count,
                        kept: choice.count, torn: choice.values.filter { $0 != nil }.count))
            }
        }
    }

    private static func apply(_ operation: Operation, to image: inout [UInt8]) {
        switch operation {
        case .write(let offset, let bytes, _): write(bytes[...], at: offset, to: &image)
        case .truncate(let length):
            if length < image.count {
                image.removeSubrange(length...)
            } else {
                image.append(contentsOf: repeatElement(0, count: length - image.count))
            }
        case .sync, .acknowledged: break
        }
    }

    private static func write(_ bytes: ArraySlice<UInt8>, at offset: Int, to image: inout [UInt8]) {
        if image.count < offset + bytes.count {
            image.append(contentsOf: repeatElement(0, count: offset + bytes.count - image.count))
        }
        image.replaceSubrange(offset..<offset + bytes.count, with: bytes)
    }
}
