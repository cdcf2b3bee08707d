/// When and where a property was last written: a hybrid logical clock reading and the device that wrote it.
///
/// `time` is milliseconds since 1970 shifted left by 16 bits, plus a counter in the low 16 bits: a device that writes
/// twice in one millisecond, or whose clock is behind a stamp it has seen, counts up instead of going back. Stamps
/// order by time, then by device id, so two devices never tie. Their text form (`"0001927a3b4c0001-<device>"`, both
/// parts fixed-width hex) sorts the same way, in Swift and in PostgreSQL.
public struct SyncStamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var time: UInt64
    /// The writing device's id: 32 lowercase hex digits.
    public var device: String

    public init(time: UInt64, device: String) {
        self.time = time
        self.device = device
    }

    /// The stamp's clock reading in milliseconds since 1970.
    public var milliseconds: UInt64 { time >> 16 }

    public static func < (lhs: SyncStamp, rhs: SyncStamp) -> Bool {
        (lhs.time, lhs.device) < (rhs.time, rhs.device)
    }

    public var description: String { Self.hex(time) + "-" + device }

    /// Reads the text form; `nil` for anything else.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        guard utf8.count == 16 + 1 + 32, utf8[16] == UInt8(ascii: "-"), utf8[0..<16].allSatisfy(Self.isHexDigit),
            let time = UInt64(String(decoding: utf8[0..<16], as: UTF8.self), radix: 16)
        else { return nil }
        let device = String(decoding: utf8[17...], as: UTF8.self)
        guard Self.isDeviceID(device) else { return nil }
        self.init(time: time, device: device)
    }

    /// Whether `text` is a device id: 32 lowercase hex digits.
    public static func isDeviceID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy(isHexDigit)
    }

    /// Whether `byte` is a lowercase hex digit: the only digits the text form uses.
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
