import Foundation
import Testing

/// Models whose decoders are written as app code is (`Sources/cellar-test-helper/AppDecoders.swift`): each opens
/// empty, stores, reopens and reads back equal, and the schema changes that need a migration are still found at
/// opening, by decoding stored records. Each story runs in its own process, so that a trap is a failed test.
@Suite("App decoders: opening never hands a model's init(from:) a value it did not write")
struct AppDecoderTests {
    /// Runs a story of `cellar-test-helper app-decoders` in `folder` and returns what it printed.
    private func story(_ name: String, in folder: TemporaryFolder = TemporaryFolder()) throws -> String {
        let helper = Process()
        helper.executableURL = try builtExecutable()
        helper.arguments = ["app-decoders", folder.url.path, name]
        let output = Pipe()
        helper.standardOutput = output
        helper.standardError = output
        try helper.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        helper.waitUntilExit()
        let text = String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let ending = helper.terminationReason == .uncaughtSignal ? "signal" : "exit"
        #expect(
            helper.terminationReason == .exit && helper.terminationStatus == 0,
            "\(name) ended by \(ending) \(helper.terminationStatus): \(text)")
        return text
    }

    @Test(arguments: [
        "forced-raw-value", "forced-url-uuid", "precondition", "validating", "conditional", "nested-validating",
    ])
    func aModelWhoseDecoderTrapsOnValuesItDidNotWriteOpensStoresAndReadsBack(_ name: String) throws {
        #expect(try story(name) == "ok")
    }

    /// Where these decoders meet links and a cascade, full-text search, a migration, and the `cellar` tool, which
    /// reads the store without the types.
    @Test func theyMeetLinksSearchMigrationsAndTheTool() throws {
        let folder = TemporaryFolder()
        #expect(try story("crossing", in: folder) == "ok")
        let verified = try CellarToolTests.cellar("verify", folder.url.path)
        #expect(verified.status == 0, "\(verified.output)")
        let dumped = try CellarToolTests.cellar("dump", folder.url.path, "Shelf")
        #expect(dumped.status == 0 && dumped.output.contains("HORROR FILMS"), "\(dumped.output)")
        let info = try CellarToolTests.cellar("info", folder.url.path)
        #expect(info.status == 0 && info.output.contains("medium"), "\(info.output)")
    }

    @Test func aRequiredPropertyAddedIsAMigrationFoundByDecodingTheRecords() throws {
        let said = try story("migration-added")
        #expect(said.contains("Migration is required"), "\(said)")
        #expect(said.contains("ForcedRawValue.year"), "\(said)")
    }

    @Test func aPropertyWhoseTypeChangedIsAMigration() throws {
        let said = try story("migration-retyped")
        #expect(said.contains("Migration is required"), "\(said)")
        #expect(said.contains("ForcedRawValue.title"), "\(said)")
    }

    @Test func aMigrationStepThatFillsTheNewPropertyOpens() throws {
        #expect(try story("migration-new-version") == "migrated: [1979]")
    }
}
