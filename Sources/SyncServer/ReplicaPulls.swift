import CentralStore
import Foundation
import Hummingbird
import Logging
import ServerSupport
import SyncProtocol
import TeamDatabase
import TeamworkModel

/// The read side of sync: which replicas a worker may have, and pages of changes.
struct ReplicaPulls: Sendable {
    let configuration: SyncServer.Configuration
    let store: SharedStore<any EndpointStore>
    /// Tokens and teams remembered between requests.
    let cache: AccessCache
    /// Wakes the pulls that wait for a change (`wait=N`).
    let watch: ReplicaWatch
    /// Pages already encoded, by the state of the file they were read from.
    let pages = PageCache()

    /// `GET /v1/replicas`: the caller's teams (per the master's memberships), their personal replica once it
    /// exists, the common one.
    @Sendable func list(_ request: Request, context: SyncRequestContext) async throws -> ReplicaListing {
        let person = try context.requirePerson()
        let teams = context.teams
        let directory = configuration.replicasDirectory
        func exists(_ replica: ReplicaID) -> Bool {
            FileManager.default.fileExists(atPath: directory.appending(path: replica.fileName).path)
        }
        var entries = teams.map {
            ReplicaListing.Entry(
                name: "team-\($0.id)", kind: "team", id: $0.id, slug: $0.slug, title: $0.name, available: exists(.team($0.id)))
        }
        // A personal replica exists only once someone has a task of their own: until then there is
        // nothing to list (a listed name the device could never pull would only look broken).
        if exists(.person(person.id)) {
            entries.append(
                ReplicaListing.Entry(
                    name: "person-\(person.id)", kind: "person", id: person.id, slug: nil,
                    title: person.displayName, available: true))
        }
        entries.append(
            ReplicaListing.Entry(name: "common", kind: "common", id: nil, slug: nil, title: "Common data", available: exists(.common)))
        return ReplicaListing(person: person.id, replicas: entries)
    }

    /// `GET /v1/positions`: the caller's own last-known position, and their
    /// teammates' in teams that share positions; read from the master on each
    /// request, so a team that stops sharing stops at once.
    @Sendable func positions(_ request: Request, context: SyncRequestContext) async throws -> PositionListing {
        let person = try context.requirePerson()
        let rows = try await store.run { try await $0.positions(visibleTo: person.id) }
        return PositionListing(
            person: person.id,
            positions: rows.map {
                PositionListing.Entry(
                    person: $0.personID, teams: $0.teamIDs, latitude: $0.latitude, longitude: $0.longitude,
                    reportedAt: $0.reportedAt)
            })
    }

    /// The longest query parameter taken, in characters (at most 4 bytes each): a UUID epoch is 36.
    static let longestParameter = 64

    /// What a `changes` request asks, checked.
    private struct Asked {
        var replica: ReplicaID
        var path: String
        var since: Int64
        var limit: Int
        var wait: Duration
        var stream: Duration
        var epoch: String?
    }

    /// `GET /v1/replicas/{name}/changes?epoch=&since=&limit=&wait=` (or `&stream=`).
    ///
    /// Kept thin, as every handler a stream passes through: a connection keeps the deepest stack of
    /// async frames it ever had for its whole life (Swift's task allocator keeps its slabs), so what
    /// this holds across its awaits is held by every open stream. The checks are synchronous helpers.
    @Sendable func changes(_ request: Request, context: SyncRequestContext) async throws -> Response {
        let person = try context.requirePerson()
        let asked = try ask(request, context: context, person: person)
        // The file's state before the read: a page already encoded for this state and these
        // parameters is sent again as it is (every device of a team asks the same questions).
        // No state: no file (or not yet a database), read without the cache.
        let stamp = try Self.stamp(asked)
        let read = reader(asked.replica, path: asked.path, limit: asked.limit, context: context)
        // Live mode: a device that is current waits for its replica to change.
        // The stamp is taken before the read, so a change made meanwhile ends the wait at once.
        let first = try await read(stamp, asked.epoch, asked.since)
        if asked.stream > .zero { return try streamed(asked, from: (stamp, first), read: read, person: person, context: context) }
        guard asked.wait > .zero, !first.refetch, first.upTo == asked.since else { return Self.respond(first, to: request) }
        return try await waited(asked, from: stamp, read: read, person: person, request: request, context: context)
    }

