@_spi(Sync) import Cellar
import CellarSyncProtocol
import CellarSyncTestSupport
import Foundation
import Testing

@testable import CellarSync

/// Every property type the README says works, with values at their edges.
struct Exact: Model {
    var id: String
    var money: Decimal
    var optionalMoney: Decimal?
    var big: Int128
    var unsignedBig: UInt128
    var long: Int64
    var unsignedLong: UInt64
    var double: Double
    var float: Float
    var date: Date
    var data: Data
    var text: String
    var list: [Double]
}

extension Exact {
    /// Equal to the last bit: doubles by their bit patterns (NaN and -0.0 too), strings by their bytes.
    func isIdentical(to other: Exact) -> Bool {
        id.utf8.elementsEqual(other.id.utf8) && money == other.money && optionalMoney == other.optionalMoney
            && big == other.big && unsignedBig == other.unsignedBig && long == other.long
            && unsignedLong == other.unsignedLong && double.bitPattern == other.double.bitPattern
            && float.bitPattern == other.float.bitPattern
            && date.timeIntervalSinceReferenceDate.bitPattern == other.date.timeIntervalSinceReferenceDate.bitPattern
            && data == other.data && text.utf8.elementsEqual(other.text.utf8)
            && list.map(\.bitPattern) == other.list.map(\.bitPattern)
    }

    static func random(_ number: Int, _ random: inout SplitMix) -> Exact {
        func double() -> Double {
            let edges: [Double] = [
                -0.0, 0, .infinity, -.infinity, .nan, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1, 1e-310,
                -.leastNormalMagnitude, 9_007_199_254_740_993,
            ]
            return random.below(3) == 0 ? edges[random.below(edges.count)] : Double(bitPattern: random.next())
        }
        func decimal() -> Decimal {
            let digits = (0..<(1 + random.below(36))).map { _ in String(random.below(10)) }.joined()
            let point = random.below(digits.count + 1)
            let text =
                (random.below(2) == 0 ? "-" : "") + String(digits.prefix(point)) + "."
                + String(digits.dropFirst(point)) + "0"
            return Decimal(string: text) ?? 0
        }
        let pieces = ["é", "e\u{301}", "Å", "\u{212B}", "👨‍👩‍👧", "\r\n", "\"", "\\", "\u{1}", "日本語", " ", "Ω"]
        let text = (0..<random.below(6)).map { _ in pieces[random.below(pieces.count)] }.joined()
        return Exact(
            id: "x\(number)" + (number % 7 == 0 ? "e\u{301}" : ""), money: decimal(),
            optionalMoney: random.below(3) == 0 ? nil : decimal(),
            big: Int128(bitPattern: UInt128(random.next()) << 64 | UInt128(random.next())),
            unsignedBig: UInt128(random.next()) << 64 | UInt128(random.next()),
            long: Int64(bitPattern: random.next()), unsignedLong: random.next(), double: double(),
            float: Float(bitPattern: UInt32(truncatingIfNeeded: random.next())),
            date: Date(timeIntervalSinceReferenceDate: random.below(2) == 0 ? double() : Double(random.below(1 << 30))),
            data: Data((0..<random.below(9)).map { _ in UInt8(truncatingIfNeeded: random.next()) }), text: text,
            list: (0..<random.below(4)).map { _ in double() })
    }
}

/// Values travel exactly: each record's every property arrives on the other device equal to the bit, and PostgreSQL
/// holds the text `JSONEncoder` wrote. Before the protocol's own codec, a `Decimal` like 12345678901234567.89 arrived as
/// 12345678901234567 and -0.0 as 0.0.
@Suite("Sync: values travel exactly", .enabled(if: Harness.canRun, Harness.skipMessage), .hangGuard)
struct ExactValueTests {
    @Test(arguments: [UInt64(1), 2, 3])
    func everyValueArrivesEqualOnTheOtherDeviceAndInPostgreSQL(seed: UInt64) async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("exact")
        let token = try await Harness.token(for: user)
        let a = try SyncedDevice(server: server.url, token: token, models: [Exact.self])
        let b = try SyncedDevice(server: server.url, token: token, models: [Exact.self])
        var random = SplitMix(seed: seed)
        var written = (0..<100).map { Exact.random($0, &random) }
        written.append(
            Exact(
                id: "money", money: Decimal(string: "12345678901234567.89")!, optionalMoney: nil, big: .min,
                unsignedBig: .max, long: .min, unsignedLong: .max, double: -0.0, float: -0.0,
                date: Date(timeIntervalSince1970: 1.0000001), data: Data(), text: "", list: [.nan, -0.0]))
        let values = written
        try await a.store.write { txn in for value in values { try txn.insert(value) } }
        try await a.client.sync()
        try await b.client.sync()
        let read = try await b.store.read { try $0.objects(Exact.self).results() }
        #expect(read.count == written.count)
        for value in written {
            guard let arrived = try await b.store.read({ try $0.object(Exact.self, id: value.id) }) else {
                Issue.record("\(value.id) did not arrive")
                continue
            }
            #expect(arrived.isIdentical(to: value), "\(value.id): \(value) arrived as \(arrived)")
        }
        // PostgreSQL holds what the device's encoder wrote, number for number.
        let rows = try await Harness.sql(
            "SELECT id || ' ' || record::text FROM cellar_records WHERE owner = '\(user)' ORDER BY id")
        for line in rows.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            let id = String(parts[0])
            guard let value = written.first(where: { $0.id == id }) else {
                Issue.record("PostgreSQL holds \(id), which no device wrote")
                continue
            }
            #expect(JSONValue.object(try SyncedModel.fields(of: value)).serialized() == Array(parts[1].utf8))
        }
    }

    /// Two spellings of one id in one push (another client than Cellar's could send them) are one record, kept in
    /// NFC, as a device compares ids; a later push of either spelling changes the same record.
    @Test func anIDInTwoNormalFormsIsOneRecord() async throws {
        let server = try await ServerProcess()
        let user = Harness.newUser("nfc")
        let device = Device(server: server.url, token: try await Harness.token(for: user), id: Harness.device("7"))
        let stamp = Harness.stamp(device.id)
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        let pushed = try await device.push([
            change(decomposed, ["name": .string("first")], stamp: stamp),
            change(composed, ["age": .integer(3)], stamp: stamp),
        ])
        #expect(pushed.applied == 1)
        _ = try await device.push([
            change(decomposed, ["name": .string("later")], stamp: Harness.stamp(device.id, offset: 5))
        ])
        #expect(
            try await Harness.sql("SELECT id, record::text FROM cellar_records WHERE owner = '\(user)'")
                == "caf\u{E9}|{\"age\":3,\"name\":\"later\"}")
        let pulled = try await device.pull(cursor: nil)
        #expect(pulled.changes.map { Array($0.id.utf8) } == [Array(composed.utf8)])
    }

    /// A model version past `Int32` is the client's mistake, answered 400 in words (before, 503 "could not use its
    /// database", which a client retries forever).
    @Test func aVersionOutOfRangeIsABadRequest() async throws {
        let server = try await ServerProcess()
        let device = Device(
            server: server.url, token: try await Harness.token(for: Harness.newUser("version")), id: Harness.device("8")
        )
        let body =
            #"{"device":"\#(device.id)","models":{"Dog":{"version":2147483648,"properties":["name"]}},"changes":[]}"#
        let answer = try await device.refused(SyncProtocol.pushPath, body: Data(body.utf8))
        #expect(answer.status == 400)
        #expect(answer.failure.code == .badRequest)
        #expect(answer.failure.reason.contains("models.Dog.version"), "\(answer.failure.reason)")
    }
}
