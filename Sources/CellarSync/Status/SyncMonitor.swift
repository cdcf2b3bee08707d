import Observation

/// A ``SyncClient``'s status as an `@Observable` object, for SwiftUI: a view reading `monitor.status` updates when
/// it changes.
///
/// ```swift
/// @State var monitor = SyncMonitor(client: sync)
/// var body: some View { Text(monitor.status.pendingChanges == 0 ? "Up to date" : "Syncing…") }
/// ```
@MainActor
@Observable
public final class SyncMonitor {
    public private(set) var status = SyncStatus()
    @ObservationIgnored private var watching: Task<Void, Never>?

    public init(client: SyncClient) {
        let updates = client.statusUpdates()
        watching = Task { [weak self] in
            for await status in updates {
                guard let self else { return }
                self.status = status
            }
        }
    }

    isolated deinit { watching?.cancel() }
}
