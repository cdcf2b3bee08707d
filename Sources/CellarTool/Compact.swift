import ArgumentParser
import Cellar
import Foundation
import Synchronization

extension CellarCommand {
    struct Compact: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a compacted copy of the store, free pages left out, into another folder.",
            discussion: """
                The store is only read (from one snapshot, so writers may go on meanwhile); the copy goes into \
                <to>, which is created when missing and must not hold a store yet.
                """)

        @OptionGroup var store: StoreArgument

        @Argument(help: "The folder to write the copy into.", completion: .directory)
        var to: String

        func run() throws {
            let inspector = try StoreInspector(at: store.url)
            let destination = URL(fileURLWithPath: to, isDirectory: true)
            let overview = try inspector.overview()
            let expected = overview.pagesInUse * overview.pageSize
            // The copy is one call into LMDB: a watcher reports its progress from the size of the file it writes.
            let done = Atomic<Bool>(false)
            let watcherEnded = DispatchSemaphore(value: 0)
            Thread {
                let progress = Progress(verb: "compacting")
                let data = destination.appendingPathComponent("data.mdb").path
                while !done.load(ordering: .acquiring) {
                    let written = (try? FileManager.default.attributesOfItem(atPath: data)[.size] as? Int) ?? 0
                    progress.update("into \(destination.path)", done: min(written, expected), total: expected)
                    Thread.sleep(forTimeInterval: 0.1)
                }
                progress.finish()
                watcherEnded.signal()
            }.start()
            do {
                defer {
                    done.store(true, ordering: .releasing)
                    watcherEnded.wait()
                }
                try inspector.compact(to: destination)
            }
            let size =
                (try? FileManager.default.attributesOfItem(
                    atPath: destination.appendingPathComponent("data.mdb").path)[.size] as? Int) ?? 0
            print(
                "Compacted \(store.url.path) (\(Format.bytes(overview.fileSize))) into \(destination.path) "
                    + "(\(Format.bytes(size)))")
        }
    }
}
