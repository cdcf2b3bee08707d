import Cellar
import Foundation

/// The models the sync tests write: cards in folders (a folder's delete cascades to its cards' links), with text,
/// optional, list and number properties.
enum Synced {
    struct Folder: Model, Equatable {
        var id: UUID = UUID()
        var name: String
    }

    struct Card: Model, Equatable {
        var id: String
        var title: String
        var body: String? = nil
        var tags: [String] = []
        var rank: Int64 = 0
        var folder: Link<Folder>? = nil
        static let schema = Schema<Card>(indexes: [.index(\.rank)], links: [.link(\.folder)])
    }

    /// Numbered ids: refused by sync.
    struct Counter: Model {
        var id: Int64 = 0
        var value: Int
        static let schema = Schema<Counter>(autoIncrement: true)
    }

    /// A model that links to one that does not sync.
    struct Pin: Model {
        var id: String
        var card: Link<Card>?
        static let schema = Schema<Pin>(links: [.link(\.card)])
    }

    static let models: [any Model.Type] = [Folder.self, Card.self]
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
