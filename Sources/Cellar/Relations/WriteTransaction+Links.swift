import LMDB

/// How one write moves one link property's backlink entries.
struct LinkChange {
    let link: LinkInfo
    /// Targets the record links to now and did not before, each once.
    let added: [[UInt8]]
    /// Targets the record no longer links to, each once.
    let removed: [[UInt8]]
}

/// A link a transaction added: its target must exist when the transaction commits, unless the link was removed
/// again before then.
struct AddedLink {
    let link: LinkInfo
    let target: [UInt8]
    let source: [UInt8]
}

extension WriteTransaction {
    /// Adds to `plan` the backlink entries the write moves, after checking exclusive links; with
    /// `followOwnership`, notes the owned targets the write unlinks, for `collectOrphans` at the commit.
    func planLinks<M: Model>(
        old: M?, new: M?, primaryKey: [UInt8], state: ModelWriteState, followOwnership: Bool,
        into plan: inout WritePlan
    ) throws(StoreError) {
        let relationships = M.schema.links
        for position in relationships.indices {
            let relationship = relationships[position]
            let link = state.info.links[position]
            var before: [[UInt8]] = []
            var after: [[UInt8]] = []
            if let old { before = try targetKeys(relationship, of: old) }
            if let new { after = try targetKeys(relationship, of: new) }
            guard before != after else { continue }
            let added = after.filter { !before.contains($0) }
            let removed = before.filter { !after.contains($0) }
            guard !added.isEmpty || !removed.isEmpty else { continue }
            if link.isExclusive {
                for target in added { try checkExclusive(link, target: target, source: primaryKey) }
            }
            if followOwnership, link.ownsTargets {
                plan.unlinkedOwned.append(contentsOf: removed.map { (link, $0) })
            }
            plan.linkChanges.append(LinkChange(link: link, added: added, removed: removed))
        }
    }

    /// Deletes, by their delete rules, the owned targets this transaction unlinked that no record links to any
    /// more. Run at the commit, not at each write: a target moved from one owner to another within the transaction
    /// (removed from one list, then added to another) is kept, in whichever order the two writes came.
    func collectOrphans() throws(StoreError) {
        while !unlinkedOwned.isEmpty {
            let candidates = unlinkedOwned
            unlinkedOwned = []
            var seeds: [(ModelInfo, [UInt8])] = []
            var seen: Set<RecordRef> = []
            let txn = try lmdb
            for (link, target) in candidates {
                let info = try store.info(linkedBy: link)
                guard seen.insert(RecordRef(model: info.name, key: target)).inserted,
                    try linkCount(to: target, via: link) == 0,
                    try store.core.run("read", { try txn.get(info.records, key: target) != nil })
                else { continue }
                seeds.append((info, target))
            }
            if !seeds.isEmpty { try execute(try planDeletion(of: seeds)) }
        }
    }

    private func checkExclusive(_ link: LinkInfo, target: [UInt8], source: [UInt8]) throws(StoreError) {
        let holder = try sources(linkingTo: target, via: link, limit: 2).first { $0 != source }
        if let holder {
            throw .exclusiveLinkViolated(
                link: link.label, target: "\(link.targetName) \(KeyEncoding.describe(target))",
                holder: KeyEncoding.describe(holder))
        }
    }

    /// Drops links from the record at `key` by editing its bytes (`LinkBytes`), and their backlink entries: a
    /// rewrite of the rules' `.removeLink` that neither decodes nor encodes the record. `fields` are the model's
    /// `LinkBytes.fields(of:)`. Returns `false`, having changed nothing, when the record must be decoded to do it;
    /// a record that is not there is left so.
    func removeLinksInBytes(
        key: [UInt8], _ targetsByLink: [Int: [[UInt8]]], fields: [LinkBytes.Field?], state: ModelWriteState
    ) throws(StoreError) -> Bool {
        let txn = try writable
        let stored: UnsafeRawBufferPointer?
        do { stored = try txn.get(state.info.records, key: key) } catch { throw lmdbError(error, "read") }
        guard let stored else { return true }
        let dictionary = state.encoder.dictionary
        let codes: [UInt64?]
        if let known = state.linkFieldCodes {
            codes = known
        } else {
            // A name the dictionary does not have yet has no code: those links are edited decoded, in this
            // transaction, even if a record adds the name later in it.
            codes = fields.map { field in field.flatMap { dictionary.tags[$0.name] }.map { UInt64($0) << 1 } }
            state.linkFieldCodes = codes
        }
        let keyLimit = RecordEntries.keyLimit(of: dictionary)
        // Edited only once its checksum vouches for it; otherwise decoded, which says what is wrong. (A record of
        // the format before checksums is sealed as it is written back.)
        guard let body = RecordFormat.checkedBody(of: stored) else { return false }
        var bytes = Array(body)
        bytes[0] = RecordFormat.version
        var changes: [LinkChange] = []
        for (position, targets) in targetsByLink {
            guard let field = fields[position], let code = codes[position],
                let edited = LinkBytes.removing(
                    targets, fromFieldCoded: code, isList: field.isList, in: bytes, keyLimit: keyLimit)
            else { return false }
            bytes = edited
            changes.append(LinkChange(link: state.info.links[position], added: [], removed: targets))
        }
        RecordFormat.seal(&bytes)
        do { try txn.put(state.info.records, key: key, value: bytes) } catch { throw lmdbError(error, "write") }
        try applyLinks(changes, primaryKey: key, state: state)
        record(.updated, key: key, state: state)
        return true
    }

    /// Writes the backlink entries planned by `planLinks`, and notes the added links for the check at commit.
    func applyLinks(_ changes: [LinkChange], primaryKey: [UInt8], state: ModelWriteState) throws(StoreError) {
        let txn = try writable
        let writer = indexWriter(state)
        for change in changes {
            for target in change.removed {
                try writer.remove(target, primaryKey: primaryKey, from: change.link.database, in: txn)
            }
            for target in change.added {
                try writer.add(target, primaryKey: primaryKey, to: change.link.database, in: txn)
                if !change.link.allowsDangling {
                    linksToCheck.append(AddedLink(link: change.link, target: target, source: primaryKey))
                }
            }
        }
    }

    /// Throws `linkTargetMissing` for a link added by this transaction that still names a record that does not
    /// exist. Run just before the commit, so records may be inserted in any order within the transaction.
    func checkAddedLinks() throws(StoreError) {
        guard !linksToCheck.isEmpty else { return }
        let txn = try lmdb
        for added in linksToCheck {
            let target = try store.info(linkedBy: added.link)
            let stillLinked = try store.core.run("check the links of") {
                try txn.get(target.records, key: added.target) == nil
                    && txn.contains(key: added.target, value: added.source, in: added.link.database)
            }
            if stillLinked {
                throw .linkTargetMissing(
                    link: added.link.label, source: KeyEncoding.describe(added.source), target: target.name,
                    targetID: KeyEncoding.describe(added.target))
            }
        }
        linksToCheck.removeAll()
    }
}

/// One link from one record to another, named by the link's label and both keys.
struct LinkEdge: Hashable {
    let link: String
    let target: [UInt8]
    let source: [UInt8]
}
