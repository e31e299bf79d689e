import Foundation
import NIOCore
import NIOPosix
import TeamworkModel

/// A receiver on this machine that answers as a hostile one would: an endless body, a body dribbled
/// a byte at a time, or a plain short answer. It counts the connections it holds open now and the
/// most it ever held at once.
final class HostileReceiver: @unchecked Sendable {
    enum Behaviour: Sendable {
        /// `200` and then 64 KB after 64 KB, for as long as the client reads.
        case endless
        /// `200` and one byte of body every `every`, never ending.
        case dribble(every: TimeAmount)
        /// `204`, done.
        case short
    }

    let channel: any Channel
    typealias Counts = Locked<(open: Int, most: Int, accepted: Int)>
    /// Shared by several receivers when they are given the same.
    let counts: Counts

    var port: Int { channel.localAddress!.port! }
    var open: Int { counts.value.open }
    var most: Int { counts.value.most }
    var accepted: Int { counts.value.accepted }

    init(_ behaviour: Behaviour, host: String = "127.0.0.1", port: Int = 0, counts: Counts = Counts((0, 0, 0))) async throws {
        self.counts = counts
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                counts.mutate {
                    $0.open += 1
                    $0.accepted += 1
                    $0.most = max($0.most, $0.open)
                }
                child.closeFuture.whenComplete { _ in counts.mutate { $0.open -= 1 } }
                return child.pipeline.addHandler(Answerer(behaviour))
            }
            .bind(host: host, port: port).get()
    }

    func stop() async { try? await channel.close() }

    /// Waits up to `seconds` for the receiver to hold no connection.
    func drained(within seconds: Double) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while open > 0 && Date() < end { try? await Task.sleep(for: .milliseconds(20)) }
        return open == 0
    }

    final class Answerer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let behaviour: Behaviour
        var answered = false

        init(_ behaviour: Behaviour) { self.behaviour = behaviour }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            // Answer as soon as the request's head is in (its body is not waited for).
            guard !answered else { return }
            answered = true
            let channel = context.channel
            switch behaviour {
            case .short:
                context.writeAndFlush(
                    NIOAny(ByteBuffer(string: "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")), promise: nil)
                context.close(promise: nil)
            case .endless:
                context.writeAndFlush(NIOAny(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")), promise: nil)
                let chunk = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 * 1024)
                @Sendable func more() {
                    guard channel.isActive else { return }
                    channel.writeAndFlush(chunk).whenSuccess { channel.eventLoop.execute { more() } }
                }
                more()
            case .dribble(let every):
                context.writeAndFlush(NIOAny(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")), promise: nil)
                channel.eventLoop.scheduleRepeatedTask(initialDelay: every, delay: every) { task in
                    guard channel.isActive else { return task.cancel() }
                    channel.writeAndFlush(ByteBuffer(string: "x"), promise: nil)
                }
            }
        }
    }
}
