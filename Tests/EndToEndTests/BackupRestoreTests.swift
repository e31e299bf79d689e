import Foundation
import LocalPostgres
import ObjectStore
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 65: the backup docs/operations.md describes, taken and restored: `pg_basebackup` of the
/// master and a copy of the bucket (by boto3, as `aws s3 sync` would), the original lost, a new
/// cluster made from the backup; the replicas are built again from it, and `verify` finds every
/// task and every attachment's file whole.
@Suite("A backup of the master and the bucket, restored")
struct BackupRestoreTests {
    @Test func aBaseBackupAndACopyOfTheBucketBringBackEveryTaskAndPhotoWithVerifyClean() async throws {
        // An object store, two clusters and a service: never beside the other heavy tests (MachineAlone).
        try await MachineAlone.run { try await Self.backupAndRestore() }
    }

    static func backupAndRestore() async throws {
        try await ObjectStoreServer.with { bucket in
            try await PrivateCluster.with("backup") { own in
                let url = own.url
                let base = own.directory.appending(path: "work")
                try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
                let (job, token) = try await CentralStore.withStore(url) { store in
                    try await Migrator().migrate(store)
                    let world = try await Fixtures.seed(store)
                    let job = try await store.createTask(try world.task("photo job", team: world.red, assignee: world.ann))
                    return (job.id, try await store.issueToken(personID: world.ann.id, label: "").secret)
                }
                let keys = ["AWS_ACCESS_KEY_ID": bucket.credentials.accessKey, "AWS_SECRET_ACCESS_KEY": bucket.credentials.secretKey]
                func address(_ name: String) -> String { "s3://\(name)?endpoint=\(bucket.endpoint.absoluteString)&region=us-east-1" }
                let service = ServiceProcess.run(
                    databaseURL: url.connectionString, replicas: base.appending(path: "replicas"), log: base.path + "/service.log")
                service.arguments += ["--blobs", address("teamwork-blobs")]
                service.environment = keys
                try await service.start()
                defer { if service.isRunning { service.stopInBackground() } }

                // A day's work with a photo, through the service into the master and the bucket.
                var random = SplitMix(seed: 65)
                let photo = Data([0xFF, 0xD8, 0xFF, 0xE0] + (0..<300_000).map { _ in UInt8(truncatingIfNeeded: random.next(256)) })
                let photoPath = base.appending(path: "meter.jpg")
                try photo.write(to: photoPath)
                let home = base.appending(path: "ann")
                #expect(try await WorkerTool.run(home, "login", "--server", service.url, "--token", token).status == 0)
                #expect(try await WorkerTool.run(home, "attach", String(job), photoPath.path).status == 0)
                #expect(try await WorkerTool.run(home, "complete", String(job), "--note", "meter photographed").status == 0)
                let synced = try await WorkerTool.run(home, "sync")
                #expect(synced.status == 0, "\(synced.stderr)")
                try await expectEventually("the completion and the photo on the master", within: .seconds(30)) {
                    try await CentralStore.withStore(url) { store in
                        let (task, attachments) = (try await store.task(id: job), try await store.attachments(ofTask: job))
                        return task.status == .completed && !attachments.isEmpty
                    }
                }
                _ = try await service.stop()

                // The backup: the master's cluster with its WAL, and every object of the bucket.
                let backup = own.directory.appending(path: "backup/base")
                try await blockingWork { try own.cluster.baseBackup(into: backup) }
                let copy = """
                    import boto3, os
                    s3 = boto3.client('s3', endpoint_url=os.environ['ENDPOINT'], region_name='us-east-1')
                    s3.create_bucket(Bucket='teamwork-restored')
                    n = 0
                    for page in s3.get_paginator('list_objects_v2').paginate(Bucket='teamwork-blobs'):
                        for o in page.get('Contents', []):
                            s3.copy_object(Bucket='teamwork-restored', Key=o['Key'], CopySource={'Bucket': 'teamwork-blobs', 'Key': o['Key']})
                            n += 1
                    print(n)
                    """
                let copied = try await Self.python(copy, environment: keys.merging(["ENDPOINT": bucket.endpoint.absoluteString]) { $1 })
                #expect(copied.status == 0 && (Int(copied.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 1, "\(copied)")

                // The original is lost; a new cluster is made from the backup.
                try await own.stop()
                let restoredDirectory = URL(fileURLWithPath: "/tmp/tw-rs-\(UUID().uuidString.prefix(8))")
                defer { try? FileManager.default.removeItem(at: restoredDirectory) }
                let restored = try await blockingWork {
                    try LocalCluster.restore(backup, into: .init(directory: restoredDirectory.appending(path: "pg")))
                }
                try await withCleanup {
                    try await blockingWork { _ = try restored.ensureRunning() }
                    let restoredURL = DatabaseURL(
                        endpoint: .unixSocket(path: restored.socketPath), username: LocalCluster.superuser, database: "postgres")
                    let task = try await CentralStore.withStore(restoredURL) { try await $0.task(id: job) }
                    #expect(task.status == .completed && task.completionNote == "meter photographed")

                    // The replicas are built again from the restored master, and every file is found whole in the copied bucket.
                    let replicas = restoredDirectory.appending(path: "replicas")
                    let rebuilt = try await Tool.service.run(
                        ["replicate", "--once", "--database-url", restoredURL.connectionString, "--replicas", replicas.path])
                    #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
                    let verified = try await Tool.service.run(
                        [
                            "verify", "--database-url", restoredURL.connectionString, "--replicas", replicas.path, "--blobs",
                            address("teamwork-restored"),
                        ], environment: keys)
                    #expect(
                        verified.status == 0 && verified.stdout.contains("every attachment's file is whole"),
                        "\(verified.stdout) \(verified.stderr)")
                    let manager = ManagerTool(databaseURL: restoredURL.connectionString, environment: keys)
                    let attachment = try #require(
                        try await CentralStore.withStore(restoredURL) { try await $0.attachments(ofTask: job) }.first)
                    let out = base.appending(path: "restored.jpg").path
                    _ = try await manager.ok(
                        "attachment", "get", String(attachment.id), "--output", out, "--blobs", address("teamwork-restored"))
                    #expect(FileManager.default.contents(atPath: out) == photo, "the very bytes, from the restored bucket")
                } cleanup: {
                    _ = try? await blockingWork { try restored.stop() }
                }
            }
        }
    }

    /// Runs a Python script (boto3 here: a client nobody here wrote), off the cooperative threads.
    static func python(_ script: String, environment: [String: String]) async throws -> (status: Int32, output: String) {
        try await blockingWork {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script]
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
