/// A value that is a link: its whole encoded form is its target's id.
protocol LinkIDCoding {
    associatedtype LinkID: Codable
    init(id: LinkID)
    var id: LinkID { get }
}

extension Link: LinkIDCoding {}

/// A list of links, which Cellar's coders read and write in one pass: the same bytes as the `Codable` path (an
/// unkeyed container of ids), without a container, a generic call and a cast per element. Lists of links are the
/// part of a linking record that costs most to code, and they are decoded for every backlink query.
protocol LinkListCoding {
    static func decodeLinkList(_ decoder: RecordDecoder) throws -> Self
    func encodeLinkList(_ encoder: RecordEncoder) throws
}

extension Array: LinkListCoding where Element: LinkIDCoding {
    static func decodeLinkList(_ decoder: RecordDecoder) throws -> [Element] {
        try decoder.decodeLinkList(Element.self)
    }

    func encodeLinkList(_ encoder: RecordEncoder) throws {
        try encoder.encodeLinkList(self)
    }
}
