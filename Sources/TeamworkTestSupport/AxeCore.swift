import Foundation
import LocalPostgres
import TeamworkModel

/// axe-core, the accessibility checker, as the PyPI package `axe-playwright-python` carries it
/// (`axe_playwright_python/axe.min.js`; scripts/ensure-dependencies installs the package): the
/// tests inject it into a page and run it there.
public enum AxeCore {
    /// Where the package keeps it (a Python process, waited for off the cooperative threads).
    public static func path() async throws -> String {
        let output = FileManager.default.temporaryDirectory.appending(path: "axe-\(UUID().uuidString)").path
        defer { unlink(output) }
        _ = try await ChildProcess.finish(
            [
                "/usr/bin/env", "python3", "-c",
                "import importlib.util, os; s = importlib.util.find_spec('axe_playwright_python'); "
                    + "print(os.path.join(os.path.dirname(s.origin), 'axe.min.js') if s else '')",
            ], standardOutput: output, standardError: "/dev/null")
        let data = FileManager.default.contents(atPath: output) ?? Data()
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !path.isEmpty, FileManager.default.fileExists(atPath: path) else {
            throw TeamworkError(
                .configuration,
                "no axe-core: pip install --no-deps axe-playwright-python (scripts/ensure-dependencies test does)")
        }
        return path
    }
}
