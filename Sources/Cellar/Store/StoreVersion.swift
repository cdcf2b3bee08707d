/// A committed version of the store: LMDB's transaction ID. Later versions compare greater.
public struct StoreVersion: RawRepresentable, Comparable, Hashable, Sendable, CustomStringConvertible {
    /// LMDB's transaction ID of the version.
    public let rawValue: UInt64
    /// The version with LMDB transaction ID `rawValue`.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: StoreVersion, rhs: StoreVersion) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "v\(rawValue)" }
}
