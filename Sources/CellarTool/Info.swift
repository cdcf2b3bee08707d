import ArgumentParser
import Cellar
import Foundation
import LMDB

extension CellarCommand {
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the store's format, schema version, models, pages, map size and readers.",
            discussion: "Walks every page of the file first, so that a damaged file is reported, not read.")

        @OptionGroup var store: StoreArgument

        func run() throws {
            let inspector = try StoreInspector(at: store.url)
            let progress = Progress(verb: "checking pages")
            progress.start()
            let overview = try inspector.overview()
            let models = try inspector.models()
            progress.finish()
            print(Self.describe(overview, models: models, folder: store.url.path), terminator: "")
            if !overview.pageProblems.isEmpty { throw ExitCode.failure }
        }

        static func describe(_ overview: StoreOverview, models: [StoredModel], folder: String) -> String {
            var text = "Store \(folder)\n"
            text += "  format \(overview.formatVersion), schema version "
            text += overview.schemaVersion.map(String.init) ?? "none (no model stored yet)"
            text += ", version \(overview.version)\n"
            text +=
                "  file \(Format.bytes(overview.fileSize)): \(Format.count(overview.pagesInUse)) pages in use, "
                + "\(Format.count(overview.freePages)) free, of \(Format.bytes(overview.pageSize)) each; map "
                + "\(Format.bytes(overview.mapSize))\n"
            if !overview.pageProblems.isEmpty {
                text += "  damaged pages:\n" + overview.pageProblems.map { "    \($0)\n" }.joined()
            }
            text += "  readers: " + readers(overview) + "\n"
            if let sync = overview.sync {
                text += "  sync: device \(sync.device), models \(sync.models.joined(separator: ", ")); "
                text += "\(counted(sync.trackedRecords, "record")) tracked, \(counted(sync.pendingRecords, "change")) "
                text += "waiting to be pushed, pulled up to server sequence \(sync.cursor)\n"
            }
            text += models.isEmpty ? "No models\n" : "Models\n"
            for model in models {
                text += "  \(model.name): \(counted(model.recordCount, "record"))"
                if let next = model.nextID { text += ", auto-increment, next id \(next)" }
                text += "\n"
                text += model.fieldLines.map { "      \($0)\n" }.joined()
                for index in model.indexes {
                    let kind =
                        index.name.hasPrefix("u/")
                        ? "unique index" : index.name.hasPrefix("t/") ? "full-text index" : "index"
                    text += "    \(kind) \(index.name): "
                    text += index.entries.map { counted($0, "entry", plural: "entries") } ?? "missing"
                    text += "\n"
                }
                for link in model.links {
                    text += "    link \(link.description): \(link.database), "
                    text += link.entries.map { counted($0, "entry", plural: "entries") } ?? "missing"
                    text += "\n"
                }
            }
            return text
        }

        private static func readers(_ overview: StoreOverview) -> String {
            guard overview.usesLockFile else { return "unknown (the lock file cannot be opened for writing)" }
            guard !overview.readers.isEmpty else { return "none of other processes (at most \(overview.maxReaders))" }
            let stale = overview.readers.filter { !$0.processIsAlive }.count
            var text = "\(overview.readers.count) in use (at most \(overview.maxReaders))"
            if stale > 0 { text += ", \(stale) stale: their processes ended; the next writer clears them" }
            for reader in overview.readers {
                text += "\n    process \(reader.process)"
                text += reader.transactionID.map { ": reading version \($0)" } ?? ": idle"
                if !reader.processIsAlive { text += " (ended)" }
            }
            return text
        }
    }
}
