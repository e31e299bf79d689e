import Foundation
import TeamworkModel
import WorkerClient

#if canImport(Glibc)
    import Glibc
#endif

/// Where the worker's device keeps its sign-in and data: TEAMWORK_WORKER_HOME,
/// default `~/.local/share/teamwork-worker` (`config.json` readable by the owner
/// only, `local.sqlite`).
struct WorkerHome {
    struct Config: Codable {
        var server: String
        var token: String
    }

    let url: URL

    init() throws {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["TEAMWORK_WORKER_HOME"], !explicit.isEmpty {
            url = URL(fileURLWithPath: explicit)
        } else if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            url = URL(fileURLWithPath: xdg).appending(path: "teamwork-worker")
        } else {
            url = FileManager.default.homeDirectoryForCurrentUser.appending(path: ".local/share/teamwork-worker")
        }
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Whoever made the folder: the device's tasks, positions and token are its owner's only.
        guard chmod(url.path, 0o700) == 0 else {
            throw TeamworkError(.configuration, "cannot make \(url.path) private to you (mode 0700): \(String(cString: strerror(errno)))")
        }
    }

    var configURL: URL { url.appending(path: "config.json") }

    /// What to do before anything else works.
    static let signInHint = "not signed in: run `teamwork-worker login --server URL` first (it asks for the token your manager gave you)"

    var localURL: URL { url.appending(path: "local.sqlite") }

    func config() throws -> Config {
        guard let data = FileManager.default.contents(atPath: configURL.path) else {
            throw TeamworkError(.usage, Self.signInHint)
        }
        do {
            return try JSONDecoder().decode(Config.self, from: data)
        } catch {
            throw TeamworkError(.configuration, "\(configURL.path) is damaged: run `teamwork-worker login` again")
        }
    }

    /// Written with owner-only permissions: the token is a secret.
    /// The file is created with mode 0600, never readable by others even for an instant.
    func save(_ config: Config) throws {
        let data = Array(try JSONEncoder().encode(config))
        let temporary = configURL.path + ".new"
        unlink(temporary)
        let fd = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TeamworkError(.configuration, "cannot write \(configURL.path)") }
        let written = write(fd, data, data.count)
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, configURL.path) == 0 else {
            unlink(temporary)
            throw TeamworkError(.configuration, "cannot write \(configURL.path)")
        }
    }

    /// The device's database. Before the first sign-in there is none, and
    /// none is made: every command but `login` says to sign in first.
    func store(creating: Bool = false) throws -> LocalStore {
        if !creating && !FileManager.default.fileExists(atPath: localURL.path) {
            _ = try config()
            throw TeamworkError(.usage, "this device holds nothing yet: run `teamwork-worker sync` while online")
        }
        return try LocalStore(path: localURL.path)
    }

    /// The signed-in person, as the server said at the last sync or login.
    func personID(_ store: LocalStore) throws -> Int64 {
        guard let text = try store.setting("person_id"), let id = Int64(text) else {
            throw TeamworkError(.usage, "run `teamwork-worker sync` once while online")
        }
        return id
    }

    func client() throws -> SyncClient {
        let config = try config()
        guard let server = URL(string: config.server.hasSuffix("/") ? config.server : config.server + "/") else {
            throw TeamworkError(.configuration, "the saved server address is not a URL: run `teamwork-worker login` again")
        }
        return SyncClient(server: server, token: config.token)
    }
}
