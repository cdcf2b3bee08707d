// Each message as JSON, in one place: the names here are the protocol's.

extension ModelSchema {
    init(json: JSONValue, at path: String) throws(JSONShapeError) {
        let fields = try JSONFields(json, path: path)
        version = try fields.int("version")
        properties = try Self.names(fields, "properties")
        required = fields.optional("required") == nil ? [] : try Self.names(fields, "required")
    }

    private static func names(_ fields: JSONFields, _ key: String) throws(JSONShapeError) -> [String] {
        var names: [String] = []
        for (position, value) in try fields.array(key).enumerated() {
            names.append(try JSONFields.string(value, at: fields.place(key) + "[\(position)]"))
        }
        return names
    }

    var json: JSONValue {
        var members: [String: JSONValue] = [
            "version": .integer(version), "properties": .array(properties.map(JSONValue.string)),
        ]
        if !required.isEmpty { members["required"] = .array(required.map(JSONValue.string)) }
        return .object(members)
    }

    static func models(_ fields: JSONFields) throws(JSONShapeError) -> [String: ModelSchema] {
        var models: [String: ModelSchema] = [:]
        for (name, value) in try fields.object("models") {
            models[name] = try ModelSchema(json: value, at: fields.place("models") + "." + name)
        }
        return models
    }

    static func json(_ models: [String: ModelSchema]) -> JSONValue { .object(models.mapValues(\.json)) }
}

extension SyncStamp {
    init(json: JSONValue, at path: String) throws(JSONShapeError) {
        let text = try JSONFields.string(json, at: path)
        guard let stamp = SyncStamp(text) else {
            throw JSONShapeError(path: path, reason: "\"\(text.prefix(80))\" is not a sync stamp (time-device, in hex)")
        }
        self = stamp
    }
}

extension SyncCursor {
    init(json: JSONValue, at path: String) throws(JSONShapeError) {
        let fields = try JSONFields(json, path: path)
        sequence = try fields.integer("sequence")
        commit = try fields.string("commit")
    }

    var json: JSONValue { .object(["sequence": .integer(sequence), "commit": .string(commit)]) }
}

extension RecordState {
    public init(json: JSONValue, at path: String = "") throws(JSONShapeError) {
        let fields = try JSONFields(json, path: path)
        self.fields = try fields.optionalObject("fields") ?? [:]
        var stamps: [String: SyncStamp] = [:]
        for (name, value) in try fields.optionalObject("stamps") ?? [:] {
            stamps[name] = try SyncStamp(json: value, at: fields.place("stamps") + "." + name)
        }
        self.stamps = stamps
        deleted = try fields.optional("deleted").map { (value) throws(JSONShapeError) in
            try SyncStamp(json: value, at: fields.place("deleted"))
        }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        if !fields.isEmpty { members["fields"] = .object(fields) }
        if !stamps.isEmpty { members["stamps"] = .object(stamps.mapValues { .string($0.description) }) }
        if let deleted { members["deleted"] = .string(deleted.description) }
        return .object(members)
    }
}

extension RecordChange: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) { try self.init(json: json, at: "") }

    init(json: JSONValue, at path: String) throws(JSONShapeError) {
        let fields = try JSONFields(json, path: path)
        model = try fields.string("model")
        id = try fields.string("id")
        state = try RecordState(json: try fields.value("state"), at: fields.place("state"))
        sequence = try fields.optionalInteger("sequence")
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["model": .string(model), "id": .string(id), "state": state.json]
        if let sequence { members["sequence"] = .integer(sequence) }
        return .object(members)
    }

    static func changes(_ fields: JSONFields) throws(JSONShapeError) -> [RecordChange] {
        var changes: [RecordChange] = []
        for (position, value) in try fields.array("changes").enumerated() {
            changes.append(try RecordChange(json: value, at: fields.place("changes") + "[\(position)]"))
        }
        return changes
    }
}