    /// The request's replica (404, 403) and parameters (400).
    @inline(never)
    private func ask(_ request: Request, context: SyncRequestContext, person: Person) throws -> Asked {
        let replica = try replica(named: context, person: person)
        let query = request.uri.queryParameters
        // Every parameter is a number or a server-made epoch (a UUID): anything longer is made up.
        if let long = query.first(where: { $0.value.unicodeScalars.count > Self.longestParameter }) {
            throw HTTPError(
                .badRequest,
                message: "\(TerminalText.oneLine(String(long.key.prefix(32)))) is longer than \(Self.longestParameter) characters")
        }
        let since =
            try query["since"].map { text -> Int64 in
                guard let value = Int64(String(text)), value >= 0 else {
                    throw HTTPError(.badRequest, message: "since must be a whole number >= 0")
                }
                return value
            } ?? 0
        let limit =
            try query["limit"].map { text -> Int in
                guard let value = Int(String(text)), (1...configuration.maximumPageSize).contains(value) else {
                    throw HTTPError(.badRequest, message: "limit must be between 1 and \(configuration.maximumPageSize)")
                }
                return value
            } ?? configuration.defaultPageSize
        let wait = try seconds(query["wait"], named: "wait")
        let stream = try seconds(query["stream"], named: "stream")
        if wait > .zero && stream > .zero { throw HTTPError(.badRequest, message: "wait and stream cannot go together") }
        return Asked(
            replica: replica, path: paths.path(of: replica), since: since, limit: limit, wait: wait, stream: stream,
            epoch: query["epoch"].map(String.init))
    }

    /// The state of the replica's file; 404 when there is no file yet.
    @inline(never)
    private static func stamp(_ asked: Asked) throws -> FileVersion? {
        let stamp = FileVersion(path: asked.path)
        guard stamp != nil || FileManager.default.fileExists(atPath: asked.path) else {
            throw HTTPError(.notFound, message: "\(asked.replica.name) has not been generated yet; try again shortly")
        }
        return stamp
    }

