import ArgumentParser
import Cellar
import Foundation

extension CellarCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every page, record, index, unique index and backlink of the store.",
            discussion: """
                Walks every page before anything reads it, decodes every record, and compares every index and \
                backlink database with the records, and every link with the records it leads to. Prints what was \
                checked and every difference in words; exit status 0 only when everything agrees.
                """)

        @OptionGroup var store: StoreArgument

        func run() throws {
            let inspector = try StoreInspector(at: store.url)
            let progress = Progress(verb: "verifying")
            progress.start()
            let report = try inspector.verify { model, done, total in
                progress.update(model, done: done, total: total)
            }
            progress.finish()
            print("Store \(store.url.path), version \(report.version)")
            for line in report.checked { print("  " + line) }
            guard !report.problems.isEmpty else {
                print("Everything agrees.")
                return
            }
            print("Problems:")
            for problem in report.problems { print("  " + problem) }
            throw ExitCode.failure
        }
    }
}
