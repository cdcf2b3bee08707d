import Cellar
import Foundation

/// Numbers as a person reads them in the tool's output.
enum Format {
    /// `12,345`.
    static func count(_ value: Int) -> String { grouped(value) }

    /// `4,096 bytes`, `12.5 MB`: decimal units past 10 kB.
    static func bytes(_ value: Int) -> String {
        guard value >= 10_000 else { return "\(count(value)) bytes" }
        let units = ["kB", "MB", "GB", "TB"]
        var scaled = Double(value) / 1_000
        var unit = 0
        while scaled >= 1_000, unit < units.count - 1 {
            scaled /= 1_000
            unit += 1
        }
        return String(format: scaled < 100 ? "%.1f %@" : "%.0f %@", scaled, units[unit])
    }
}

/// A one-line progress report on standard error, redrawn in place; silent when standard error is not a terminal.
final class Progress {
    private let verb: String
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastDrawn = Date.distantPast

    init(verb: String) { self.verb = verb }

    func start() { draw("\(verb)…") }

    /// `done` of `total` for `subject`, redrawn at most ten times a second.
    func update(_ subject: String, done: Int, total: Int) {
        guard isTerminal, Date().timeIntervalSince(lastDrawn) >= 0.1 || done == total else { return }
        let percent = total > 0 ? min(100, done * 100 / total) : 100
        draw("\(verb) \(subject): \(percent)% (\(Format.count(done)) of \(Format.count(total)))")
    }

    /// Clears the line, so that what follows starts on a clean one.
    func finish() {
        guard isTerminal else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    private func draw(_ line: String) {
        guard isTerminal else { return }
        lastDrawn = Date()
        FileHandle.standardError.write(Data("\r\u{1B}[K\(line)".utf8))
    }
}