extension SessionRequest: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) {
        device = try JSONFields(json).string("device")
    }

    public var json: JSONValue { .object(["device": .string(device)]) }
}

extension SessionResponse: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) {
        let fields = try JSONFields(json)
        server = try fields.string("server")
        user = try fields.string("user")
        time = try fields.integer("time")
    }

    public var json: JSONValue { .object(["server": .string(server), "user": .string(user), "time": .integer(time)]) }
}

extension PushRequest: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) {
        let fields = try JSONFields(json)
        device = try fields.string("device")
        user = try fields.optionalString("user")
        models = try ModelSchema.models(fields)
        changes = try RecordChange.changes(fields)
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "device": .string(device), "models": ModelSchema.json(models), "changes": .array(changes.map(\.json)),
        ]
        if let user { members["user"] = .string(user) }
        return .object(members)
    }
}

extension PushResponse: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) {
        let fields = try JSONFields(json)
        applied = try fields.int("applied")
        sequence = try fields.integer("sequence")
        commit = try fields.optional("commit").map { (value) throws(JSONShapeError) in
            try SyncCursor(json: value, at: "commit")
        }
        var refused: [RefusedChange] = []
        for (position, value) in (fields.optional("refused") == nil ? [] : try fields.array("refused")).enumerated() {
            let change = try JSONFields(value, path: "refused[\(position)]")
            refused.append(
                RefusedChange(
                    model: try change.string("model"), id: try change.string("id"),
                    failure: try SyncFailure(json: try change.value("failure"))))
        }
        self.refused = refused
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["applied": .integer(applied), "sequence": .integer(sequence)]
        if let commit { members["commit"] = commit.json }
        if !refused.isEmpty {
            members["refused"] = .array(
                refused.map { .object(["model": .string($0.model), "id": .string($0.id), "failure": $0.failure.json]) })
        }
        return .object(members)
    }
}

extension PullRequest: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) {
        let fields = try JSONFields(json)
        device = try fields.string("device")
        user = try fields.optionalString("user")
        server = try fields.optionalString("server")
        models = try ModelSchema.models(fields)
        cursor = try fields.optional("cursor").map { (value) throws(JSONShapeError) in
            try SyncCursor(json: value, at: "cursor")
        }
        pushed = try fields.optional("pushed").map { (value) throws(JSONShapeError) in
            try SyncCursor(json: value, at: "pushed")
        }
        limit = try fields.int("limit")
        wait = try fields.int("wait")
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "device": .string(device), "models": ModelSchema.json(models), "limit": .integer(limit),
            "wait": .integer(wait),
        ]
        if let user { members["user"] = .string(user) }
        if let server { members["server"] = .string(server) }
        if let cursor { members["cursor"] = cursor.json }
        if let pushed { members["pushed"] = pushed.json }
        return .object(members)
    }
}

extension PullResponse: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) {
        let fields = try JSONFields(json)
        changes = try RecordChange.changes(fields)
        cursor = try fields.optional("cursor").map { (value) throws(JSONShapeError) in
            try SyncCursor(json: value, at: "cursor")
        }
        more = try fields.bool("more")
        time = try fields.optionalInteger("time")
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["changes": .array(changes.map(\.json)), "more": .bool(more)]
        if let cursor { members["cursor"] = cursor.json }
        if let time { members["time"] = .integer(time) }
        return .object(members)
    }
}

extension SyncFailure: JSONMessage {
    public init(json: JSONValue) throws(JSONShapeError) {
        let fields = try JSONFields(json)
        let code = try fields.string("code")
        guard let known = Code(rawValue: code) else {
            throw JSONShapeError(path: "code", reason: "\"\(code.prefix(40))\" is not a failure code")
        }
        self.code = known
        reason = try fields.string("reason")
    }

    public var json: JSONValue { .object(["code": .string(code.rawValue), "reason": .string(reason)]) }
}
