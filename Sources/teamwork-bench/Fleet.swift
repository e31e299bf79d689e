import Foundation
import NIOCore
import NIOPosix
import TeamworkModel
import TeamworkTestSupport
import WorkerClient

/// Devices in live mode the way `teamwork-worker watch` holds it: one kept-alive
/// connection each (URLSession keeps its connection between requests), a
/// live-mode wait after another on it, moving on to the position each answer
/// gives; after a failure, a new connection after the device's own backoff
/// (`Watcher.reconnecting`, full jitter).
///
/// Each device is a small state machine on one of NIO's event loops (no task,
/// no HTTP client stack per request): a fleet of ten thousand costs the
/// benchmark a parse of each answer and little else, so what a run measures is
/// the service, not the benchmark's own connections. (With a client per
/// request, the benchmark was half the load of the machine it measures.)
final class Fleet: @unchecked Sendable {
    struct Device: Sendable {
        var token: String
        /// `/v1/replicas/team-N/changes`
        var replica: String
        /// Where the device is in its replica.
        var epoch: String
        var since: Int64
    }

    /// What a fan-out round came to.
    struct Round {
        /// Milliseconds from the commit to each device's first answer with news.
        var latencies: [Double]
        var failures: [String: Int]
        /// Milliseconds from the commit to the first and the last of `files` changing (the generator's part).
        var filesWritten: (first: Double, last: Double)?
    }

    /// How the devices hear of changes: live-mode waits one after another (`wait=N`), or one
    /// streamed answer that carries every change as a line (`stream=N`, what `watch` uses).
    enum Live: String, Sendable, CaseIterable {
        case wait, stream
    }

    let port: Int
    let waitSeconds: Int
    let live: Live
    private let devices: [DeviceConnection]
    private let record = Locked(Record())

    private struct Record {
        var failures: [String: Int] = [:]
        /// The round being timed: when its commit was made, and each device's answer to it.
        var committed: ContinuousClock.Instant?
        var latencies: [Int: Double] = [:]
        var stopped = false
    }

    init(
        port: Int, devices: [Device], waitSeconds: Int, live: Live = .stream,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.port = port
        self.waitSeconds = waitSeconds
        self.live = live
        var connections: [DeviceConnection] = []
        for (index, device) in devices.enumerated() {
            connections.append(DeviceConnection(index: index, device: device, eventLoop: group.next()))
        }
        self.devices = connections
        for connection in connections { connection.fleet = self }
    }

    /// Connects every device, at most `pace` connecting at once (a fleet coming on line over the
    /// morning, not a storm: the storm is measured after a restart), each then waiting as it will.
    func start(pace: Int = 256) async {
        for chunk in stride(from: 0, to: devices.count, by: pace) {
            let started = devices[chunk..<min(devices.count, chunk + pace)].map { $0.connect() }
            for future in started { _ = try? await future.get() }
        }
    }

    /// Every connection closed; no device reconnects.
    func stop() async {
        record.mutate { $0.stopped = true }
        for device in devices { _ = try? await device.close().get() }
    }

    var stopped: Bool { record.value.stopped }

    /// Times one commit: `commit` runs, and each device's first answer with news after it is
    /// timed, until every device has one or `limit` passes.
    /// `files` (the replicas the commit changes) are looked at every few milliseconds meanwhile,
    /// to tell the generator's part from the wake's.
    func round(within limit: Duration, files: [String], commit: () async throws -> Void) async throws -> Round {
        record.mutate { record in
            record.failures = [:]
            record.latencies = [:]
            record.committed = nil
        }
        // A write commits (mtime) or a rebuild renames a new file in (inode): one stat per file not yet written.
        func stamp(_ path: String) -> [Int] {
            var info = stat()
            guard stat(path, &info) == 0 else { return [] }
            return [Int(info.st_ino), info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
        }
        var stamps = Dictionary(uniqueKeysWithValues: files.map { ($0, stamp($0)) })
        try await commit()
        let committed = ContinuousClock.now
        record.mutate { $0.committed = committed }
        var written: [Double] = []
        while ContinuousClock.now - committed < limit, record.value.latencies.count < devices.count {
            for (path, old) in stamps {
                if stamp(path) != old {
                    written.append(Double((ContinuousClock.now - committed) / .milliseconds(1)))
                    stamps[path] = nil
                }
            }
            try await Task.sleep(for: .milliseconds(stamps.isEmpty ? 20 : 10))
        }
        return record.mutate { record in
            defer { record.committed = nil }
            return Round(
                latencies: record.latencies.values.sorted(), failures: record.failures,
                filesWritten: written.isEmpty ? nil : (written.min()!, written.max()!))
        }
    }

    /// CPU seconds (user and system) a process has used so far, from /proc.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return .nan }
        // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Requests that got no answer since the last round began, by cause.
    func failures() -> [String: Int] { record.value.failures }

    fileprivate func failed(_ cause: String) {
        record.mutate { $0.failures[cause, default: 0] += 1 }
    }

    /// A device got news at `at`: timed if a round is on and it is the device's first.
    fileprivate func news(_ index: Int, at: ContinuousClock.Instant) {
        record.mutate { record in
            guard let committed = record.committed, record.latencies[index] == nil else { return }
            record.latencies[index] = Double((at - committed) / .milliseconds(1))
        }
    }
}

/// One device: its connection, the request it has in flight, its backoff. Touched only on its event loop.
private final class DeviceConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer

