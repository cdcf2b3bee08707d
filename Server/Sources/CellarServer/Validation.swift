import CellarSyncProtocol
import Foundation

/// The checks a request passes before the server touches its database: pure functions of the request and the
/// server's clock, so that a refused request changes nothing.
public enum Validation {
    /// The milliseconds since 1970 of the server's clock.
    public static func nowMilliseconds() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    /// Reads a request body, or says in words what was wrong with it.
    public static func decode<Message: JSONMessage>(
        _ type: Message.Type, from body: some Collection<UInt8>
    ) throws(SyncFailure) -> Message {
        guard body.count <= SyncProtocol.maxBodyBytes else {
            throw SyncFailure(
                .tooLarge, "the body has \(body.count) bytes; the server reads at most \(SyncProtocol.maxBodyBytes)")
        }
        do throws(JSONShapeError) {
            return try Message(jsonBytes: body)
        } catch {
            throw SyncFailure(.badRequest, "the body is not a \(type): \(error)")
        }
    }

    /// Checks a push, and returns it with every id in NFC: the server compares ids as a device does, so two
    /// spellings of one id in different normal forms name one record.
    public static func validated(_ push: PushRequest, now: UInt64 = nowMilliseconds()) throws(SyncFailure)
        -> PushRequest
    {
        try validate(push, now: now)
        var push = push
        for position in push.changes.indices {
            push.changes[position].id = push.changes[position].id.precomposedStringWithCanonicalMapping
        }
        return push
    }

    /// Checks a push: its device, its models, and every change against its model; no stamp from the future.
    public static func validate(_ push: PushRequest, now: UInt64 = nowMilliseconds()) throws(SyncFailure) {
        guard push.changes.count <= SyncProtocol.maxChanges else {
            throw SyncFailure(
                .tooLarge,
                "the push carries \(push.changes.count) changes; the server takes at most \(SyncProtocol.maxChanges) "
                    + "in one push: send them in batches")
        }
        try validateDevice(push.device)
        try validateModels(push.models)
        for (position, change) in push.changes.enumerated() {
            let place = "change \(position) (\(change.model) \"\(change.id.prefix(80))\")"
            guard let schema = push.models[change.model] else {
                throw SyncFailure(
                    .unknownModel,
                    "\(place) is of model \"\(change.model)\", which the push does not declare in `models`")
            }
            if let reason = change.unstorableReason { throw SyncFailure(.badRequest, "\(place): \(reason)") }
            let state = change.state
            if let deleted = state.deleted {
                guard state.fields.isEmpty, state.stamps.isEmpty else {
                    throw SyncFailure(
                        .badRequest, "\(place) is a tombstone (`deleted` is set) but has fields or stamps: send none")
                }
                try validateStamp(deleted, place: "\(place)'s delete", now: now)
                continue
            }
            let declared = Set(schema.properties)
            for name in state.fields.keys.sorted() {
                guard declared.contains(name) else {
                    throw SyncFailure(
                        .unknownModel,
                        "\(place) has the property \"\(name)\", which model \(change.model) (version \(schema.version)) "
                            + "does not declare; it declares \(schema.properties.sorted())")
                }
                guard state.stamps[name] != nil else {
                    throw SyncFailure(.badRequest, "\(place) sets \"\(name)\" without a stamp for it")
                }
            }
            for (name, stamp) in state.stamps.sorted(by: { $0.key < $1.key }) {
                guard declared.contains(name) else {
                    throw SyncFailure(
                        .unknownModel,
                        "\(place) has a stamp for the property \"\(name)\", which model \(change.model) "
                            + "(version \(schema.version)) does not declare; it declares \(schema.properties.sorted())")
                }
                try validateStamp(stamp, place: "\(place)'s \"\(name)\"", now: now)
            }
        }
    }

    /// Checks a pull, and returns it with `limit` and `wait` clamped to what the server allows.
    public static func validated(_ pull: PullRequest) throws(SyncFailure) -> PullRequest {
        try validateDevice(pull.device)
        try validateModels(pull.models)
        if let cursor = pull.cursor, cursor.sequence < 0 {
            throw SyncFailure(
                .badRequest, "the cursor's sequence is \(cursor.sequence); a server sequence is 0 or more")
        }
        var pull = pull
        pull.limit = min(max(pull.limit, 1), SyncProtocol.maxChanges)
        pull.wait = min(max(pull.wait, 0), SyncProtocol.maxWaitSeconds)
        return pull
    }

    static func validateName(_ name: String, of what: String) throws(SyncFailure) {
        guard !name.isEmpty, name.utf8.count <= SyncProtocol.maxNameBytes, !name.utf8.contains(0) else {
            throw SyncFailure(
                .badRequest,
                "\(what) \"\(name.prefix(80))\" is empty, longer than \(SyncProtocol.maxNameBytes) UTF-8 bytes, or holds U+0000"
            )
        }
    }

    public static func validateDevice(_ device: String) throws(SyncFailure) {
        guard SyncStamp.isDeviceID(device) else {
            throw SyncFailure(
                .badRequest, "the device id \"\(device.prefix(80))\" is not one: it must be 32 lowercase hex digits")
        }
    }

    static func validateModels(_ models: [String: ModelSchema]) throws(SyncFailure) {
        for (name, schema) in models.sorted(by: { $0.key < $1.key }) {
            try validateName(name, of: "the model name")
            guard schema.version >= 0 else {
                throw SyncFailure(
                    .badRequest, "model \(name) declares version \(schema.version); versions are 0 or more")
            }
            for property in schema.properties {
                try validateName(property, of: "model \(name)'s property")
            }
        }
    }

    static func validateStamp(_ stamp: SyncStamp, place: String, now: UInt64) throws(SyncFailure) {
        let limit = now &+ SyncProtocol.maxClockLeadMilliseconds
        guard stamp.milliseconds <= limit else {
            let lead = stamp.milliseconds - now
            throw SyncFailure(
                .invalidStamp,
                "\(place) is stamped \(describe(milliseconds: lead)) ahead of the server's clock; at most "
                    + "\(describe(milliseconds: SyncProtocol.maxClockLeadMilliseconds)) is allowed: "
                    + "set this device's clock right")
        }
    }

    static func describe(milliseconds: UInt64) -> String {
        let seconds = (milliseconds + 999) / 1000
        if seconds >= 3600 * 48 { return "\(seconds / 86_400) days" }
        if seconds >= 3600 { return "\(seconds / 3600) h \(seconds % 3600 / 60) min" }
        if seconds >= 60 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds) s"
    }
}

extension SyncFailure.Code {
    /// The HTTP status that carries the failure.
    public var httpStatus: Int {
        switch self {
        case .unauthorized: 401
        case .wrongUser: 403
        case .badRequest: 400
        case .unknownModel: 422
        case .invalidRecord: 422
        case .schemaOutdated: 409
        case .tooLarge: 413
        case .invalidStamp: 422
        case .resetRequired: 410
        case .unavailable: 503
        }
    }
}
