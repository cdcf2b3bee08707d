/// A link to a record of another model (or the same one), stored as the target's primary key.
///
/// Declare `var owner: Link<Person>?` for a to-one link or `var dogs: [Link<Dog>]` for an ordered to-many list
/// (Realm's `List<Dog>`), and name the property in the model's `Schema.links`, which keeps a backlink index for it
/// and says what deleting either end does. A list may hold the same target more than once, as Realm's `List` may.
///
/// A link is a plain value: copying a record copies its links, and nothing is loaded until you ask for it with
/// `store.object(link)` or `snapshot.resolve(links)`.
public struct Link<Target: Model>: Codable, Hashable, Sendable {
    /// The primary key of the record this link points to.
    public var id: Target.ID

    /// A link to the record with primary key `id`.
    public init(id: Target.ID) { self.id = id }

    /// A link to `target`, by its id: insert an auto-increment target before linking it, so that its id is set.
    public init(_ target: Target) { self.id = target.id }

    // A link is stored as the bare id, so a record's bytes hold the target's key and nothing else. Cellar's own
    // coders take a shortcut that writes and reads the same bytes: lists of links are common and long.
    public init(from decoder: any Decoder) throws {
        if let records = decoder as? RecordDecoder {
            self.id = try records.decodeLinkID(Target.ID.self)
        } else {
            self.id = try decoder.singleValueContainer().decode(Target.ID.self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if let records = encoder as? RecordEncoder {
            try records.encodeLinkID(id)
        } else {
            var container = encoder.singleValueContainer()
            try container.encode(id)
        }
    }
}

/// A property type that holds links to one model: `[Link<T>]`, `Link<T>?` or `Link<T>`. Queries take key paths to
/// such properties (`\.dogs`, `\.owner`) to follow links backwards.
public protocol LinkProperty {
    /// The model the links lead to.
    associatedtype Target: Model
}

extension Link: LinkProperty {}
/// A list of links (`[Link<Dog>]`, Realm's `List<Dog>`) names the model its links lead to.
extension Array: LinkProperty where Element: LinkProperty { public typealias Target = Element.Target }
/// An optional link (`Link<Person>?`, a to-one link) names the model it leads to.
extension Optional: LinkProperty where Wrapped: LinkProperty { public typealias Target = Wrapped.Target }
