import Cellar
import CellarSyncTestSupport
import Foundation
import Testing

extension Trait where Self == TimeLimitTrait {
    /// The limit of a suite whose tests wait for something to happen (a wake-up, another process, a server): it ends a
    /// hang, and it is longer than a whole run. Every test of a run shares the cooperative pool's threads, one a core,
    /// so a test's wait resumes only when the tests running meanwhile let go: on a busy two-core machine a test that
    /// takes milliseconds alone finished after 80 seconds in CI.
    static var hangGuard: Self { .timeLimit(.minutes(5)) }
}

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