    let index: Int
    var device: Fleet.Device
    let eventLoop: any EventLoop
    weak var fleet: Fleet?
    private var channel: (any Channel)?
    private var received = ByteBuffer()
    private var backoff: Backoff
    /// A request is out and its answer not complete.
    private var asking = false
    /// Inside a streamed (chunked) answer, and what has come of its current line.
    private var streaming = false
    private var line = ByteBuffer()

    init(index: Int, device: Fleet.Device, eventLoop: any EventLoop) {
        self.index = index
        self.device = device
        self.eventLoop = eventLoop
        backoff = Watcher.reconnecting(random: SplitMix(seed: UInt64(index + 1)))
    }

    /// Opens the connection and sends the first wait; a failure to connect schedules the next try.
    func connect() -> EventLoopFuture<Void> {
        guard let fleet, !fleet.stopped else { return eventLoop.makeSucceededVoidFuture() }
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(self) }
            }
            .connect(host: "127.0.0.1", port: fleet.port)
            .map { channel in
                self.channel = channel
                self.received = channel.allocator.buffer(capacity: 4096)
                self.ask()
            }
            .recover { error in
                self.retry(LoadBenchmark.cause(error))
            }
    }

    func close() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit {
            guard let channel = self.channel else { return self.eventLoop.makeSucceededVoidFuture() }
            self.channel = nil
            return channel.close().recover { _ in }
        }
    }

    private func ask() {
        guard let channel, let fleet else { return }
        asking = true
        var request = channel.allocator.buffer(capacity: 256)
        request.writeString(
            "GET \(device.replica)?epoch=\(device.epoch)&since=\(device.since)&\(fleet.live.rawValue)=\(fleet.waitSeconds) HTTP/1.1\r\n"
                + "Host: 127.0.0.1:\(fleet.port)\r\n"
                + "Authorization: Bearer \(device.token)\r\n\r\n")
        channel.writeAndFlush(request, promise: nil)
    }

    /// After a failure: a new connection once the backoff's delay has passed.
    private func retry(_ cause: String) {
        guard let fleet, !fleet.stopped else { return }
        fleet.failed(cause)
        if let channel {
            self.channel = nil
            channel.close(promise: nil)
        }
        asking = false
        streaming = false
        line.clear()
        let delay = backoff.next()
        eventLoop.scheduleTask(in: .nanoseconds(Int64(delay / .nanoseconds(1)))) { _ = self.connect() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if received.readableBytes == 0 { received.clear() } else if received.readerIndex > 65_536 { received.discardReadBytes() }
        received.writeBuffer(&bytes)
        while channel != nil {
            if streaming {
                guard let ended = takeChunks() else { return }
                streaming = false
                answered(status: 200, body: nil, close: ended)
            } else if let (status, body, close) = takeResponse() {
                if let body {
                    answered(status: status, body: body, close: close)
                } else {
                    // The head of a streamed answer: its lines follow as chunks.
                    guard status == 200 else { return retry("HTTP \(status)") }
                    streaming = true
                    line.clear()
                }
            } else {
                return
            }
        }
    }

    /// Reads the chunks received so far, each line they complete a page with news; the answer's
    /// end (whether the server closes after it), or nil while it goes on.
    private func takeChunks() -> Bool? {
        while true {
            let size = received.withUnsafeReadableBytes { bytes -> (size: Int, headLength: Int)? in
                guard let end = Self.find(Self.lineEnd, in: bytes) else { return nil }
                var size = 0
                for byte in bytes[..<end] {
                    guard let digit = Self.hexDigit(byte) else { break }
                    size = size * 16 + digit
                }
                return (size, end + 2)
            }
            guard let size, received.readableBytes >= size.headLength + size.size + 2 else { return nil }
            received.moveReaderIndex(forwardBy: size.headLength)
            guard size.size > 0 else {
                received.moveReaderIndex(forwardBy: 2)
                return false
            }
            var chunk = received.readSlice(length: size.size)!
            received.moveReaderIndex(forwardBy: 2)
            while let newline = chunk.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                var part = chunk.readSlice(length: newline - chunk.readerIndex)!
                chunk.moveReaderIndex(forwardBy: 1)
                line.writeBuffer(&part)
                page(line)
                line.clear()
            }
            line.writeBuffer(&chunk)
        }
    }

    private static func hexDigit(_ byte: UInt8) -> Int? {
        switch byte {
        case 48...57: Int(byte - 48)
        case 97...102: Int(byte - 87)
        case 65...70: Int(byte - 55)
        default: nil
        }
    }

    private static let lineEnd = Array("\r\n".utf8)

    /// A page with news, on a wait's answer or a stream's line: the device moves on to its position.
    private func page(_ body: ByteBuffer) {
        if let position = Self.position(in: body), position != (device.epoch, device.since) {
            (device.epoch, device.since) = position
            fleet?.news(index, at: ContinuousClock.now)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The server closed the connection: mid-request it is a failure, between requests the next
        // wait goes on a new connection (as URLSession does with an idle connection it finds closed).
        guard context.channel === channel else { return }
        retry(asking ? "reset" : "closed between waits")
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard context.channel === channel else { return }
        retry(LoadBenchmark.cause(error))
    }

    private func answered(status: Int, body: ByteBuffer?, close: Bool) {
        asking = false
        guard status == 200 else {
            retry("HTTP \(status)")
            return
        }
        backoff.reset()
        if let body { page(body) }
        if close {
            retry("closed by the server")
        } else {
            ask()
        }
    }

    /// The page's `epoch` and `up_to`, found by scanning its bytes (a JSON decoder per answer would be
    /// a good part of the benchmark's own cost). A quote inside a value is escaped, so `"up_to":`
    /// is only ever the key.
    static func position(in body: ByteBuffer) -> (String, Int64)? {
        body.withUnsafeReadableBytes { bytes -> (String, Int64)? in
            guard let upTo = find(upToKey, in: bytes), let epochAt = find(epochKey, in: bytes) else { return nil }
            var since: Int64 = 0
            var index = upTo + upToKey.count
            while index < bytes.count, (48...57).contains(bytes[index]) {
                since = since * 10 + Int64(bytes[index] - 48)
                index += 1
            }
            let start = epochAt + epochKey.count
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
            return (String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self), since)
        }
    }

    private static let upToKey = Array(#""up_to":"#.utf8)
    private static let epochKey = Array(#""epoch":""#.utf8)
    private static let headEnd = Array("\r\n\r\n".utf8)
    private static let lengthKeys = [Array("\r\ncontent-length:".utf8), Array("\r\nContent-Length:".utf8)]
    private static let closeKeys = [Array("\r\nconnection: close".utf8), Array("\r\nConnection: close".utf8)]
    private static let chunkedKeys = [Array("\r\ntransfer-encoding: chunked".utf8), Array("\r\nTransfer-Encoding: chunked".utf8)]

    /// Where `needle` first is in `bytes` (memchr for its first byte, then memcmp).
    private static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, let first = needle.first, bytes.count >= needle.count else { return nil }
        return needle.withUnsafeBytes { needle -> Int? in
            var from = 0
            let last = bytes.count - needle.count
            while from <= last, let hit = memchr(base + from, Int32(first), last - from + 1) {
                let at = UnsafeRawPointer(hit) - base
                if memcmp(base + at, needle.baseAddress!, needle.count) == 0 { return at }
                from = at + 1
            }
            return nil
        }
    }

    /// One whole response from what was received (status, body, whether the server closes), if there
    /// is one; of a streamed (chunked) answer, its head only (no body).
    private func takeResponse() -> (Int, ByteBuffer?, Bool)? {
        let head = received.withUnsafeReadableBytes { bytes -> (status: Int, headLength: Int, length: Int, close: Bool, chunked: Bool)? in
            guard let end = Self.find(Self.headEnd, in: bytes) else { return nil }
            let head = UnsafeRawBufferPointer(rebasing: bytes[..<(end + 2)])
            // "HTTP/1.1 200 OK"
            guard head.count > 12 else { return (0, end + 4, 0, true, false) }
            let status = (Int(head[9]) - 48) * 100 + (Int(head[10]) - 48) * 10 + (Int(head[11]) - 48)
            var length = 0
            if let at = Self.lengthKeys.lazy.compactMap({ Self.find($0, in: head).map { $0 + Self.lengthKeys[0].count } }).first {
                var index = at
                while index < head.count, head[index] == UInt8(ascii: " ") { index += 1 }
                while index < head.count, (48...57).contains(head[index]) {
                    length = length * 10 + Int(head[index] - 48)
                    index += 1
                }
            }
            let close = Self.closeKeys.contains { Self.find($0, in: head) != nil }
            let chunked = Self.chunkedKeys.contains { Self.find($0, in: head) != nil }
            return (status, end + 4, length, close, chunked)
        }
        guard let head else { return nil }
        if head.chunked {
            received.moveReaderIndex(forwardBy: head.headLength)
            return (head.status, nil, head.close)
        }
        guard received.readableBytes >= head.headLength + head.length else { return nil }
        received.moveReaderIndex(forwardBy: head.headLength)
        return (head.status, received.readSlice(length: head.length)!, head.close)
    }
}