    /// `stream=N`: the answer whose body is ``follow(_:path:from:since:for:read:person:context:writer:)``.
    @inline(never)
    private func streamed(
        _ asked: Asked, from start: (FileVersion?, PageCache.Answer), read: @escaping Read, person: Person,
        context: SyncRequestContext
    ) throws -> Response {
        // A stream gives its place among the person's requests in flight back, as a wait does, but holds
        // one of their open streams for its whole life (waiting, catching up or writing), reserved here,
        // before anything is sent: one token cannot hold the server's connections with streams that never
        // end. An answer never sent gives its place back when its body goes.
        guard case .success(let place) = streams.reserve(for: person.id) else {
            throw HTTPError(.tooManyRequests, message: "too many live streams open for one person; close some and try again")
        }
        context.releaseSlot?()
        let body = ResponseBody { [self] writer in
            defer { place.release() }
            try await follow(
                asked.replica, path: asked.path, from: start, since: asked.since, for: asked.stream, read: read,
                person: person, context: context, writer: &writer)
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-store"], body: body)
    }

    /// `wait=N` for a device that is current: the next page once the replica changes, or the same
    /// (empty) one when the time is up.
    @inline(never)
    private func waited(
        _ asked: Asked, from stamp: FileVersion?, read: Read, person: Person, request: Request,
        context: SyncRequestContext
    ) async throws -> Response {
        context.releaseSlot?()
        let end = try await change(
            of: asked.path, from: stamp, until: ContinuousClock.now + asked.wait, owner: person.id,
            rank: connections.rank(of: context.channel)
        ) {
            try await recheck(context, replica: asked.replica)
            return true
        }
        try await recheck(context, replica: asked.replica)
        return Self.respond(try await read(end.seen ?? FileVersion(path: asked.path), asked.epoch, asked.since), to: request)
    }

    /// A page as a plain answer: gzipped to a client that takes it (the phone's browser does), as it is otherwise.
    private static func respond(_ answer: PageCache.Answer, to request: Request) -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .vary: "Accept-Encoding"]
        if let packed = answer.packed, StaticFile.accepts("gzip", request.headers[.acceptEncoding]) {
            headers[.contentEncoding] = "gzip"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: packed))
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: answer.body))
    }

    /// `wait=N` or `stream=N`: whole seconds up to ``SyncServer/Configuration/maximumWait``.
    private func seconds(_ text: Substring?, named name: String) throws -> Duration {
        guard let text else { return .zero }
        let most = Int(configuration.maximumWait.components.seconds)
        guard let value = Int(String(text)), (0...most).contains(value) else {
            throw HTTPError(.badRequest, message: "\(name) must be a whole number of seconds between 0 and \(most)")
        }
        return .seconds(value)
    }

    /// Reads a page of `replica` from a position: the one already encoded for the file's state when
    /// there is one (`stamp`), else from the file.
    private typealias Read = @Sendable (_ stamp: FileVersion?, _ epoch: String?, _ since: Int64) async throws -> PageCache.Answer

    @inline(never)
    private func reader(_ replica: ReplicaID, path: String, limit: Int, context: SyncRequestContext) -> Read {
        let (pages, logger, encoder, name) = (self.pages, context.logger, context.responseEncoder, replica.name)
        return { stamp, epoch, since in
            let fetch = { @Sendable () async throws -> PageCache.Answer in
                if replica == .common {
                    return try await blockingWork {
                        let page = try CommonPage.read(path: path, epoch: epoch, since: since, limit: limit)
                        let (body, packed) = try Self.line(page, encoder)
                        return (body: body, packed: packed, upTo: page.upTo, refetch: page.refetch, more: page.more, epoch: page.epoch)
                    }
                }
                return try await blockingWork {
                    let page = try ChangePage.read(path: path, epoch: epoch, since: since, limit: limit)
                    let (body, packed) = try Self.line(page, encoder)
                    return (body: body, packed: packed, upTo: page.upTo, refetch: page.refetch, more: page.more, epoch: page.epoch)
                }
            }
            do {
                guard let stamp else { return try await fetch() }
                return try await pages.answer(
                    for: PageCache.Key(path: path, stamp: stamp, epoch: epoch, since: since, limit: limit),
                    read: fetch)
            } catch {
                throw Self.unreadable(name, error, logger: logger)
            }
        }
    }

    /// The page as one line: a stream sends it as it is, and JSON allows the newline after a plain
    /// answer's body; and gzipped, once for every device that asks, when it is a page of some size.
    private static func line<Page: Encodable>(_ page: Page, _ encoder: JSONEncoder) throws -> (ByteBuffer, ByteBuffer?) {
        var encoded = try encoder.encode(page)
        encoded.append(UInt8(ascii: "\n"))
        let packed =
            encoded.count >= packedFrom ? Gzip.compress(Array(encoded), level: 6).flatMap { $0.count < encoded.count ? $0 : nil } : nil
        return (ByteBuffer(data: encoded), packed.map { ByteBuffer(bytes: $0) })
    }

    /// The smallest page worth gzipping (a "nothing new" page is a few dozen bytes).
    static let packedFrom = 2048

    @inline(never)
    private static func unreadable(_ name: String, _ error: any Error, logger: Logger) -> any Error {
        logger.error("cannot read a replica", metadata: ["replica": "\(name)", "error": "\(error)"])
        return HTTPError(.serviceUnavailable, message: "\(name) cannot be read right now; try again")
    }

    /// Live mode as a stream (`stream=N`): each page with news, one JSON object per line, as soon as
    /// the replica changes, for N seconds; the device applies each page as it comes (its `since` is
    /// the previous page's `up_to`), with one request and one connection for all of them, where
    /// `wait=N` costs two requests per change (the answer, then the next wait). Pages that follow
    /// (`more`) are sent at once. The stream ends early at shutdown, when its person opens too many
    /// waits, and when the token is revoked or the replica no longer theirs (checked before each page
    /// but the first). A device that takes nothing for 30 s while a page waits to be sent loses its
    /// connection (``StalledWrites``): a reader that stopped reading holds nothing for long, nor SIGTERM up.
    private func follow(
        _ replica: ReplicaID, path: String, from start: (FileVersion?, PageCache.Answer), since: Int64,
        for duration: Duration, read: Read, person: Person, context: SyncRequestContext,
        writer: inout any ResponseBodyWriter
    ) async throws {
        let deadline = ContinuousClock.now + duration
        let rank = connections.rank(of: context.channel)
        var (stamp, answer) = start
        var position = since
        let channel = context.channel
        // Before each page but the first: still the caller's, in time, and the server not shutting down.
        func mayGoOn() async -> Bool {
            guard ContinuousClock.now < deadline, !watch.shuttingDown else { return false }
            do {
                try await recheck(context, replica: replica)
                return true
            } catch {
                // The status is sent already: the stream just ends, and the device's next request hears why.
                return false
            }
        }
        while true {
            if answer.refetch || answer.upTo != position {
                try await stalled.timing(channel) { try await writer.write(answer.body) }
                position = answer.upTo
                if answer.more {
                    guard await mayGoOn() else { break }
                    stamp = FileVersion(path: path)
                    answer = try await read(stamp, answer.epoch, position)
                    continue
                }
            }
            guard
                case .changed(let seen) = try await change(
                    of: path, from: stamp, until: deadline, owner: person.id, rank: rank, stillAllowed: mayGoOn),
                await mayGoOn()
            else { break }
            stamp = seen
            answer = try await read(stamp, answer.epoch, position)
        }
        // The end waits for room in the connection as a page does.
        try await stalled.timing(channel) { try await writer.finish(nil) }
    }

    /// Open streams by person.
    let streams: Budget<Int64>

    /// Waits until the file at `path` leaves `stamp`, or `deadline`. A change of the owner's access on
    /// the master wakes their waits (``ReplicaWatch/accessChanged(of:)``): the caller is checked again
    /// (`stillAllowed`, which may throw the refusal) and, still allowed, waits on for the time left.
    private func change(
        of path: String, from stamp: FileVersion?, until deadline: ContinuousClock.Instant, owner: Int64, rank: Int,
        stillAllowed: () async throws -> Bool
    ) async throws -> ReplicaWatch.WaitEnd {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .timedOut }
            let end = await watch.wait(path: path, from: stamp, timeout: left, owner: owner, rank: rank)
            guard end == .accessChanged else { return end }
            guard try await stillAllowed() else { return .ended }
        }
    }

    /// After a wait, the caller's token and access are checked again: a token
    /// revoked or a member removed while the pull waited gets no more data.
    private func recheck(_ context: SyncRequestContext, replica: ReplicaID) async throws {
        guard let token = context.token else { throw HTTPError(.unauthorized) }
        guard let access = try await cache.access(secret: token, store: store, from: AddressLimiter.key(context.remoteAddress?.ipAddress)),
            access.person.id == context.person?.id
        else {
            context.logger.notice("refused: token revoked during a wait")
            throw HTTPError(.unauthorized, message: "the token is unknown or revoked")
        }
        try requireAccess(access.person, teams: access.teams, to: replica, context: context)
    }

    /// Where each replica's file is; what the watch knows it by.
    let paths: ReplicaPaths

    /// The server's connections, whose order the watch ends its waits in at shutdown.
    let connections: Connections

    /// Stream writes in progress, swept by the watch's loop.
    let stalled: StalledWrites

    init(
        configuration: SyncServer.Configuration, store: SharedStore<any EndpointStore>, cache: AccessCache, watch: ReplicaWatch,
        connections: Connections,
        stalled: StalledWrites
    ) {
        self.stalled = stalled
        self.configuration = configuration
        streams = Budget(perPrincipal: configuration.maximumStreamsPerPerson)
        self.store = store
        self.cache = cache
        self.watch = watch
        self.connections = connections
        paths = ReplicaPaths(configuration.replicasDirectory)
    }

    /// The replica the `{name}` path parameter names, if the caller may use it
    /// (404 for no such name, 403 for someone else's).
    func replica(named context: SyncRequestContext, person: Person) throws -> ReplicaID {
        let name = try context.parameters.require("name")
        guard let replica = ReplicaID(fileName: name + ".sqlite") else {
            throw HTTPError(.notFound, message: "no replica named '\(name)'")
        }
        try requireAccess(person, teams: context.teams, to: replica, context: context)
        return replica
    }

    /// Members read their teams' replicas, people their own personal one, everybody the common one.
    private func requireAccess(_ person: Person, teams: [Team], to replica: ReplicaID, context: SyncRequestContext) throws {
        let allowed: Bool
        switch replica {
        case .common:
            allowed = true
        case .person(let id):
            allowed = id == person.id
        case .team(let id):
            allowed = teams.contains { $0.id == id }
        }
        guard allowed else {
            context.logger.notice("refused: not the caller's replica", metadata: ["replica": "\(replica.fileName)"])
            throw HTTPError(.forbidden, message: "\(replica) is not one of your replicas")
        }
    }
}

extension SyncRequestContext {
    func requirePerson() throws -> Person {
        guard let person else { throw HTTPError(.unauthorized) }
        return person
    }
}

extension ReplicaListing: ResponseEncodable {}
extension PositionListing: ResponseEncodable {}
