/// One difference between the schema stored in a file and the models a configuration opens it with.
///
/// Its `description` uses the words of Realm's migration errors ("Property 'Pet.color' has been added."). `handling`
/// says whether opening applies it by itself, applies what the `Schema` declares, or needs a migration.
public enum SchemaChange: Hashable, Sendable, CustomStringConvertible {
    /// A model with no records in the file yet.
    case modelAdded(model: String)
    /// A model stored under a name its `Schema` lists in `renamed(from:)`: its records, sequence and key dictionary
    /// move to the new name.
    case modelRenamed(from: String, to: String)
    /// A property the stored records do not have. `property` is a path for a field of a nested value
    /// (`address.zip`).
    case propertyAdded(model: String, property: String, kind: String, isOptional: Bool, hasDefault: Bool)
    /// A property the model no longer has. Stored values stay in untouched records and are never read again; adding
    /// the property back with the same kind finds them, with another kind clears them.
    case propertyRemoved(model: String, property: String)
    /// A property renamed in the `Schema` with `property(_:renamedFrom:)`.
    case propertyRenamed(model: String, from: String, to: String)
    /// A property whose kind changed in a way stored values cannot follow (`int` to `string`).
    case propertyTypeChanged(model: String, property: String, from: String, to: String)
    /// A property a stored record no longer decodes as, found at opening by decoding the records with the model's
    /// own type: every record when the model's fields changed, the first one when they did not (a custom
    /// `init(from:)` or coding keys that changed alone). `reason` names the record and what its decoding said.
    case propertyUnreadable(model: String, property: String, reason: String)
    /// A property that may now be absent.
    case propertyMadeOptional(model: String, property: String)
    /// A property that was optional and is now required: records without it cannot be read.
    case propertyMadeRequired(model: String, property: String)
    /// An index (`i/Dog.age`, `u/Person.email`) declared now and not before: it is built at opening.
    case indexAdded(model: String, index: String)
    /// An index no longer declared: its database is dropped at opening.
    case indexRemoved(model: String, index: String)
    /// A link declared now, or declared again with other rules: its backlink database is built at opening.
    case linkAdded(model: String, link: String)
    /// A link no longer declared: its backlink database is dropped at opening.
    case linkRemoved(model: String, link: String)
    /// Ids now come from the model's sequence (`true`) or from the caller (`false`). The sequence survives either
    /// way and is moved past the largest stored id.
    case autoIncrementChanged(model: String, isOn: Bool)

    /// How opening deals with a change.
    public enum Handling: Sendable, Hashable {
        /// Applied at opening, at any `schemaVersion`.
        case automatic
        /// Applied at opening as the model's `Schema` declares (a rename, a default value).
        case declared
        /// Needs a higher `schemaVersion` and a migration step that converts the stored records.
        case needsMigration
    }

    /// Whether opening applies the change by itself, as declared, or only through a migration.
    public var handling: Handling {
        switch self {
        case .modelRenamed, .propertyRenamed: .declared
        case .propertyAdded(_, _, _, let isOptional, let hasDefault):
            isOptional ? .automatic : hasDefault ? .declared : .needsMigration
        case .propertyTypeChanged, .propertyMadeRequired, .propertyUnreadable: .needsMigration
        case .modelAdded, .propertyRemoved, .propertyMadeOptional, .indexAdded, .indexRemoved, .linkAdded,
            .linkRemoved, .autoIncrementChanged:
            .automatic
        }
    }

    /// The model the change is about (its new name for a rename).
    public var model: String {
        switch self {
        case .modelAdded(let model), .propertyAdded(let model, _, _, _, _), .propertyRemoved(let model, _),
            .propertyRenamed(let model, _, _), .propertyTypeChanged(let model, _, _, _),
            .propertyUnreadable(let model, _, _),
            .propertyMadeOptional(let model, _), .propertyMadeRequired(let model, _), .indexAdded(let model, _),
            .indexRemoved(let model, _), .linkAdded(let model, _), .linkRemoved(let model, _),
            .autoIncrementChanged(let model, _):
            model
        case .modelRenamed(_, let to): to
        }
    }

    /// The property a change is about, by its path; `nil` for a change to a model, an index or a link.
    var property: String? {
        switch self {
        case .propertyAdded(_, let property, _, _, _), .propertyRemoved(_, let property),
            .propertyTypeChanged(_, let property, _, _), .propertyUnreadable(_, let property, _),
            .propertyMadeOptional(_, let property), .propertyMadeRequired(_, let property):
            property
        case .propertyRenamed(_, _, let to): to
        default: nil
        }
    }

    /// Why stored records cannot follow the change by themselves, for a change that needs a migration; `nil` for
    /// the others.
    var migrationReason: String? {
        guard handling == .needsMigration else { return nil }
        // A nested field is set through its enclosing property, and only a top-level property has a default.
        if case .propertyAdded(_, let path, _, _, _) = self, let dot = path.firstIndex(of: ".") {
            let top = path[..<dot]
            return "stored records have no value for it: set '\(top)' with its '\(path[path.index(after: dot)...])' "
                + "in a migration step"
        }
        switch self {
        case .propertyAdded(_, let property, _, _, _):
            return "stored records have no value for it and it has no default: set '\(property)' in a migration step, "
                + "or declare a default with Schema's property(_:default:)"
        case .propertyTypeChanged(_, let property, let from, _):
            return "stored values are '\(from)': convert '\(Self.topLevel(property))' in a migration step"
        case .propertyMadeRequired(_, let property):
            return "records without a value cannot be read: set '\(Self.topLevel(property))' in a migration step "
                + "where it is nil"
        case .propertyUnreadable(_, let property, _):
            return "convert '\(Self.topLevel(property))' in a migration step"
        default:
            return nil
        }
    }

    /// The property a migration step sets for a field at `path` (`address` for `address.zip`).
    private static func topLevel(_ path: String) -> String {
        path.firstIndex(of: ".").map { String(path[..<$0]) } ?? path
    }

    public var description: String {
        switch self {
        case .modelAdded(let model): "Model '\(model)' has been added."
        case .modelRenamed(let from, let to): "Model '\(from)' has been renamed to '\(to)'."
        case .propertyAdded(let model, let property, let kind, let isOptional, let hasDefault):
            "Property '\(model).\(property)' has been added"
                + (isOptional ? "." : hasDefault ? " (required, with a default)." : " (required, type '\(kind)').")
        case .propertyRemoved(let model, let property): "Property '\(model).\(property)' has been removed."
        case .propertyRenamed(let model, let from, let to):
            "Property '\(model).\(from)' has been renamed to '\(to)'."
        case .propertyTypeChanged(let model, let property, let from, let to):
            "Property '\(model).\(property)' has been changed from '\(from)' to '\(to)'."
        case .propertyUnreadable(let model, let property, let reason):
            "Property '\(model).\(property)' can no longer be read from the stored records (\(reason))."
        case .propertyMadeOptional(let model, let property):
            "Property '\(model).\(property)' has been made optional."
        case .propertyMadeRequired(let model, let property):
            "Property '\(model).\(property)' has been made required."
        case .indexAdded(let model, let index): "Index '\(index)' has been added to '\(model)'."
        case .indexRemoved(let model, let index): "Index '\(index)' has been removed from '\(model)'."
        case .linkAdded(let model, let link): "Link '\(model).\(link)' has been added."
        case .linkRemoved(let model, let link): "Link '\(model).\(link)' has been removed."
        case .autoIncrementChanged(let model, let isOn):
            "Auto-increment ids of '\(model)' have been turned \(isOn ? "on" : "off")."
        }
    }
}
