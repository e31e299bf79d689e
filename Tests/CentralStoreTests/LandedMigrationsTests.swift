import Foundation
import Testing

/// `scripts/check-migrations` (run first by `scripts/test`, so by CI) holds every landed migration to the text it
/// landed with. Run here on a copy of `sql/` outside git, where it checks the texts against `sql/landed.sha256`.
@Suite struct LandedMigrationsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A copy of the script and `sql/` in a folder of its own; returns the folder.
    func copy() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appending(path: "landed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appending(path: "scripts"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.root.appending(path: "sql"), to: folder.appending(path: "sql"))
        try FileManager.default.copyItem(
            at: Self.root.appending(path: "scripts/check-migrations"), to: folder.appending(path: "scripts/check-migrations"))
        return folder
    }

    func check(_ folder: URL) throws -> (status: Int32, said: String) {
        let process = Process()
        process.executableURL = folder.appending(path: "scripts/check-migrations")
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, said)
    }

    @Test func theLandedMigrationsAreAsRecorded() throws {
        let folder = try copy()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try check(folder)
        #expect(result.status == 0, "\(result.said)")
    }

    @Test func anEditedLandedMigrationFailsTheCheckNamingIt() throws {
        let folder = try copy()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appending(path: "sql/0042_time_on_the_job.sql")
        let text = try String(contentsOf: file, encoding: .utf8)
        try (text + "-- an edit after landing\n").write(to: file, atomically: true, encoding: .utf8)
        let result = try check(folder)
        #expect(result.status == 1)
        #expect(result.said.contains("sql/0042_time_on_the_job.sql: FAILED"), "\(result.said)")
        #expect(result.said.contains("add a new migration instead"), "\(result.said)")
    }

    @Test func aMigrationNotRecordedFailsTheCheckUntilRecorded() throws {
        let folder = try copy()
        defer { try? FileManager.default.removeItem(at: folder) }
        try "SELECT 1;\n".write(to: folder.appending(path: "sql/9999_next.sql"), atomically: true, encoding: .utf8)
        let unrecorded = try check(folder)
        #expect(unrecorded.status == 1)
        #expect(unrecorded.said.contains("sql/9999_next.sql is not recorded"), "\(unrecorded.said)")

        let process = Process()
        process.executableURL = folder.appending(path: "scripts/check-migrations")
        process.arguments = ["--record"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(try check(folder).status == 0)
    }
}
