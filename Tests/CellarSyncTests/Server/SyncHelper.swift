import Foundation
import Testing

/// `cellar-sync-helper`, the sync tests' second process: a device that can be killed, or whose clock is wrong.
enum SyncHelper {
    /// Runs `cellar-sync-helper` to its end with `environment` added (killed, when `expectKilled`), and returns the lines it printed.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], expectKilled: Bool = false
    ) async throws -> [String] {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data: Data = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: data)
            }
        }
        if expectKilled {
            #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
        } else {
            #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Runs `cellar-sync-helper` with `arguments`, kills it with SIGKILL once it printed `afterLines` lines, and
    /// returns the lines it printed.
    static func runUntilKilled(_ arguments: [String], afterLines count: Int) async throws -> [String] {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let lines: [String] = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var text = ""
                while true {
                    let chunk = output.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    text += String(decoding: chunk, as: UTF8.self)
                    if text.split(separator: "\n").count >= count { break }
                }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                continuation.resume(returning: text.split(separator: "\n").map(String.init))
            }
        }
        return lines
    }

    /// `cellar-sync-helper`, built beside the tests: in the folder of the test binary, or the one above it. (Not
    /// found through `Bundle.allBundles`, whose copy swift-corelibs-foundation never releases: LeakSanitizer reports
    /// it.)
    static func executable() throws -> URL {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [folder, folder.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("cellar-sync-helper")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw CocoaError(.fileNoSuchFile)
    }
}
