/// `path`, typed `Sendable`. Key paths are immutable values; the ones this is given are joined from `Sendable` key
/// paths (`$0.address.city` in a `where { }` closure) or taken from a `Predicate`, whose steps are `Sendable`, so no
/// captured subscript argument makes them unsafe to share. `appending(path:)` and a cast from `AnyKeyPath` just
/// lose the marker, which has no representation at run time.
func sendableKeyPath<Root, Value>(_ path: KeyPath<Root, Value>) -> KeyPath<Root, Value> & Sendable {
    unsafeBitCast(path, to: (KeyPath<Root, Value> & Sendable).self)
}
