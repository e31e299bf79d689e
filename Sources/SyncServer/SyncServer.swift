import BlobStore
import CentralStore
import Foundation
import Hummingbird
import Logging
import NIOCore
import ObjectStore
import PhoneApp
import ServerSupport
import ServiceLifecycle
import TeamDatabase
import TeamworkModel
import UnixSignals
import WebPages

/// The sync endpoint: signed-in workers list the replicas they may read and
/// pull pages of changes from them. Everything else is refused and logged.
///
///     GET /health                                   no sign-in; 503 when a part of the service is down
///     GET /metrics                                  no sign-in; Prometheus text (teamwork-service run)
///     GET /v1/replicas                              the caller's replicas
///     GET /v1/replicas/{name}/changes?epoch=&since=&limit=&wait=   wait: live mode, see docs/protocol.md
///     POST /v1/replicas/{name}/changes              {"changes": [...]}
///     GET /v1/positions                             the last-known positions the caller may see
///     HEAD, PATCH /v1/blobs/{sha256}                resumable uploads of proof-of-work files (``BlobUploads``)
///
/// Requests carry `Authorization: Bearer tw_...` (a token from
/// `teamwork-manager person token issue`). No or a bad token: 401. A replica
/// of a team the caller is not a member of, or another person's: 403.
public enum SyncServer {
    /// Where the master and the replicas are, and where to listen.
    public struct Configuration: Sendable {
        public var databaseURL: DatabaseURL
        public var replicasDirectory: URL
        public var host: String
        public var port: Int
        /// Rows per page when the client does not ask for fewer.
        public var defaultPageSize: Int
        /// The most rows a client may ask for in one page.
        public var maximumPageSize: Int
        /// How long a push waits for its replica's lock before answering 503 (the device retries).
        public var pushLockTimeout: Duration = .seconds(5)
        /// A connection that sends and receives nothing for this long is closed
        /// (a slow or vanished client does not hold it for ever).
        public var idleTimeout: Duration = .seconds(30)
        /// The longest a pull may wait for its replica to change (`wait=N`); kept
        /// below ``idleTimeout``, which would otherwise close a waiting connection.
        public var maximumWait: Duration = .seconds(25)
        /// How often the files that live-mode pulls wait on are looked at, for
        /// writes the folder's inotify watch does not report (other systems than Linux).
        public var waitLookInterval: Duration = .milliseconds(100)
        /// Live-mode waits one person may hold at once; a newer one ends their oldest
        /// (a device that gave up on a wait may leave it open on the server).
        public var maximumWaitsPerPerson = 12
        /// Live streams (`stream=N`) one person may hold open at once; more get 429.
        public var maximumStreamsPerPerson = 24
        /// Requests one person may have in flight at once; more get 429.
        public var maximumRequestsPerPerson = 8
        /// Serve HTTPS with these files; plain HTTP when `nil` (loopback, or behind a TLS-terminating proxy).
        public var tls: TLSFiles?
        /// Where uploaded proof-of-work files are kept; `blobs` in the replicas folder when `nil`.
        public var blobsDirectory: URL?
        /// The largest file a worker may upload, in bytes.
        public var maximumBlobBytes: Int64 = 25 * 1024 * 1024
        /// Bytes kept free on the blob folder's disk: an upload that would eat into them makes room by
        /// removing files no attachment has claimed, or is refused (507).
        public var blobReserveBytes: Int64 = 256 * 1024 * 1024
        /// Where uploaded files are kept when in an S3-compatible bucket, shared by every host; ``blobsDirectory`` is not used then.
        public var blobBucket: S3Location?
        /// ``blobsDirectory``, or its default.
        public var blobsFolder: URL { blobsDirectory ?? FileBlobStore.defaultRoot(replicas: replicasDirectory) }
        /// The store uploaded files are kept in: the bucket, else the folder.
        public func openBlobStore() throws -> any BlobStore {
            if let blobBucket { return S3BlobStore(client: S3Client(location: blobBucket)) }
            return try FileBlobStore(root: blobsFolder)
        }
        /// Called after worker changes are stored in a replica (by name, `team-12`):
        /// wakes a listener running in the same process.
        public var pushed: (@Sendable (String) -> Void)?
        /// Called after each look of the live-mode watch at the files devices wait on: its pass.
        public var watchLooked: (@Sendable () -> Void)?
        /// The Prometheus text served on `GET /metrics`; no route when `nil`.
        public var metrics: (@Sendable () -> String)?
        /// Connections the kernel queues for the server before it accepts them (`listen(2)`'s
        /// backlog, capped by `net.core.somaxconn`): a fleet reconnecting at once needs thousands.
        public var backlog = 4_096
        /// The dispatcher's board at `/board` (``BoardConfiguration``); no board when `nil`.
        public var board: BoardConfiguration?
        /// Proxies whose `X-Forwarded-For` is believed (`--trusted-proxy`, as ``AddressLimiter/key(_:)``
        /// writes them): from them, every per-address budget counts the client they name; from anyone
        /// else, the header is ignored.
        public var trustedProxies: Set<String> = []
        /// The company's name on the customers' pages (`--company`, as in their messages).
        public var company = "Teamwork"
        /// A phone's push subscription may name `http` on this machine's loopback (a push service of
        /// the tests' own; TEAMWORK_PUSH_ALLOW_PRIVATE=1): never for a real one.
        public var pushAllowsLoopback = false
        /// What `GET /health` says: 200 with the details when healthy, else 503.
        public var health: (@Sendable () async -> (healthy: Bool, details: [String: String]))?

