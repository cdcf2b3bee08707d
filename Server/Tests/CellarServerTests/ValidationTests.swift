import CellarServer
import CellarSyncProtocol
import Foundation
import Testing

/// The checks a request passes before the database: no server or cluster needed.
struct ValidationTests {
    let device = String(repeating: "a", count: 32)
    let now: UInt64 = 1_800_000_000_000
    let models = ["Dog": ModelSchema(version: 1, properties: ["name", "age"])]

    func stamp(_ milliseconds: UInt64) -> SyncStamp { SyncStamp(time: milliseconds << 16, device: device) }

    func code(_ changes: [RecordChange]) -> SyncFailure.Code? {
        do throws(SyncFailure) {
            try Validation.validate(PushRequest(device: device, models: models, changes: changes), now: now)
            return nil
        } catch {
            return error.code
        }
    }

    func change(_ id: String, _ fields: [String: JSONValue]) -> RecordChange {
        RecordChange(
            model: "Dog", id: id, state: RecordState(fields: fields, stamps: fields.mapValues { _ in stamp(now) }))
    }

    @Test func aWellFormedPushPasses() {
        let state = RecordState(fields: ["name": .string("Rex")], stamps: ["name": stamp(now), "age": stamp(now)])
        #expect(code([RecordChange(model: "Dog", id: "rex", state: state)]) == nil)
        #expect(code([RecordChange(model: "Dog", id: "rex", state: .tombstone(stamp(now)))]) == nil)
    }

    @Test func eachFlawHasItsCode() {
        let ahead = now + SyncProtocol.maxClockLeadMilliseconds + 1
        var cases: [(RecordChange, SyncFailure.Code)] = [
            (
                RecordChange(
                    model: "Cat", id: "x",
                    state: RecordState(fields: ["name": .string("Tom")], stamps: ["name": stamp(now)])),
                .unknownModel
            ),
            (
                RecordChange(
                    model: "Dog", id: "x",
                    state: RecordState(fields: ["colour": .string("red")], stamps: ["colour": stamp(now)])
                ), .unknownModel
            ),
            (RecordChange(model: "Dog", id: "x", state: RecordState(stamps: ["colour": stamp(now)])), .unknownModel),
            (RecordChange(model: "Dog", id: "x", state: RecordState(fields: ["name": .string("Rex")])), .badRequest),
            (
                RecordChange(
                    model: "Dog", id: "",
                    state: RecordState(fields: ["name": .string("Rex")], stamps: ["name": stamp(now)])),
                .badRequest
            ),
            (
                RecordChange(
                    model: "Dog", id: "x",
                    state: RecordState(fields: ["name": .string("Rex")], stamps: ["name": stamp(ahead)])),
                .invalidStamp
            ),
            (RecordChange(model: "Dog", id: "x", state: .tombstone(stamp(ahead))), .invalidStamp),
            (
                RecordChange(
                    model: "Dog", id: "x",
                    state: RecordState(
                        fields: ["name": .string("Rex")], stamps: ["name": stamp(now)], deleted: stamp(now))),
                .badRequest
            ),
        ]
        cases.append((change("x", ["name": .string("a\u{0}b")]), .badRequest))
        cases.append((change("x", ["name": .array([.object(["\u{0}": .null])])]), .badRequest))
        cases.append((change(String(repeating: "x", count: 1_001), ["name": .null]), .badRequest))
        for (change, expected) in cases {
            #expect(code([change]) == expected, "\(change)")
        }
        let many = (0...SyncProtocol.maxChanges).map {
            RecordChange(model: "Dog", id: "\($0)", state: .tombstone(stamp(now)))
        }
        #expect(code(many) == .tooLarge)
    }

    @Test func aPullIsClamped() throws {
        let pull = try Validation.validated(
            PullRequest(device: device, models: models, cursor: nil, limit: 0, wait: 999))
        #expect(pull.limit == 1)
        #expect(pull.wait == SyncProtocol.maxWaitSeconds)
        #expect(throws: SyncFailure.self) {
            try Validation.validated(PullRequest(device: "x", models: models, cursor: nil, limit: 10, wait: 0))
        }
    }

    @Test func aBodyThatIsNoRequestSaysWhere() {
        do throws(SyncFailure) {
            _ = try Validation.decode(
                PushRequest.self, from: Array(#"{"device": "x", "models": {}, "changes": [{}]}"#.utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.code == .badRequest)
            #expect(error.reason.contains("changes[0]"), "\(error.reason)")
        }
    }
}
