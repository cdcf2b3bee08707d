import Foundation

// libFuzzer's entry points. With `-sanitize=fuzzer` Swift links libFuzzer without its `main`: the executable's own
// `main` hands its arguments to `LLVMFuzzerRunDriver`, which calls back for each input.

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The reader being fuzzed. libFuzzer calls it from one thread, one input at a time.
nonisolated(unsafe) private var fuzzed: ((UnsafeRawBufferPointer) -> Void)?

/// What libFuzzer calls for each input (also the symbol its runtime looks for).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzed?(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// A fuzz target: `fuzz-<name> --write-seeds <folder>` writes its seed corpus; any other arguments are libFuzzer's.
public struct FuzzTarget: Sendable {
    public let name: String
    /// The seed inputs, made from real stores and records.
    public let seeds: @Sendable () throws -> [[UInt8]]
    /// Reads one input the way Cellar reads bytes it did not write itself. It must never crash, whatever the input:
    /// errors are fine, and are what most inputs give.
    public let body: @Sendable (UnsafeRawBufferPointer) -> Void

    public init(
        name: String, seeds: @escaping @Sendable () throws -> [[UInt8]],
        body: @escaping @Sendable (UnsafeRawBufferPointer) -> Void
    ) {
        (self.name, self.seeds, self.body) = (name, seeds, body)
    }

    /// Runs libFuzzer, or writes the seeds when asked to.
    public func main() -> Never {
        let arguments = CommandLine.arguments
        if arguments.count == 3, arguments[1] == "--write-seeds" {
            do {
                let folder = URL(fileURLWithPath: arguments[2], isDirectory: true)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for (number, seed) in try seeds().enumerated() {
                    try Data(seed).write(to: folder.appendingPathComponent("seed-\(number)"))
                }
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("fuzz-\(name): writing seeds failed: \(error)\n".utf8))
                exit(1)
            }
        }
        fuzzed = body
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        let status = runDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) }
        exit(status)
    }
}
