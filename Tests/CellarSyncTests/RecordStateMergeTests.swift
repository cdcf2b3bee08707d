import CellarSyncProtocol
import PropertyBased
import Testing

/// The conflict rule is a semilattice, so devices that saw the same writes agree whatever order they saw them in.
@Suite("Sync: the conflict rule")
struct RecordStateMergeTests {
    static let devices = [
        "0000000000000000000000000000000a", "0000000000000000000000000000000b", "0000000000000000000000000000000c",
    ]
    static let names = ["title", "body", "tags", "rank"]

    /// A random record state: some properties with stamps from few times and devices (so ties happen), sometimes a
    /// value that differs under an equal stamp (what a faulty peer could send), sometimes a tombstone.
    static let states = zip(
        Gen.int(in: 0...15).array(of: 4...4), Gen.int(in: 0...6).array(of: 4...4), Gen.int(in: 0...9)
    )
    .map { stamps, values, kind -> RecordState in
        if kind == 0 { return .tombstone(SyncStamp(time: UInt64(stamps[0]), device: devices[values[0] % 3])) }
        var state = RecordState()
        for (position, name) in names.enumerated() where stamps[position] > 2 {
            let stamp = SyncStamp(time: UInt64(stamps[position] / 3), device: devices[stamps[position] % 3])
            state.stamps[name] = stamp
            let value: JSONValue =
                switch values[position] {
                case 0: .null
                case 1: .integer(Int64(stamps[position]))
                case 2: .array([.string("a"), .integer(1)])
                case 3: .object(["b": .bool(true), "a": .double(1.5)])
                default: .string("v\(values[position])")
                }
            if value != .null { state.fields[name] = value }
        }
        return state
    }

    @Test func mergingIsCommutativeAssociativeAndIdempotent() async {
        await propertyCheck(count: 2_000, input: zip(Self.states, Self.states, Self.states)) { a, b, c in
            #expect(a.merged(with: b) == b.merged(with: a))
            #expect(a.merged(with: b).merged(with: c) == a.merged(with: b.merged(with: c)))
            #expect(a.merged(with: a) == a.merged(with: RecordState()))
            #expect(a.merged(with: b).merged(with: b) == a.merged(with: b))
        }
    }

    @Test func eachPropertyTakesTheLaterWriteAndADeleteWins() async {
        await propertyCheck(count: 1_000, input: zip(Self.states, Self.states)) { a, b in
            let merged = a.merged(with: b)
            if a.deleted != nil || b.deleted != nil {
                #expect(merged.deleted == [a.deleted, b.deleted].compactMap { $0 }.max())
                #expect(merged.fields.isEmpty && merged.stamps.isEmpty)
                return
            }
            for name in Self.names {
                let winner = [a.stamps[name], b.stamps[name]].compactMap { $0 }.max()
                #expect(merged.stamps[name] == winner)
                guard let winner else { continue }
                if a.stamps[name] != b.stamps[name] {
                    let source = a.stamps[name] == winner ? a : b
                    #expect(merged.fields[name] == source.fields[name])
                }
            }
        }
    }

    @Test func stampsOrderByTimeThenDeviceInTextAsInSwift() async {
        await propertyCheck(
            count: 500,
            input: zip(Gen.uint64(in: 0 ... .max), Gen.int(in: 0...2), Gen.uint64(in: 0 ... .max), Gen.int(in: 0...2))
        ) {
            t1, d1, t2, d2 in
            let a = SyncStamp(time: t1, device: Self.devices[d1])
            let b = SyncStamp(time: t2 % 3 == 0 ? t1 : t2, device: Self.devices[d2])
            #expect((a < b) == (a.description < b.description))
            #expect(SyncStamp(a.description) == a)
        }
        #expect(SyncStamp("0001-x") == nil)
        #expect(SyncStamp("000000000000000g-0000000000000000000000000000000a") == nil)
        #expect(SyncStamp("0000000000000001-0000000000000000000000000000000A") == nil)
    }
}
