import Observation

/// A query's results that keep themselves up to date, for SwiftUI: hold one in a view (`@State`), read `results`,
/// and the view redraws after each commit that changes them.
///
/// ```swift
/// struct DogList: View {
///     @State var dogs: LiveResults<Dog>
///     var body: some View {
///         List(dogs.results, id: \.id) { dog in Text(dog.name) }   // frozen results: indexes never go stale
///     }
/// }
/// ```
///
/// `results` is a frozen `Results`, replaced as a whole on the main actor; the query runs off the main actor. Until
/// the first results arrive it is empty. Released, it stops observing.
@MainActor
@Observable
public final class LiveResults<M: Model> {
    /// The newest results: frozen, safe to index while a view draws.
    public private(set) var results: Results<M>
    /// The change that produced `results`; `nil` before the first change after the initial results.
    public private(set) var lastChange: CollectionChange<M>?
    /// The error that stopped the updates (`schemaChangedElsewhere`), if one did.
    public private(set) var error: (any Error)?
    /// Whether the initial results have arrived.
    public private(set) var isLoaded = false
    @ObservationIgnored private var token: ObservationToken?

    /// Results of `query` run on `store`, kept up to date; with `keyPaths`, only changes to those properties (and
    /// records entering or leaving) replace `results`, as in `Store.changes(of:keyPaths:)`.
    public init(_ query: Query<M>, in store: Store, keyPaths: [PartialKeyPath<M> & Sendable] = []) {
        let query = query.onStore(store)
        results = Results([], version: StoreVersion(rawValue: 0), query: query)
        let changes = store.changes(of: query, keyPaths: keyPaths)
        token = ObservationToken(
            task: Task.detached { [weak self] in
                do {
                    for try await change in changes {
                        guard let self else { return }
                        await self.apply(change)
                    }
                } catch {
                    await self?.fail(error)
                }
            })
    }

    private func apply(_ change: CollectionChange<M>) {
        results = change.results
        if change.isInitial { isLoaded = true } else { lastChange = change }
    }

    private func fail(_ error: any Error) { self.error = error }
}
