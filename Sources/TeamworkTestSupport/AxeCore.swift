import Foundation
import TeamworkModel

/// axe-core, the accessibility checker, as the PyPI package `axe-playwright-python` carries it
/// (`axe_playwright_python/axe.min.js`; scripts/ensure-dependencies installs the package): the
/// tests inject it into a page and run it there.
public enum AxeCore {
    public static func path() throws -> String {
        let run = Process()
        run.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        run.arguments = [
            "python3", "-c",
            "import importlib.util, os; s = importlib.util.find_spec('axe_playwright_python'); "
                + "print(os.path.join(os.path.dirname(s.origin), 'axe.min.js') if s else '')",
        ]
        let out = Pipe()
        run.standardOutput = out
        run.standardError = FileHandle.nullDevice
        try run.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        run.waitUntilExit()
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !path.isEmpty, FileManager.default.fileExists(atPath: path) else {
            throw TeamworkError(
                .configuration,
                "no axe-core: pip install --no-deps axe-playwright-python (scripts/ensure-dependencies test does)")
        }
        return path
    }
}
