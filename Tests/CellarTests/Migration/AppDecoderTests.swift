import Foundation
import Testing

/// Models whose decoders are written as app code is (`Sources/cellar-test-helper/AppDecoders.swift`): each opens
/// empty, stores, reopens and reads back equal, and the schema changes that need a migration are still found at
/// opening, by decoding stored records. Each story runs in its own process, so that a trap is a failed test.
@Suite("App decoders: opening never hands a model's init(from:) a value it did not write")
struct AppDecoderTests {
    /// Runs a story of `cellar-test-helper app-decoders` in a new folder and returns what it printed.
    private func story(_ name: String) throws -> String {
        let folder = TemporaryFolder()
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
