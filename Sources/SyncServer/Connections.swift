import Hummingbird
import NIOCore
import TeamworkModel

/// The server's open connections, in the order they were accepted, and the start of its shutdown.
///
/// Hummingbird runs each connection as a child task of one task group, and the Swift runtime of
/// this toolchain (6.3) keeps a group's children in a singly linked list in the order they were
/// added, walked from its head to remove one: 10,000 connections closing at SIGTERM in any order
/// cost 62% of the service's CPU while it shut down (removing the oldest first costs nothing). So
/// the live-mode waits, which SIGTERM ends all at once, are ended oldest connection first
/// (``rank(of:)``), and their connections close in about that order.
final class Connections: Sendable {
    private struct State {
        var open: [ObjectIdentifier: (rank: Int, notice: Notice, loop: any EventLoop)] = [:]
        var next = 0
        var quiescing = false
        /// The connections open when shutdown began, each told in its turn.
        var told: Set<ObjectIdentifier> = []
    }

    private let state = Locked(State())
    /// Called once the server's graceful shutdown begins.
    let quiesce: @Sendable () -> Void

    init(quiesce: @escaping @Sendable () -> Void) {
        self.quiesce = quiesce
    }

    /// Where `channel` stands in the order connections were accepted (a channel not seen yet comes last).
    func rank(of channel: any Channel) -> Int {
        state.mutate { $0.open[ObjectIdentifier(channel)]?.rank ?? $0.next }
    }

    /// NIO told one connection to quiesce: the first time, `quiesce` runs (the waits end, oldest
    /// connection first) and every open connection is told in turn, oldest first, on its event loop;
    /// a connection opened since is told at once. Called on `notice`'s event loop.
    fileprivate func quiescing(_ notice: Notice, id: ObjectIdentifier) {
        let (first, inTurn, known) = state.mutate { state -> (Bool, [(notice: Notice, loop: any EventLoop)], Bool) in
            guard !state.quiescing else { return (false, [], state.told.contains(id)) }
            state.quiescing = true
            state.told = Set(state.open.keys)
            return (true, state.open.values.sorted { $0.rank < $1.rank }.map { ($0.notice, $0.loop) }, state.told.contains(id))
        }
        if first { quiesce() }
        for (notice, loop) in inTurn { loop.execute { notice.passOn() } }
        if !known { notice.passOn() }
    }

    /// In every connection's pipeline. Hummingbird adds these ahead of its own handlers, so NIO's
    /// `ChannelShouldQuiesceEvent` (which its quiescing helper sends each open connection, in no
    /// particular order, as the server stops accepting) comes here first: it is held, and passed on
    /// to Hummingbird's handler (which closes the connection once its request is answered) in the
    /// order the connections were accepted.
    final class Notice: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
        typealias InboundIn = NIOAny
        private let connections: Connections
        // Touched only on the channel's event loop.
        private var context: ChannelHandlerContext?
        private var passed = false

        init(_ connections: Connections) {
            self.connections = connections
        }

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
            let (id, loop) = (ObjectIdentifier(context.channel), context.eventLoop)
            connections.state.mutate { state in
                state.open[id] = (state.next, self, loop)
                state.next += 1
            }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            self.context = nil
            let id = ObjectIdentifier(context.channel)
            connections.state.mutate { state in
                state.open[id] = nil
                // A channel opened later may have the same identifier: it must be told for itself.
                state.told.remove(id)
            }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
            connections.quiescing(self, id: ObjectIdentifier(context.channel))
        }

        /// Passes the quiesce event on, once. On the channel's event loop.
        fileprivate func passOn() {
            guard !passed, let context else { return }
            passed = true
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }
}

/// Stream writes in progress, so that one that waits for room in the connection longer than a
/// limit (the device stopped reading; its buffers are full) costs the device the connection: a
/// write that never ends would hold its stream, its task and SIGTERM up for ever. The limit is the
/// connections' idle timeout, 30 s: a device reading a big page over a slow link keeps it. Swept by
/// the live-mode watch's loop (every look), rather than a timer per write, which cost two hops
/// between threads per page.
final class StalledWrites: Sendable {
    private struct State {
        var next = 0
        var pending: [Int: (since: ContinuousClock.Instant, channel: any Channel)] = [:]
    }

    private let state = Locked(State())
    let limit: Duration

    init(limit: Duration = .seconds(30)) {
        self.limit = limit
    }

    /// Runs `write` (to `channel`), timed while it runs.
    func timing(_ channel: any Channel, _ write: () async throws -> Void) async throws {
        let id = begin(channel)
        defer { end(id) }
        try await write()
    }

    /// A write to `channel` begins; give the number back to ``end(_:)``.
    func begin(_ channel: any Channel) -> Int {
        state.mutate { state in
            state.next += 1
            state.pending[state.next] = (ContinuousClock.now, channel)
            return state.next
        }
    }

    func end(_ write: Int) {
        state.mutate { _ = $0.pending.removeValue(forKey: write) }
    }

    /// Closes the connections of writes older than ``limit`` (their writes then fail).
    func sweep() {
        let now = ContinuousClock.now
        let stalled = state.mutate { state -> [any Channel] in
            guard !state.pending.isEmpty else { return [] }
            let old = state.pending.filter { now - $0.value.since > limit }
            for key in old.keys { state.pending[key] = nil }
            return old.values.map(\.channel)
        }
        for channel in stalled { channel.close(promise: nil) }
    }
}
