import Foundation
import LocalPostgres
import TeamworkModel

/// Debian's chromium, headless, for tests of the pages Teamwork writes: a real
/// browser runs the page's script. `TEAMWORK_CHROMIUM` names another binary.
public enum Chromium {
    public static func executable() throws -> String {
        var candidates = ["chromium", "chromium-browser", "google-chrome"]
        if let explicit = ProcessInfo.processInfo.environment["TEAMWORK_CHROMIUM"], !explicit.isEmpty {
            candidates.insert(explicit, at: 0)
        }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for candidate in candidates {
            if candidate.hasPrefix("/"), FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            for folder in path where FileManager.default.isExecutableFile(atPath: "\(folder)/\(candidate)") {
                return "\(folder)/\(candidate)"
            }
        }
        throw TeamworkError(.configuration, "no chromium found: apt-get install -y chromium (scripts/ensure-dependencies does)")
    }

    /// Flags for a throwaway headless run: its own profile, no sandbox (tests run as root), no GPU.
    static func flags(profile: String) -> [String] {
        [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--user-data-dir=\(profile)", "--virtual-time-budget=5000", "--window-size=1280,900",
        ]
    }

    /// The page's DOM after its scripts ran, and what the browser logged.
    public static func dumpDOM(of file: URL) async throws -> (dom: String, log: String) {
        try await run(["--dump-dom", "--enable-logging=stderr", "--v=0", file.absoluteString])
    }

    /// Writes a PNG of the page to `png`.
    public static func screenshot(of file: URL, to png: URL) async throws {
        _ = try await run(["--screenshot=\(png.path)", file.absoluteString])
        guard FileManager.default.fileExists(atPath: png.path) else {
            throw TeamworkError(.internal, "chromium wrote no screenshot to \(png.path)")
        }
    }

    private static func run(_ arguments: [String]) async throws -> (dom: String, log: String) {
        let scratch = FileManager.default.temporaryDirectory.appending(path: "chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appending(path: "out").path, err = scratch.appending(path: "err").path
        // A hung browser must fail the test, not hold it: every run has a minute.
        let status = try await ChildProcess.finish(
            ["/usr/bin/timeout", "60", try executable()] + flags(profile: scratch.appending(path: "profile").path) + arguments,
            environment: ProcessInfo.processInfo.environment, standardOutput: out, standardError: err)
        let dom = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        let log = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        guard status == 0 else { throw TeamworkError(.internal, "chromium exited \(status): \(log.suffix(500))") }
        return (dom, log)
    }
}
