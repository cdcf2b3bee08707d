// Sync's figures, against a running cellar-server and its PostgreSQL (Server/bench starts both and runs this):
//   cellar-sync-bench --server URL --token TOKEN --psql "psql args…" [--records N] [--changes N] [--deliveries N]
// Prints one line per figure: the first sync of N records into an empty device, pushing N changes, the time from a
// commit on one device to its delivery to an observer on another (median and 99th percentile), and PostgreSQL's own
// rate for the same rows through COPY, the ceiling.
import Cellar
import CellarSync
import CellarSyncProtocol
import Foundation

struct BenchCard: Model {
    var id: String
    var title: String
    var body: String
    var tags: [String]
    var rank: Int64
}

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
guard let server = option("--server").flatMap(URL.init(string:)), let token = option("--token"),
    let psql = option("--psql")
else {
    print("usage: cellar-sync-bench --server URL --token TOKEN --psql \"psql arguments\" [--records N] …")
    exit(2)
}
let records = Int(option("--records") ?? "") ?? 100_000
let changes = Int(option("--changes") ?? "") ?? 10_000
let deliveries = Int(option("--deliveries") ?? "") ?? 200
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cellar-sync-bench-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: folder) }

func device(_ name: String) throws -> (Store, SyncClient) {
    let store = try Store(
        at: folder.appendingPathComponent(name), configuration: .init(models: [BenchCard.self], durability: .relaxed))
    var configuration = SyncConfiguration(server: server, token: token, models: [BenchCard.self])
    configuration.pushBatchSize = 1_000
    return (store, try SyncClient(store: store, configuration: configuration))
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func card(_ number: Int, version: Int = 0) -> BenchCard {
    BenchCard(
        id: String(format: "card-%07d", number), title: "Card \(number) v\(version)",
        body: String(repeating: "lorem ipsum ", count: 8), tags: ["t\(number % 10)", "v\(version)"],
        rank: Int64(number))
}

let clock = ContinuousClock()
let (writerStore, writer) = try device("writer")
try writerStore.write { txn in for number in 0..<records { try txn.insert(card(number)) } }
let pushAll = clock.now
try await writer.pushAll()
let pushAllTime = seconds(clock.now - pushAll)
print(
    String(format: "push %d new records: %.2f s (%.0f records/s)", records, pushAllTime, Double(records) / pushAllTime))

let (readerStore, reader) = try device("reader")
let firstSync = clock.now
try await reader.sync()
let firstSyncTime = seconds(clock.now - firstSync)
let pulled = try readerStore.read { try $0.count(BenchCard.self) }
print(
    String(
        format: "first sync of %d records into an empty device: %.2f s (%.0f records/s)", pulled, firstSyncTime,
        Double(pulled) / firstSyncTime))

try writerStore.write { txn in
    for number in 0..<changes { try txn.update(card(number * (records / changes), version: 1)) }
}
let pushChanges = clock.now
try await writer.pushAll()
let pushChangesTime = seconds(clock.now - pushChanges)
print(
    String(
        format: "push %d changes: %.2f s (%.0f changes/s)", changes, pushChangesTime,
        Double(changes) / pushChangesTime))
try await reader.sync()

// Commit on the writer to delivery to an observer on the reader, which syncs live.
await reader.start()
/// Milliseconds from each commit on the writer to its delivery to an observer on the reader, `count` times.
func deliveryTimes(count: Int) async throws -> [Double] {
    var latencies: [Double] = []
    var observed = readerStore.changes(of: readerStore.objects(BenchCard.self).where(\.rank == -1)).makeAsyncIterator()
    _ = try await observed.next()
    for number in 0..<count {
        let started = clock.now
        try await writerStore.write {
            try $0.upsert(BenchCard(id: "live-\(number)", title: "", body: "", tags: [], rank: -1))
        }
        try await writer.pushAll()
        _ = try await observed.next()
        latencies.append(seconds(clock.now - started) * 1000)
    }
    return latencies.sorted()
}
let latencies = try await deliveryTimes(count: deliveries)
await reader.stop()
print(
    String(
        format: "commit on one device to an observer on another, %d deliveries: median %.1f ms, p99 %.1f ms",
        deliveries, latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)]))

// The ceiling: PostgreSQL's COPY of the same rows, the same columns, into a table like cellar_records.
let rows = folder.appendingPathComponent("rows.csv")
var csv = ""
let encoder = JSONEncoder()
for number in 0..<records {
    let json = String(decoding: try encoder.encode(card(number)), as: UTF8.self).replacingOccurrences(
        of: "\"", with: "\"\"")
    csv += "bench,BenchCard,card-\(number),\"\(json)\",\(number)\n"
}
try csv.write(to: rows, atomically: true, encoding: .utf8)
let script = """
    SET client_min_messages = warning;
    DROP TABLE IF EXISTS cellar_bench_copy;
    CREATE TABLE cellar_bench_copy (owner text, model text, id text, record jsonb, sequence bigint, PRIMARY KEY (owner, model, id));
    \\timing on
    \\copy cellar_bench_copy FROM '\(rows.path)' WITH (FORMAT csv)
    DROP TABLE cellar_bench_copy;
    """
let process = Process()
process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
process.arguments = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"] + psql.split(separator: " ").map(String.init)
let input = Pipe()
let output = Pipe()
process.standardInput = input
process.standardOutput = output
try process.run()
input.fileHandleForWriting.write(Data(script.utf8))
try input.fileHandleForWriting.close()
let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
process.waitUntilExit()
if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Time:") }),
    let milliseconds = Double(line.split(separator: " ")[1])
{
    print(
        String(
            format: "PostgreSQL COPY of the same %d rows (the ceiling): %.2f s (%.0f rows/s)", records,
            milliseconds / 1000, Double(records) / (milliseconds / 1000)))
} else {
    print("PostgreSQL COPY: no timing in psql's output: \(text)")
}
