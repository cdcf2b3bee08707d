import CellarSyncProtocol

/// What sync keeps about one record of a synced model, beside the record: for each top-level property, a hash of
/// its stored bytes and the stamp of its last write; for a deleted record, only the delete's stamp (a tombstone).
///
/// A commit compares each record it wrote with its tracked hashes: the properties whose bytes changed get the
/// commit's stamp. So a property is stamped when its value changes, whoever changed it (the app, a delete rule, a
/// pulled change's side effects), and a pulled value, adopted with its remote stamp, is not pushed back.
struct TrackedRecord: Equatable {
    struct Field: Equatable {
        var name: String
        /// The FNV-1a hash of the property's stored bytes; ``absent`` when the record has no such property (`nil`).
        var hash: UInt64
        var stamp: SyncStamp
    }

    /// The hash of a property a record does not hold.
    static let absent: UInt64 = 0

    /// By name, in name order.
    var fields: [Field] = []
    var deleted: SyncStamp?

    struct Damaged: Error {}

    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        // Never the hash of an absent property.
        return hash == absent ? 1 : hash
    }

    /// The hash of the stored value at `range` of `bytes`: its bytes' hash, except that a keyed container's entries
    /// are hashed one by one and added up, without their order. A Swift dictionary encodes its entries in an order
    /// that differs from one run to the next, and an unchanged dictionary must not look changed (it would be stamped,
    /// pushed, and win over another device's real change). Lists keep their order; their elements are hashed the same
    /// way, so a dictionary inside a list is found too.
    static func valueHash(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64 {
        guard let type = range.isEmpty ? nil : bytes[range.lowerBound] else {
            return hash(.init(rebasing: bytes[range]))
        }
        if type == RecordFormat.ValueType.keyed.rawValue,
            let entries = try? RecordFields.entries(ofKeyedAt: range.lowerBound, in: bytes)
        {
            var sum = UInt64(type)
            for entry in entries {
                guard case .stored(let value) = entry.value else { continue }
                var key: [UInt8]
                switch entry.key {
                case .tag(let tag): key = [0] + withUnsafeBytes(of: tag.littleEndian, Array.init)
                case .inline(let name): key = [1] + Array(name.utf8)
                case .integer(let number): key = [2] + withUnsafeBytes(of: Int64(number).littleEndian, Array.init)
                }
                withUnsafeBytes(of: valueHash(bytes, value).littleEndian) { key.append(contentsOf: $0) }
                sum &+= key.withUnsafeBytes(hash)
            }
            return sum == absent ? 1 : sum
        }
        if type == RecordFormat.ValueType.unkeyed.rawValue,
            let elements = try? RecordFields.elements(ofUnkeyedAt: range.lowerBound, in: bytes)
        {
            var hashes: [UInt64] = [UInt64(type), UInt64(elements.count)]
            for element in elements { hashes.append(valueHash(bytes, element)) }
            return hashes.withUnsafeBytes(hash)
        }
        return hash(UnsafeRawBufferPointer(rebasing: bytes[range]))
    }

    /// The stored form: a format byte, a flag (1 deleted), then the delete's stamp, or the fields (name, hash,
    /// stamp). A stamp is its time and the index of its device in the store's device table.
    func serialized(deviceIndex: (String) -> UInt64) -> [UInt8] {
        var bytes: [UInt8] = [1]
        if let deleted {
            bytes.append(1)
            Self.append(deleted, deviceIndex: deviceIndex, to: &bytes)
            return bytes
        }
        bytes.append(0)
        Varint.append(UInt64(fields.count), to: &bytes)
        for field in fields {
            Varint.append(UInt64(field.name.utf8.count), to: &bytes)
            bytes.append(contentsOf: field.name.utf8)
            withUnsafeBytes(of: field.hash.littleEndian) { bytes.append(contentsOf: $0) }
            Self.append(field.stamp, deviceIndex: deviceIndex, to: &bytes)
        }
        return bytes
    }

    private static func append(_ stamp: SyncStamp, deviceIndex: (String) -> UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: stamp.time.littleEndian) { bytes.append(contentsOf: $0) }
        Varint.append(deviceIndex(stamp.device), to: &bytes)
    }

    /// Reads the stored form; damaged bytes or a device index past the table throw, never read past the end.
    init(_ stored: UnsafeRawBufferPointer, devices: [String]) throws(Damaged) {
        var reader = ByteReader(stored)
        do {
            guard try reader.byte() == 1 else { throw Damaged() }
            switch try reader.byte() {
            case 1:
                deleted = try Self.stamp(&reader, devices: devices)
            case 0:
                let count = try reader.varint()
                guard count <= UInt64(stored.count) else { throw Damaged() }
                for _ in 0..<count {
                    let length = try reader.varint()
                    guard length <= UInt64(stored.count) else { throw Damaged() }
                    guard let name = ByteReader.text(try reader.bytes(Int(length))) else { throw Damaged() }
                    let hash = UInt64(littleEndian: try reader.fixed(UInt64.self))
                    fields.append(Field(name: name, hash: hash, stamp: try Self.stamp(&reader, devices: devices)))
                }
            default:
                throw Damaged()
            }
            guard reader.offset == reader.end else { throw Damaged() }
        } catch {
            throw Damaged()
        }
    }

    init(fields: [Field] = [], deleted: SyncStamp? = nil) {
        self.fields = fields
        self.deleted = deleted
    }

    private static func stamp(_ reader: inout ByteReader, devices: [String]) throws -> SyncStamp {
        let time = UInt64(littleEndian: try reader.fixed(UInt64.self))
        let index = try reader.varint()
        guard index < UInt64(devices.count) else { throw Damaged() }
        return SyncStamp(time: time, device: devices[Int(index)])
    }

    /// The properties' stamps by name.
    var stamps: [String: SyncStamp] {
        Dictionary(fields.map { ($0.name, $0.stamp) }, uniquingKeysWith: Swift.max)
    }
}
