import Egress
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import TeamworkModel

/// Where customers' email goes: an SMTP relay, from `TEAMWORK_SMTP_URL` or `--smtp-url`
/// (docs/integrations.md). `smtp://user:password@mail.example:587?from=visits@example.com`:
/// STARTTLS, required unless the relay is on this machine (`?starttls=never` for a local catcher,
/// `?starttls=required` to insist even then); `smtps://` is TLS from the first byte (port 465).
/// Credentials are never sent over a connection that is not encrypted, except to this machine.
public struct SMTPSettings: Sendable, Equatable {
    public enum Security: String, Sendable, Equatable {
        /// STARTTLS when the relay offers it, plain when it does not (only for a relay on this machine).
        case startTLSIfOffered
        case startTLS
        case tls
        case none
    }

    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var security: Security
    public var from: String
    public var fromName: String
    /// A PEM file of certificates to trust (a relay with a private CA); nil: the system's.
    public var caFile: String?
    /// Each step's limit (connecting, every reply), and the whole conversation's.
    public var stepTimeout: Duration = .seconds(30)
    public var totalTimeout: Duration = .seconds(120)

    var isLoopback: Bool { ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()) }

    /// `password`, when given, is the relay's password from elsewhere than the URL (a file, the environment).
    public static func parse(_ text: String, caFile: String? = nil, password: String? = nil) throws -> SMTPSettings {
        func bad(_ why: String) -> TeamworkError {
            TeamworkError(.configuration, "the SMTP url \(why); like smtp://user:password@mail.example:587?from=visits@example.com")
        }
        guard let parts = URLComponents(string: text), let scheme = parts.scheme?.lowercased(), ["smtp", "smtps"].contains(scheme)
        else { throw bad("is not an smtp:// or smtps:// address") }
        guard let host = parts.host, !host.isEmpty else { throw bad("has no host") }
        let query = Dictionary((parts.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        guard let from = query["from"], (try? Customer.validEmail(from)) != nil else {
            throw bad("needs ?from= with the address messages come from")
        }
        var settings = SMTPSettings(
            host: host, port: parts.port ?? (scheme == "smtps" ? 465 : 587), username: parts.user?.removingPercentEncoding,
            password: password ?? parts.password?.removingPercentEncoding, security: scheme == "smtps" ? .tls : .startTLS, from: from,
            fromName: query["name"] ?? "", caFile: caFile)
        if !(1...65_535).contains(settings.port) { throw bad("has no port from 1 to 65535") }
        if scheme == "smtp" {
            switch query["starttls"] ?? "" {
            case "": settings.security = settings.isLoopback ? .startTLSIfOffered : .startTLS
            case "required": settings.security = .startTLS
            case "never":
                guard settings.isLoopback else { throw bad("may say starttls=never only for a relay on this machine") }
                settings.security = .none
            default: throw bad("has starttls= other than required or never")
            }
        }
        if settings.username != nil, settings.password == nil { throw bad("names a user without a password") }
        return settings
    }

    init(
        host: String, port: Int, username: String?, password: String?, security: Security, from: String, fromName: String,
        caFile: String?
    ) {
        (self.host, self.port, self.username, self.password, self.security, self.from, self.fromName, self.caFile) = (
            host, port, username, password, security, from, fromName, caFile
        )
    }

    /// The address without the password, for logs.
    public var redacted: String {
        "\(security == .tls ? "smtps" : "smtp")://\(username.map { "\($0):***@" } ?? "")\(host):\(port)"
    }
}

/// Why a message did not go: `permanent` when the relay refused it for good (5xx), else worth a retry.
public struct SMTPFailure: Error, CustomStringConvertible, Sendable {
    public var description: String
    public var permanent: Bool
}

/// One SMTP conversation per message (RFC 5321): EHLO, STARTTLS, AUTH PLAIN or LOGIN, MAIL, RCPT,
/// DATA, QUIT, each reply awaited within the step's limit and the whole within the total.
public enum SMTPClient {
    /// Sends `message`, the whole conversation (connecting included) within `settings.totalTimeout`.
    public static func send(_ message: MailMessage, settings: SMTPSettings) async throws {
        try await withDeadline(
            settings.totalTimeout, timeout: { SMTPFailure(description: "the SMTP conversation took too long", permanent: false) }
        ) {
            try await converse(message, settings: settings)
        }
    }

    static func converse(_ message: MailMessage, settings: SMTPSettings) async throws {
        let replies = ReplyStream()
        let handler = ReplyHandler(replies: replies)
        let unread = UnreadBytes()
        let channel: any Channel
        do {
            // The address rule of everything the service sends out (docs/security.md, "Egress"): the relay's
            // name is resolved once and the connection goes to exactly an address of that answer, tried in its
            // order (TLS still checks the name). The operator named the relay, so any address is taken, as for OSRM.
            let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.init(settings.stepTimeout))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if settings.security == .tls { try channel.pipeline.syncOperations.addHandler(try tls(settings)) }
                        try channel.pipeline.syncOperations.addHandlers([
                            IdleStateHandler(readTimeout: .init(settings.stepTimeout)), ByteToMessageHandler(LineDecoder(unread: unread)),
                            handler,
                        ])
                    }
                }
            var connected: (any Channel)?
            var failure: (any Error)?
            let addresses = try await EgressClient.vettedAddresses(settings.host, policy: .operatorNamed)
            // Plain text is allowed only to this machine: "localhost" must mean it.
            if settings.isLoopback, let elsewhere = addresses.first(where: { !$0.isLoopback }) {
                throw SMTPFailure(
                    description: "the SMTP relay \(settings.host) resolves to \(elsewhere), not to this machine", permanent: true)
            }
            for address in addresses where connected == nil {
                // A conversation given up (its deadline) dials no further address.
                try Task.checkCancellation()
                do {
                    connected = try await bootstrap.connect(to: try SocketAddress(ipAddress: address.description, port: settings.port))
                        .get()
                } catch {
                    failure = error
                }
            }
            guard let connected else { throw failure ?? EgressFailure("\(settings.host) does not resolve") }
            channel = connected
        } catch let failure as SMTPFailure {
            throw failure
        } catch {
            throw SMTPFailure(description: "cannot reach the SMTP relay \(settings.host):\(settings.port): \(error)", permanent: false)
        }
        let overall = channel.eventLoop.scheduleTask(in: .init(settings.totalTimeout)) { channel.close(promise: nil) }
        defer {
            overall.cancel()
            channel.close(promise: nil)
        }
        let session = Session(channel: channel, replies: replies)
        try await session.expect([220], after: nil)
        let helo = "EHLO teamwork.invalid"
        var capabilities = try await session.expect([250], after: helo).lines
        var encrypted = settings.security == .tls
        if settings.security != .none && settings.security != .tls {
            if capabilities.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) {
                // Nothing the relay (or anyone between) says in clear after its 220 may pass for an answer over TLS.
                try await channel.eventLoop.submit { handler.awaitingTLS = true }.get()
                try await session.expect([220], after: "STARTTLS")
                try await channel.eventLoop.submit {
                    // Whole lines said after the 220 reached the handler; a part of one waits in the decoder.
                    if handler.injected || unread.count > 0 { throw SMTPClient.injection }
                    try channel.pipeline.syncOperations.addHandler(try tls(settings), position: .first)
                    handler.sealed = false
                }.get()
                encrypted = true
                capabilities = try await session.expect([250], after: helo).lines
            } else if settings.security == .startTLS {
                throw SMTPFailure(description: "the SMTP relay does not offer STARTTLS", permanent: true)
            }
        }
        if let user = settings.username, let password = settings.password {
            guard encrypted || settings.isLoopback else {
                throw SMTPFailure(
                    description: "refusing to send the SMTP password over a connection that is not encrypted", permanent: true)
            }
            let auth = capabilities.first { $0.uppercased().hasPrefix("AUTH") }?.uppercased() ?? ""
            if auth.contains("PLAIN") {
                let token = Data("\0\(user)\0\(password)".utf8).base64EncodedString()
                try await session.expect([235], after: "AUTH PLAIN \(token)", secret: true)
            } else if auth.contains("LOGIN") {
                try await session.expect([334], after: "AUTH LOGIN")
                try await session.expect([334], after: Data(user.utf8).base64EncodedString(), secret: true)
                try await session.expect([235], after: Data(password.utf8).base64EncodedString(), secret: true)
            } else {
                throw SMTPFailure(description: "the SMTP relay offers no AUTH PLAIN or LOGIN", permanent: true)
            }
        }
        try await session.expect([250], after: "MAIL FROM:<\(message.from)>")
        try await session.expect([250, 251], after: "RCPT TO:<\(message.to)>")
        try await session.expect([354], after: "DATA")
        // Dot-stuffing (RFC 5321 4.5.2), then the end of the data.
        let body = message.rendered().split(separator: "\r\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(".") ? "." + $0 : String($0) }.joined(separator: "\r\n")
        try await session.expect([250], after: body + ".")
        _ = try? await session.expect([221], after: "QUIT")
    }

    static let injection = SMTPFailure(description: "the SMTP relay said more in clear after agreeing to STARTTLS", permanent: false)

    static func tls(_ settings: SMTPSettings) throws -> NIOSSLClientHandler {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile { configuration.trustRoots = .file(caFile) }
        let context = try NIOSSLContext(configuration: configuration)
        let isAddress = settings.host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" || $0 == "[" || $0 == "]" }
        return try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : settings.host)
    }

    /// A reply: its code and the text of each line.
    struct Reply: Sendable {
        var code: Int
        var lines: [String]
    }

    final class Session {
        let channel: any Channel
        var iterator: AsyncThrowingStream<Reply, any Error>.AsyncIterator

        init(channel: any Channel, replies: ReplyStream) {
            self.channel = channel
            self.iterator = replies.stream.makeAsyncIterator()
        }

        /// Sends `command` (when given) and awaits a reply with one of `codes`.
        @discardableResult
        func expect(_ codes: Set<Int>, after command: String?, secret: Bool = false) async throws -> Reply {
            if let command {
                try await channel.writeAndFlush(ByteBuffer(string: command + "\r\n")).get()
            }
            let reply: Reply?
            do {
                reply = try await iterator.next()
            } catch {
                throw SMTPFailure(description: "the SMTP relay stopped answering: \(error)", permanent: false)
            }
            guard let reply else { throw SMTPFailure(description: "the SMTP relay closed the connection", permanent: false) }
            guard codes.contains(reply.code) else {
                // The command's verb only (MAIL, RCPT, DATA…): no address, password or message text in a log.
                let said =
                    command.map { $0.hasSuffix(".") && $0.contains("\r\n") ? "the message" : String($0.prefix { $0 != " " && $0 != ":" }) }
                    ?? "the greeting"
                throw SMTPFailure(
                    description: "the SMTP relay answered \(secret ? "AUTH" : said) with \(reply.code)",
                    permanent: (500..<600).contains(reply.code))
            }
            return reply
        }
    }

    final class ReplyStream: Sendable {
        let stream: AsyncThrowingStream<Reply, any Error>
        let continuation: AsyncThrowingStream<Reply, any Error>.Continuation

        init() { (stream, continuation) = AsyncThrowingStream.makeStream(bufferingPolicy: .bufferingNewest(16)) }
    }

    /// How many bytes the line decoder holds that are not yet a whole line. On the channel's event loop only.
    final class UnreadBytes: @unchecked Sendable {
        var count = 0
    }

    /// Lines ending in LF (CRLF on the wire), at most 4 KiB each.
    struct LineDecoder: ByteToMessageDecoder {
        typealias InboundOut = ByteBuffer
        let unread: UnreadBytes

        mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            unread.count = buffer.readableBytes
            guard let end = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
                if buffer.readableBytes > 4096 { throw SMTPFailure(description: "an SMTP reply line over 4 KiB", permanent: false) }
                return .needMoreData
            }
            let line = buffer.readSlice(length: end - buffer.readerIndex + 1)!
            unread.count = buffer.readableBytes
            context.fireChannelRead(Self.wrapInboundOut(line))
            return .continue
        }
    }

    /// Gathers a reply's lines (`250-...` continues, `250 ...` ends) and hands each reply on.
    /// Used on its channel's event loop only.
    final class ReplyHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let replies: ReplyStream
        var lines: [String] = []
        /// STARTTLS is sent: its reply is the last in clear.
        var awaitingTLS = false
        /// Its reply came, TLS is not yet in place: anything more in clear is an injection.
        var sealed = false
        var injected = false

        init(replies: ReplyStream) { self.replies = replies }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !sealed else {
                injected = true
                replies.continuation.finish(throwing: SMTPClient.injection)
                context.close(promise: nil)
                return
            }
            var buffer = Self.unwrapInboundIn(data)
            let line = (buffer.readString(length: buffer.readableBytes) ?? "").trimmingCharacters(in: .newlines)
            guard line.count >= 3, let code = Int(line.prefix(3)) else {
                replies.continuation.finish(throwing: SMTPFailure(description: "not an SMTP reply", permanent: false))
                return
            }
            lines.append(String(line.dropFirst(4)))
            if lines.count > 100 {
                replies.continuation.finish(throwing: SMTPFailure(description: "an SMTP reply of over 100 lines", permanent: false))
                return
            }
            guard line.count == 3 || line[line.index(line.startIndex, offsetBy: 3)] != "-" else { return }
            replies.continuation.yield(Reply(code: code, lines: lines))
            lines = []
            if awaitingTLS { (awaitingTLS, sealed) = (false, true) }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is IdleStateHandler.IdleStateEvent {
                replies.continuation.finish(throwing: SMTPFailure(description: "no answer in time", permanent: false))
                context.close(promise: nil)
            } else {
                context.fireUserInboundEventTriggered(event)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            replies.continuation.finish(throwing: error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            replies.continuation.finish()
            context.fireChannelInactive()
        }
    }
}