        public init(
            databaseURL: DatabaseURL, replicasDirectory: URL, host: String = "127.0.0.1", port: Int = 8080,
            defaultPageSize: Int = 1_000, maximumPageSize: Int = 10_000
        ) {
            self.databaseURL = databaseURL
            self.replicasDirectory = replicasDirectory
            self.host = host
            self.port = port
            self.defaultPageSize = defaultPageSize
            self.maximumPageSize = maximumPageSize
        }
    }

    /// The HTTP application; `services` run alongside it and share its graceful shutdown.
    /// `onServerRunning` is called once the port is bound.
    public static func makeApplication(
        _ configuration: Configuration, services: [any Service] = [],
        logger: Logger = Logger(label: "teamwork.sync"),
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        let store = SharedStore(endpoint: configuration.databaseURL, logger: logger)
        let stalled = StalledWrites()
        let looked = configuration.watchLooked
        let watch = ReplicaWatch(
            directory: configuration.replicasDirectory, interval: configuration.waitLookInterval,
            maximumPerOwner: configuration.maximumWaitsPerPerson
        ) {
            looked?()
            stalled.sweep()
        }
        // A change of someone's access ends their open waits, to be checked again: a removed member's
        // wait is refused at once, not when its time is up.
        let cache = AccessCache(url: configuration.databaseURL, logger: logger, accessChanged: { watch.accessChanged(of: $0) })
        var parts: [any Service] = [store, cache, watch]
        var board: BoardRoutes<SyncRequestContext>?
        if let boardConfiguration = configuration.board {
            // The board reads and acts through its own role (a manager's), on connections of its own.
            let routes = try BoardRoutes<SyncRequestContext>(
                configuration: boardConfiguration, blobs: try configuration.openBlobStore(), secure: configuration.tls != nil,
                logger: logger)
            board = routes
            parts += routes.services
        }
        let connections = Connections(quiesce: watch.shutDown)
        return Application(
            router: try makeRouter(
                configuration, store: store, cache: cache, watch: watch, connections: connections, stalled: stalled,
                board: board),
            server: try serverBuilder(configuration, connections: connections),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "teamwork-sync",
                backlog: configuration.backlog),
            services: parts + services,
            onServerRunning: { channel in
                // Hummingbird hands accepted connections to its accept loop, a task among the
                // connections' own, ten at most before it takes them: while thousands of devices
                // reconnect, each handful waited its turn on two busy threads and the backlog
                // overflowed (1,552 connections dropped after a restart of 10,000). Each readiness of
                // the listening socket now accepts up to 256 at once.
                do {
                    try await channel.setOption(ChannelOptions.maxMessagesPerRead, value: 256)
                } catch {
                    logger.warning(
                        "cannot accept connections in batches; a fleet reconnecting at once may overflow the backlog",
                        metadata: ["error": "\(error)"])
                }
                await onServerRunning(channel)
            },
            logger: logger
        )
    }

    /// Serves until SIGTERM or SIGINT (each of `services` finishing what it has in
    /// hand), or until a part fails. A port that cannot be bound ends it at once
    /// with a ``TeamworkError`` naming the address: the other services are
    /// cancelled, not left running without a server.
    public static func run(_ configuration: Configuration, services: [any Service] = [], logger: Logger) async throws {
        let bound = Locked(false)
        let listening = Locked<(any Channel)?>(nil)
        let address = "\(configuration.host):\(configuration.port)"
        let scheme = configuration.tls == nil ? "http" : "https"
        let files = FileLimit.raise()
        let app = try makeApplication(configuration, services: services, logger: logger) { channel in
            listening.mutate { $0 = channel }
            bound.mutate { $0 = true }
            logger.info(
                "serving",
                metadata: [
                    "url": "\(scheme)://\(address)", "replicas": "\(configuration.replicasDirectory.path)",
                    "open_files_limit": "\(files.now)\(files.now > files.before ? " (raised from \(files.before))" : "")",
                    "wait_capacity": "\(FileLimit.waitCapacity)", "backlog": "\(configuration.backlog)",
                    "board": "\(configuration.board == nil ? "off" : "\(scheme)://\(address)/board")",
                ])
        }
        // SIGTERM or SIGINT first stops accepting, lets the accept loop take what was accepted, then
        // shuts down gracefully: a connection accepted as the listening channel closed was dropped
        // unserved, and NIO traps on that (apple/swift-nio#2813: "Deinited NIOAsyncWriter without
        // calling finish()", met when devices reconnect as the service stops).
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: app)], gracefulShutdownSignals: [], logger: logger))
        let signals = Task {
            for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
                if let channel = listening.value { try? await channel.setOption(ChannelOptions.autoRead, value: false).get() }
                try? await Task.sleep(for: .milliseconds(250))
                await group.triggerGracefulShutdown()
            }
        }
        defer { signals.cancel() }
        do {
            try await group.run()
        } catch let error as IOError where !bound.value {
            throw TeamworkError(.configuration, "cannot listen on \(address): \(String(cString: strerror(error.errnoCode)))")
        }
    }

    static func makeRouter(
        _ configuration: Configuration, store: SharedStore<any EndpointStore>, cache: AccessCache,
        watch: ReplicaWatch, connections: Connections, stalled: StalledWrites,
        board: BoardRoutes<SyncRequestContext>? = nil
    ) throws -> Router<SyncRequestContext> {
        let router = Router(context: SyncRequestContext.self)
        if !configuration.trustedProxies.isEmpty { router.add(middleware: ForwardedClient(trusted: configuration.trustedProxies)) }
        router.add(middleware: StreamSetup())
        let allowed = AllowedMethods<SyncRequestContext>()
        router.add(middleware: allowed)
        router.get("/health") { _, _ -> EditedResponse<Health> in
            // How many live-mode waits the open-files limit leaves room for, and how many are open.
            let capacity = ["wait_capacity": String(FileLimit.waitCapacity), "open_waits": String(watch.waiting)]
            guard let health = configuration.health else {
                return EditedResponse(response: Health(fields: ["status": "ok"].merging(capacity) { $1 }))
            }
            let (healthy, details) = await health()
            return EditedResponse(
                status: healthy ? .ok : .serviceUnavailable,
                response: Health(fields: ["status": healthy ? "ok" : "unhealthy"].merging(capacity) { $1 }.merging(details) { $1 }))
        }
        let pulls = ReplicaPulls(
            configuration: configuration, store: store, cache: cache, watch: watch, connections: connections,
            stalled: stalled)
        let directory = try ReplicaDirectory(configuration.replicasDirectory)
        let replicaConnections = ReplicaConnections(directory: directory)
        let pushQueue = PushQueue(directory: directory, connections: replicaConnections, lockTimeout: configuration.pushLockTimeout)
        let blobStore = try configuration.openBlobStore()
        let pushes = ReplicaPushes(configuration: configuration, pulls: pulls, directory: directory, queue: pushQueue, blobs: blobStore)
        let authenticator = TokenAuthenticator(
            store: store, cache: cache, limit: configuration.maximumRequestsPerPerson)
        let blobs = BlobUploads(
            store: blobStore, replicas: replicaConnections, maximumBytes: configuration.maximumBlobBytes,
            reserveBytes: configuration.blobReserveBytes)
        let pushSubscriptions = PushSubscriptions(store: store, allowsLoopback: configuration.pushAllowsLoopback)
        // The workers' protocol first: the router tries a path's first component against each route's
        // in the order they were added, and a fleet's pulls are nearly every request it answers.
        router.group("v1")
            .add(middleware: authenticator)
            .get("replicas", use: pulls.list)
            .get("positions", use: pulls.positions)
            .get("replicas/:name/changes", use: pulls.changes)
            .post("replicas/:name/changes", use: pushes.push)
            .head("blobs/:digest", use: blobs.head)
            .patch("blobs/:digest", use: blobs.patch)
            .get("push", use: pushSubscriptions.key)
            .put("push", use: pushSubscriptions.keep)
            .delete("push", use: pushSubscriptions.end)
        if let metrics = configuration.metrics {
            router.get("/metrics") { _, _ -> Response in
                Response(
                    status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                    body: .init(
                        byteBuffer: ByteBuffer(
                            string: metrics() + watch.metrics + pushQueue.metrics
                                + pulls.pages.metrics + cache.metrics + authenticator.metrics)))
            }
        }
        board?.add(to: router)
        let linkKeys = LinkKeys(store: store)
        CalendarFeeds(store: store, keys: linkKeys).add(to: router)
        AppointmentPages(store: store, keys: linkKeys, company: configuration.company).add(to: router)
        FieldApp<SyncRequestContext>(store: store).add(to: router)
        allowed.learn(from: router)
        return router
    }
}

/// What `GET /health` answers: the status and, in `run`, each part's.
struct Health: ResponseEncodable {
    var fields: [String: String]

    func encode(to encoder: any Encoder) throws {
        try fields.encode(to: encoder)
    }
}

/// The request context: who the caller is, once the token is checked; JSON with snake_case keys.
public struct SyncRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The connection, asked for its peer's address only where it counts (the board's sign-in limit),
    /// and for its place among the open connections (a live-mode wait's).
    let channel: any Channel
    /// Who connected: the client a trusted proxy named (``ForwardedClient``), else the peer.
    public var remoteAddress: SocketAddress? { forwardedClient ?? channel.remoteAddress }
    /// The client a trusted proxy named in `X-Forwarded-For`.
    var forwardedClient: SocketAddress?
    /// Set by ``TokenAuthenticator`` for every request under `/v1`.
    public var person: Person?
    /// The caller's teams, by the master's memberships, as of the token check.
    var teams: [Team] = []
    /// The caller's token, checked again after a long wait (it may have been revoked meanwhile).
    var token: String?
    /// Gives the request's place among the person's requests in flight back (a pull about to wait).
    var releaseSlot: (@Sendable () -> Void)?

    public init(source: Source) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    public var responseEncoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
