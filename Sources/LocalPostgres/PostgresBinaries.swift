import Foundation

/// The PostgreSQL server programs a local cluster needs.
struct PostgresBinaries: Sendable {
    var initdb: String
    var pgCtl: String
    /// Their folder, for the others (`pg_basebackup`).
    var directory: String { (pgCtl as NSString).deletingLastPathComponent }

    /// Uses `explicit`, else `TEAMWORK_PG_BIN`, else the newest
    /// `/usr/lib/postgresql/<version>/bin`, else `initdb` on the `PATH`.
    static func locate(_ explicit: URL?) throws -> PostgresBinaries {
        let fm = FileManager.default
        var candidates: [String] = []
        if let explicit { candidates.append(explicit.path) }
        if let fromEnvironment = ProcessInfo.processInfo.environment["TEAMWORK_PG_BIN"] { candidates.append(fromEnvironment) }
        if let versions = try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            let sorted = versions.compactMap { Int($0) }.sorted(by: >)
            candidates += sorted.map { "/usr/lib/postgresql/\($0)/bin" }
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        candidates += path.split(separator: ":").map(String.init)
        for directory in candidates {
            let initdb = directory + "/initdb"
            let pgCtl = directory + "/pg_ctl"
            if fm.isExecutableFile(atPath: initdb), fm.isExecutableFile(atPath: pgCtl) {
                return PostgresBinaries(initdb: initdb, pgCtl: pgCtl)
            }
        }
        throw LocalClusterError(
            "PostgreSQL server programs not found: install them (Debian: apt-get install postgresql) or set TEAMWORK_DATABASE_URL"
        )
    }
}
