import Foundation
import LMDB
import PropertyBased
import Testing

@testable import Cellar

/// A fresh folder under the system's temporary directory, removed when released.
final class TemporaryFolder: Sendable {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("cellar-tests-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func store(_ models: [any Model.Type], schemaVersion: Int = 1, mapSize: Int = 64 << 20) throws -> Store {
        try Store(at: url, configuration: .init(models: models, schemaVersion: schemaVersion, initialMapSize: mapSize))
    }
}

/// The benchmark's model, auto-numbered.
struct Dog: Model, Equatable {
    var id: Int64 = 0
    var name: String
    var age: Int
    var owner: Int64?
    static let schema = Schema<Dog>(autoIncrement: true)
}

/// A model with a string id and no schema of its own.
struct Note: Model, Equatable {
    var id: String
    var text: String
}

/// Encodes and decodes through the record codec alone, with a fresh key dictionary.
func roundTrip<T: Codable>(_ value: T, as type: T.Type = T.self) throws -> T {
    let encoder = RecordEncoder(dictionary: .empty)
    let bytes = try encoder.encode(value)
    let dictionary = encoder.absorbAddedNames()
    return try bytes.withUnsafeBytes { try RecordDecoder.decode(T.self, from: $0, dictionary: dictionary) }
}

/// Encodes `value`, returning the bytes and the dictionary they refer to.
func encoded<T: Encodable>(_ value: T, dictionary: KeyDictionary = .empty) throws -> ([UInt8], KeyDictionary) {
    let encoder = RecordEncoder(dictionary: dictionary)
    let bytes = try encoder.encode(value)
    return (bytes, encoder.absorbAddedNames())
}

