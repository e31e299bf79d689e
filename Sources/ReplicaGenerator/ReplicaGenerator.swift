import CentralStore
import Foundation
import Logging
import TeamDatabase
import TeamworkModel

/// Turns the master task list into one SQLite replica per team, one per person
/// with personal tasks, and the common database, and keeps them in step.
///
/// The change feed's position is the truth: each replica records the position
/// it reflects, and `generator-state.json` records the position through which
/// every replica is current. Applying a change twice is harmless (every write is
/// an upsert of the master's current row), so a crash at any point is recovered
/// by the next pass.
public struct ReplicaGenerator: Sendable {
    /// Where the master and the replicas are, and how work is paced.
    public struct Configuration: Sendable {
        public var databaseURL: DatabaseURL
        /// The folder of replica files.
        public var directory: URL
        /// Feed entries read per catch-up batch.
        public var pageSize: Int
        /// Continuous mode: catch up at least this often, even with no notification.
        public var sweepInterval: Duration
        /// Tasks written per SQLite call during a full rebuild.
        public var writeBatch: Int
        /// Full rebuild: files made durable and swapped in together, one folder fsync for the lot.
        public var publishBatch: Int
        /// Full rebuild: files built at once, each on its own thread, while rows are read.
        public var buildThreads: Int
        /// A new file is built in memory up to this many bytes, then in its temporary file.
        public var buildMemoryLimit: Int
        /// Awaited before each continuous catch-up pass: a test freezes the loop
        /// through it to see a stall reported (`TEAMWORK_TEST_FREEZE_GENERATOR`).
        public var beforePass: @Sendable () async -> Void = {}
        /// Awaited once a full rebuild has begun streaming the master's tasks (after its first
        /// replica file is begun): a test holds the rebuild there, with its row stream waiting for
        /// its reader, to stop PostgreSQL under it (`TEAMWORK_TEST_HOLD_REBUILD`).
        public var duringRebuild: @Sendable () async -> Void = {}

        public init(
            databaseURL: DatabaseURL, directory: URL, pageSize: Int = 2_000,
            sweepInterval: Duration = .seconds(5), writeBatch: Int = 512, publishBatch: Int = 256,
            buildThreads: Int = ProcessInfo.processInfo.activeProcessorCount,
            buildMemoryLimit: Int = ReplicaBuild.defaultMemoryLimit
        ) {
            self.databaseURL = databaseURL
            self.directory = directory
            self.pageSize = pageSize
            self.sweepInterval = sweepInterval
            self.writeBatch = writeBatch
            self.publishBatch = publishBatch
            self.buildThreads = buildThreads
            self.buildMemoryLimit = buildMemoryLimit
        }
    }

    public let configuration: Configuration
    public let logger: Logger
    let replicas: ReplicaDirectory
    /// Connections kept between catch-up passes: a change to a team reopens
    /// nothing and prepares no statement again (64 idle at most).
    let connections: ReplicaConnections
    /// The folder's identity (see `ReplicaDirectory.identity()`): one generator at a time per identity.
    public let folderIdentity: String

    public init(_ configuration: Configuration, logger: Logger = Logger(label: "teamwork.generator")) throws {
        self.configuration = configuration
        self.logger = logger
        replicas = try ReplicaDirectory(configuration.directory)
        connections = ReplicaConnections(directory: replicas)
        folderIdentity = try replicas.identity()
    }

    /// The position through which every replica is current, or `nil` before the first full rebuild.
    public func checkpoint() throws -> Int64? {
        try Checkpoint.load(from: configuration.directory)
    }
}

/// `generator-state.json`: the feed position through which every replica is current.
enum Checkpoint {
    struct State: Codable {
        var feedPosition: Int64
        /// The replica schema the files were written with; a checkpoint of an
        /// older one (or none, before schema 3) is no checkpoint: the next pass
        /// rebuilds every file, so new columns hold the master's values.
        var replicaSchema: Int?
    }

    static func url(_ directory: URL) -> URL { directory.appending(path: "generator-state.json") }

    static func load(from directory: URL) throws -> Int64? {
        guard let data = FileManager.default.contents(atPath: url(directory).path) else { return nil }
        do {
            let state = try JSONDecoder().decode(State.self, from: data)
            return state.replicaSchema == ReplicaSchema.version ? state.feedPosition : nil
        } catch {
            throw TeamworkError(.configuration, "\(url(directory).path) is damaged; run a full rebuild")
        }
    }

    /// Written to a temporary file and renamed, so it is never half-written.
    static func save(_ position: Int64, to directory: URL) throws {
        let data = try JSONEncoder().encode(State(feedPosition: position, replicaSchema: ReplicaSchema.version))
        try data.write(to: url(directory), options: .atomic)
    }
}
