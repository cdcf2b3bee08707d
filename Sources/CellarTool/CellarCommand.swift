import ArgumentParser
import Cellar
import Foundation

/// `cellar`: look inside a Cellar store without the app that wrote it.
@main
struct CellarCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cellar",
        abstract: "Look inside a Cellar store without the app's model types.",
        discussion: """
            Every command but compact opens the store read-only and changes nothing, not even the reader table of \
            its lock file. Errors are Cellar's StoreError descriptions, with exit status 1.
            """,
        subcommands: [Info.self, Dump.self, Verify.self, Compact.self])
}

/// The store folder every command takes first.
struct StoreArgument: ParsableArguments {
    @Argument(help: "The store's folder (the one holding data.mdb and lock.mdb).", completion: .directory)
    var folder: String

    var url: URL { URL(fileURLWithPath: folder, isDirectory: true) }
}

/// A failure of a command whose arguments were well formed, such as a model the store does not hold: printed as
/// "Error: …" with exit status 1, as the help says, not as a usage error (64) with the usage text.
struct ToolError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
