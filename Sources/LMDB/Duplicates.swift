extension ReadTransaction {
    /// Hands `body` each value stored under exactly `key` in a DUPSORT database, in value order, until it returns
    /// `false`.
    public func forEachDuplicate(
        of key: [UInt8], in database: Database, _ body: (UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try withCursor(database) { cursor in
            var entry = try key.withUnsafeBytes { raw in
                Result { () throws(LMDBError) in try cursor.seek(to: raw) }
            }.get()
            while let found = entry {
                guard try body(found.value) else { return }
                entry = try cursor.nextDuplicate()
            }
        }
    }

    /// How many values `key` holds in a DUPSORT database (0 when it is absent), counted by LMDB without visiting
    /// them.
    public func duplicateCount(of key: [UInt8], in database: Database) throws -> Int {
        try withCursor(database) { cursor in
            let found = try key.withUnsafeBytes { raw in
                Result { () throws(LMDBError) in try cursor.seek(to: raw) }
            }.get()
            return found == nil ? 0 : try cursor.duplicateCount()
        }
    }

    /// Whether the pair `key`/`value` is stored in a DUPSORT database.
    public func contains(key: [UInt8], value: [UInt8], in database: Database) throws -> Bool {
        try withCursor(database) { cursor in
            let found = try key.withUnsafeBytes { rawKey in
                value.withUnsafeBytes { rawValue in
                    Result { () throws(LMDBError) in try cursor.seek(key: rawKey, valueAtLeast: rawValue) }
                }
            }.get()
            return found.map { $0.value.elementsEqual(value) } ?? false
        }
    }
}
