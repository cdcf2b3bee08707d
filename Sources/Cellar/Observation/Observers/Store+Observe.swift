import Dispatch

extension Store {
    /// Calls `handler` on `queue` with each change of `query`'s results, as `changes(of:keyPaths:)` delivers them:
    /// first the results, then each change. Keep the token: the observation stops when it is released or cancelled.
    ///
    /// ```swift
    /// let token = store.observe(store.objects(Dog.self).sorted(by: \.name)) { change in
    ///     guard case .success(let change) = change else { return }
    ///     tableView.performBatchUpdates {
    ///         tableView.deleteRows(at: change.deletions.map { IndexPath(row: $0, section: 0) }, with: .automatic)
    ///         tableView.insertRows(at: change.insertions.map { IndexPath(row: $0, section: 0) }, with: .automatic)
    ///         tableView.reloadRows(at: change.modifications.map { IndexPath(row: $0, section: 0) }, with: .automatic)
    ///     }
    /// }
    /// ```
    ///
    /// The query runs off `queue`; the next change is read only once `handler` has returned, so a slow handler gets
    /// the newest results next instead of a backlog. An error (`schemaChangedElsewhere`) is delivered once and ends
    /// the observation.
    public func observe<M: Model>(
        _ query: Query<M>, keyPaths: [PartialKeyPath<M> & Sendable] = [], on queue: DispatchQueue = .main,
        _ handler: @escaping @Sendable (Result<CollectionChange<M>, any Error>) -> Void
    ) -> ObservationToken {
        Self.deliver(changes(of: query, keyPaths: keyPaths), on: queue, to: handler)
    }

    /// Calls `handler` on `queue` with each change of one object, as `changes(of:id:keyPaths:)` delivers them, ending after
    /// `.deleted`. Keep the token: the observation stops when it is released or cancelled.
    public func observe<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [PartialKeyPath<M> & Sendable] = [], on queue: DispatchQueue = .main,
        _ handler: @escaping @Sendable (Result<ObjectChange<M>, any Error>) -> Void
    ) -> ObservationToken {
        Self.deliver(changes(of: type, id: id, keyPaths: keyPaths), on: queue, to: handler)
    }

    private static func deliver<S: AsyncSequence & Sendable>(
        _ sequence: S, on queue: DispatchQueue, to handler: @escaping @Sendable (Result<S.Element, any Error>) -> Void
    ) -> ObservationToken where S.Element: Sendable {
        deliver(sequence, to: handler) { delivery in queue.async(execute: delivery) }
    }

    /// Calls `handler` with each element of `sequence` in a delivery that `submit` runs on the delivery queue
    /// (`queue.async`; a test's own queue).
    static func deliver<S: AsyncSequence & Sendable>(
        _ sequence: S, to handler: @escaping @Sendable (Result<S.Element, any Error>) -> Void,
        submittingTo submit: @escaping @Sendable (_ delivery: @escaping @Sendable () -> Void) -> Void
    ) -> ObservationToken where S.Element: Sendable {
        // Checked in each delivery, on the delivery queue: a delivery submitted before `cancel()` and run after it
        // calls nothing.
        let cancellation = ObservationToken.Cancellation()
        return ObservationToken(
            task: Task.detached {
                do {
                    for try await change in sequence {
                        guard !Task.isCancelled else { return }
                        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                            submit {
                                if !cancellation.isCancelled { handler(.success(change)) }
                                done.resume()
                            }
                        }
                    }
                } catch {
                    guard !Task.isCancelled else { return }
                    submit { if !cancellation.isCancelled { handler(.failure(error)) } }
                }
            }, cancellation: cancellation)
    }
}
