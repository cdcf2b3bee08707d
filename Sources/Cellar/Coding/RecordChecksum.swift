internal import CCRC32C
import Foundation

/// Records that know they changed: each record ends with a CRC-32C of its format byte and value, checked before a
/// byte of it is trusted. A bit that flips on the disk, in memory, or under another program's write inside a page
/// whose structure is still sound would otherwise decode as another value (a mutation test saw a tenth of single
/// byte changes do so); with the checksum it is `StoreError.decodingFailed` naming the model and id.
///
/// Records of format 1, written before checksums, read as before and are sealed when they are next written.
extension RecordFormat {
    /// Bytes of the checksum at the end of a record.
    static let checksumSize = 4

    /// Why a stored value is not a record a reader may parse.
    enum Damage: Error, CustomStringConvertible, Equatable {
        /// The first byte is not a record format this version reads (`nil`: no bytes at all).
        case unknownFormat(UInt8?)
        /// Too short to hold the format byte, a value and the checksum.
        case truncated(count: Int)
        /// A record of format 1 (no checksum) whose value does not end where the record does.
        case valueDoesNotFill(count: Int)
        /// The checksum does not match the bytes before it.
        case checksumMismatch(stored: UInt32, computed: UInt32)

        var description: String {
            switch self {
            case .unknownFormat(nil): "the record is empty"
            case .unknownFormat(let byte?):
                "the record starts with \(byte), not a record format this version of Cellar reads (1 or 2)"
            case .truncated(let count): "the record is \(count) bytes long, too short for a value and its checksum"
            case .valueDoesNotFill(let count):
                "the record, of the format without a checksum, holds a value that does not fill its \(count) bytes"
            case .checksumMismatch(let stored, let computed):
                Self.changedRecord + " (\(hex(stored))) does not match its bytes (\(hex(computed))): they changed "
                    + "after they were written (a failing disk or memory, or another program writing into the file); "
                    + "delete the record and write it again, or restore the store from a backup"
            }
        }

        /// The damage a decoding error reports (`RecordDecoder` passes it as the underlying error); `nil` for any other
        /// failure, such as a model that changed.
        static func underlying(_ error: any Error) -> Damage? {
            switch error {
            case let damage as Damage: damage
            case DecodingError.dataCorrupted(let context): context.underlyingError as? Damage
            default: nil
            }
        }

        /// How the description of a checksum that does not match starts.
        private static let changedRecord = "the record's checksum"

        /// Whether `reason` (of `StoreError.decodingFailed`) says a record's checksum did not match: damage, for which
        /// a migration is no remedy.
        static func isChangedRecord(_ reason: String) -> Bool { reason.hasPrefix(changedRecord) }

        private func hex(_ value: UInt32) -> String {
            let digits = String(value, radix: 16)
            return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
        }
    }

    /// The part of a stored record its readers parse: the format byte and the value, without the checksum, once
    /// the checksum matched. A record of format 1 is all value. Every reader of stored records starts here.
    @inline(__always)
    static func body(of record: UnsafeRawBufferPointer) throws(Damage) -> UnsafeRawBufferPointer {
        guard let format = record.first, format == version else { return try formerBody(of: record) }
        let end = record.count &- checksumSize
        guard end > 1 else { throw .truncated(count: record.count) }
        let stored = UInt32(littleEndian: record.loadUnaligned(fromByteOffset: end, as: UInt32.self))
        let computed = cellar_crc32c(0, record.baseAddress, end)
        guard stored == computed else { throw .checksumMismatch(stored: stored, computed: computed) }
        return UnsafeRawBufferPointer(rebasing: record[..<end])
    }

    /// A record of format 1, or a failure naming the format byte. Its value must end where the record ends: a
    /// sealed record whose format byte changed to 1 is then refused (its checksum follows the value), not read
    /// unchecked. (The size of a container is read from its header: constant time.)
    private static func formerBody(of record: UnsafeRawBufferPointer) throws(Damage) -> UnsafeRawBufferPointer {
        guard record.first == uncheckedVersion else { throw .unknownFormat(record.first) }
        guard valueSize(in: record, at: 1, end: record.count) == record.count - 1 else {
            throw .valueDoesNotFill(count: record.count)
        }
        return record
    }

    /// The body of `record` with its checksum not yet checked, `nil` when it is not a record of a known format:
    /// for a reader that only turns records away, and checks the checksum of those it does (`BytesFilter`).
    @inline(__always)
    static func uncheckedBody(of record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        switch record.first {
        case version? where record.count > 1 + checksumSize:
            UnsafeRawBufferPointer(rebasing: record[..<(record.count - checksumSize)])
        case uncheckedVersion?: record
        default: nil
        }
    }

    /// The record's body when its checksum matches, `nil` otherwise: for readers that only say whether bytes are
    /// a record.
    @inline(__always)
    static func checkedBody(of record: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        try? body(of: record)
    }

    /// Appends the checksum of everything in `record` (which starts with `version`): the last step of writing one.
    @inline(__always)
    static func seal(_ record: inout [UInt8]) {
        let checksum = record.withUnsafeBytes { cellar_crc32c(0, $0.baseAddress, $0.count) }
        withUnsafeBytes(of: checksum.littleEndian) { record.append(contentsOf: $0) }
    }

    /// The value of a record just encoded (sealed), without its format byte and checksum: to place inside another
    /// record (a declared default, a migration's field), or to compare as a value.
    static func value(ofEncoded record: [UInt8]) -> ArraySlice<UInt8> {
        record.count >= 1 + checksumSize ? record[1..<(record.count - checksumSize)] : []
    }

    /// Whether a stored record holds the value of `encoded` (a record just encoded), whatever the stored one's
    /// format: an upsert of an unchanged value into a record written before checksums changes nothing.
    static func sameValue(_ stored: UnsafeRawBufferPointer, _ encoded: [UInt8]) -> Bool {
        // Both sealed: equal bytes are equal values (the checksum is a function of the rest).
        if stored.first == version { return stored.count == encoded.count && bytesEqual(stored, encoded) }
        guard stored.first == uncheckedVersion, stored.count + checksumSize == encoded.count else { return false }
        return bytesEqual(UnsafeRawBufferPointer(rebasing: stored[1...]), value(ofEncoded: encoded))
    }

    private static func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: some ContiguousBytes) -> Bool {
        b.withUnsafeBytes { b in
            guard a.count == b.count, let first = a.baseAddress, let second = b.baseAddress else {
                return a.count == b.count
            }
            return memcmp(first, second, a.count) == 0
        }
    }
}