/// An executable of this package built beside the tests: `cellar-test-helper`, a second process for the tests that
/// need one, or the `cellar` tool.
func builtExecutable(_ name: String = "cellar-test-helper") throws -> URL {
    let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let candidates = [folder, folder.deletingLastPathComponent(), Bundle.main.bundleURL.deletingLastPathComponent()]
    for candidate in candidates {
        let url = candidate.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    throw CocoaError(.fileNoSuchFile)
}

/// Runs `cellar-test-helper` with `arguments` and returns what it printed, once it has exited with status 0.
func helperOutput(_ arguments: [String]) throws -> String {
    let helper = Process()
    helper.executableURL = try builtExecutable()
    helper.arguments = arguments
    let output = Pipe()
    helper.standardOutput = output
    try helper.run()
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    helper.waitUntilExit()
    #expect(helper.terminationStatus == 0, "cellar-test-helper \(arguments.joined(separator: " "))")
    return String(decoding: printed, as: UTF8.self)
}

/// A `cellar-test-helper hold` process: it has opened and read the store in `folder` when this returns, and keeps it
/// open until `input` is closed or it is killed.
func holdingProcess(_ folder: URL) throws -> (process: Process, input: Pipe) {
    let helper = Process()
    helper.executableURL = try builtExecutable()
    helper.arguments = ["hold", folder.path]
    let output = Pipe()
    let input = Pipe()
    helper.standardOutput = output
    helper.standardInput = input
    try helper.run()
    let line = output.fileHandleForReading.availableData
    #expect(String(decoding: line, as: UTF8.self) == "open\n")
    return (helper, input)
}

/// Whether `condition` holds within `limit`, checked every millisecond; returns as soon as it does. The limit is counted
/// in checks, not read from a clock: while other tests hold every thread of the cooperative pool (two on a two-core
/// machine, each held by a synchronous test waiting for a process), no check runs and none counts, so the limit runs
/// out only while the work awaited could run too.
func holds(within limit: Duration, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<Int(limit / .milliseconds(1)) {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

extension Trait where Self == TimeLimitTrait {
    /// The limit of a suite whose tests wait for something to happen (a wake-up, another process, a server): it ends a
    /// hang, and it is longer than a whole run. Every test of a run shares the cooperative pool's threads, one a core,
    /// so a test's wait resumes only when the tests running meanwhile let go: on a busy two-core machine a test that
    /// takes milliseconds alone finished after 80 seconds in CI.
    static var hangGuard: Self { .timeLimit(.minutes(5)) }
}

/// Whether the long torture runs were asked for (`CELLAR_TORTURE=long swift test --filter Torture`).
let longTorture = ProcessInfo.processInfo.environment["CELLAR_TORTURE"] == "long"

extension Thread {
    /// Runs `body` on a new thread and waits for its result: a second thread for a test that holds a read open.
    static func runAndWait<R: Sendable>(_ body: @escaping @Sendable () throws -> R) -> R? {
        let result = Lock<R?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            result.withLock { $0 = try? body() }
            done.signal()
        }.start()
        done.wait()
        return result.withLock { $0 }
    }
}

/// `record` (sealed, as the encoder returns it) with its format byte and value changed by `edit`, then sealed
/// again: what a writer of the format would store. Tests that build unusual or damaged records the readers must
/// handle use it, so that the checksum, which would refuse the bytes first, does not hide the readers' behaviour.
func resealed(_ record: [UInt8], _ edit: (inout [UInt8]) -> Void) -> [UInt8] {
    var body = Array(record.dropLast(RecordFormat.checksumSize))
    edit(&body)
    RecordFormat.seal(&body)
    return body
}

/// A damaged copy of a record, by `round`: truncated (every fourth round), a few bytes changed, random bytes, or a
/// huge length inserted, and sealed again (`resealed`), so that the readers, not the checksum, meet the damage. The
/// fuzz tests of both record readers use the same mutations.
func mutation(_ round: Int, of bytes: [UInt8], using generator: inout SeededGenerator) -> [UInt8] {
    resealed(bytes) { mutated in mutate(&mutated, round, using: &generator) }
}

private func mutate(_ mutated: inout [UInt8], _ round: Int, using generator: inout SeededGenerator) {
    switch round % 4 {
    case 0: mutated = Array(mutated.prefix(Int.random(in: 0..<mutated.count, using: &generator)))
    case 1:
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            mutated[Int.random(in: 0..<mutated.count, using: &generator)] = .random(in: 0...255, using: &generator)
        }
    case 2:
        mutated = (0..<Int.random(in: 0...64, using: &generator)).map { _ in .random(in: 0...255, using: &generator) }
    default:
        let at = Int.random(in: 1..<mutated.count, using: &generator)
        mutated.insert(contentsOf: [0xFF, 0xFF, 0xFF, 0x7F], at: at)
    }
}

/// The sanitizer this test run was built with (`swift test --sanitize=…`), found by the runtime's entry point.
enum Sanitizer {
    static let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
    static let thread = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil
}

/// swift-property-based's `propertyCheck`, with an error that `body` throws recorded as a failure of the input that
/// threw it (and shrunk like any other): `propertyCheck` runs `body` under `try?` (2.x, Swift 6.2 and later), so a
/// property whose store call throws would pass without a word.
func checkProperty<InputValue, ResultValue>(
    count: Int = 100, input: Generator<ResultValue, some Sequence<InputValue>>,
    isolation: isolated (any Actor)? = #isolation, sourceLocation: SourceLocation = #_sourceLocation,
    perform body: (ResultValue) async throws -> Void
) async {
    await propertyCheck(
        count: count, input: input,
        perform: { value in
            do { try await body(value) } catch { Issue.record(error, sourceLocation: sourceLocation) }
        }, isolation: isolation, sourceLocation: sourceLocation)
}

/// `checkProperty` with two generators, whose values `body` takes apart.
func checkProperty<InA, InB, OutA, OutB>(
    count: Int = 100, input first: Generator<OutA, some Sequence<InA>>, _ second: Generator<OutB, some Sequence<InB>>,
    isolation: isolated (any Actor)? = #isolation, sourceLocation: SourceLocation = #_sourceLocation,
    perform body: (OutA, OutB) async throws -> Void
) async {
    await checkProperty(
        count: count, input: zip(first, second), isolation: isolation, sourceLocation: sourceLocation
    ) { values in try await body(values.0, values.1) }
}

/// `cellar-test-helper` run with `arguments`, fed lines on its input and read line by line from its output: a second
/// process that commits when told.
struct HelperOnRequest {
    private let input = Pipe()
    private let exited: AsyncStream<Int32>
    /// What it prints, a line at a time.
    let lines: AsyncStream<String>

    init(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = try builtExecutable()
        process.arguments = arguments
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        // Its end is awaited, not its output's: a process started meanwhile elsewhere may hold the pipe open.
        let (exited, exit) = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { process in
            exit.yield(process.terminationStatus)
            exit.finish()
        }
        self.exited = exited
        try process.run()
        lines = Self.lines(of: output.fileHandleForReading)
    }

    /// Writes `line` and a line end to its input.
    func send(_ line: String) throws { try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8)) }

    /// Closes its input and waits for it to exit; its exit status.
    func finish() async -> Int32? {
        try? input.fileHandleForWriting.close()
        return await exited.first { _ in true }
    }

    /// The lines read from `file` until it ends, read on a thread of their own: no task of the cooperative pool, which
    /// the observer needs, waits for the other process.
    private static func lines(of file: FileHandle) -> AsyncStream<String> {
        let (lines, continuation) = AsyncStream<String>.makeStream()
        Thread {
            var pending = Data()
            while case let data = file.availableData, !data.isEmpty {
                pending += data
                while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    continuation.yield(String(decoding: pending[pending.startIndex..<end], as: UTF8.self))
                    pending = Data(pending[(end + 1)...])
                }
            }
            continuation.finish()
        }.start()
        return lines
    }
}
