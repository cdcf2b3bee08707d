import Cellar
import CellarSyncTestSupport
import Foundation

/// A fresh folder under the system's temporary directory, removed when released.
final class TemporaryFolder: Sendable {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("cellar-sync-tests-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func store(_ models: [any Model.Type] = Synced.models, name: String = "store") throws -> Store {
        try Store(at: url.appendingPathComponent(name), configuration: .init(models: models))
    }
}
