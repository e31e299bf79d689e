import BlobStore
import EventListener
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ObjectStore
import ReplicaGenerator
import SyncServer
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// Issue 65: files in an S3-compatible bucket that every service host shares, tried against a real
/// SeaweedFS (`weed server -s3`) and read back by boto3, a client nobody here wrote. Before it (bac8c92,
/// as issue 65 reports), `--blobs s3://…` was a folder named `s3:` and an upload begun on one host was
/// unknown to the other (HEAD there answered offset 0); these tests could not be built there.
@Suite("Files in an object store shared by two hosts")
struct ObjectStoreTests {
    /// Two sync endpoints on one master and one bucket, each with a replica folder of its own.
    static func withTwoHosts(
        _ body: @escaping @Sendable (S3Location, TestWorld, TestWorld.Work, String, Int, Int) async throws -> Void
    ) async throws {
        try await ObjectStoreServer.with { bucket in
            try await TestWorld.with("s3") { base, store in
                let work = try await base.work(store)
                let ann = try await base.token(for: base.fixtures.ann, store)
                func host(_ name: String) async throws -> some ApplicationProtocol {
                    let folder = base.replicas.appending(path: name)
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try await ReplicaGenerator(.init(databaseURL: base.url, directory: folder)).rebuildAll()
                    var configuration = SyncServer.Configuration(databaseURL: base.url, replicasDirectory: folder)
                    configuration.metrics = { "" }
                    configuration.blobBucket = bucket
                    return try SyncServer.makeApplication(configuration, logger: Logger(label: "test-host-\(name)"))
                }
                let (a, b) = (try await host("a"), try await host("b"))
                try await a.test(.live) { hostA in
                    try await b.test(.live) { hostB in
                        try await body(bucket, base, work, ann, try #require(hostA.port), try #require(hostB.port))
                    }
                }
            }
        }
    }

    /// What boto3 finds in the bucket: each complete blob's key, size and SHA-256 of its bytes as read,
    /// then how many objects of unfinished uploads are left.
    static func boto3Report(_ bucket: S3Location) throws -> String {
        let script = """
            import boto3, hashlib, os
            s3 = boto3.client('s3', endpoint_url=os.environ['ENDPOINT'], region_name='us-east-1')
            keys = [o['Key'] for page in s3.get_paginator('list_objects_v2').paginate(Bucket='teamwork-blobs') for o in page.get('Contents', [])]
            for key in sorted(k for k in keys if k.startswith('blobs/')):
                body = s3.get_object(Bucket='teamwork-blobs', Key=key)['Body'].read()
                print(key, len(body), hashlib.sha256(body).hexdigest())
            print('partial', len([k for k in keys if k.startswith('partial/')]))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "ENDPOINT": bucket.endpoint.absoluteString, "AWS_ACCESS_KEY_ID": bucket.credentials.accessKey,
            "AWS_SECRET_ACCESS_KEY": bucket.credentials.secretKey,
        ]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "boto3 (pip install boto3) could not read the bucket")
        return String(decoding: data, as: UTF8.self)
    }

    @Test func anUploadCutOnOneHostFinishesOnTheOtherAndReadsBackIdenticalFromBothAndFromBoto3() async throws {
        try await Self.withTwoHosts { bucket, base, work, ann, portA, portB in
            // 18 MB: kept in pieces of 4 MiB, then named through a multipart upload of 8 MiB parts.
            let photo = BlobUploadTests.photo(18_000_000, seed: 65)
            let digest = BlobDigest(of: photo).hex
            // Begun on A, whose connection drops after 7 MB: what arrived is kept in the bucket.
            try await BlobUploadTests.cut(port: portA, digest, token: ann, length: photo.count, photo[0..<7_000_000])
            // B knows where it stands (once A has kept what it read), and takes the rest from there.
            var offset = 0
            _ = try await eventually(within: .seconds(60), every: .milliseconds(200)) {
                let held = try await BlobUploadTests.patchAlone(port: portB, digest, token: ann, offset: 0, length: photo.count, [][...])
                offset = Int(held.offset ?? "0") ?? 0
                return held.status == 409 && offset == 7_000_000
            }
            let rest = try await BlobUploadTests.patchAlone(
                port: portB, digest, token: ann, offset: offset, length: photo.count, photo[offset...])
            #expect(rest.status == 201, "\(rest)")
            // A sees it whole; an attachment pushed through A names it and is taken.
            let seen = try await BlobUploadTests.patchAlone(port: portA, digest, token: ann, offset: 0, length: photo.count, [][...])
            #expect(seen.status == 200 && seen.offset == String(photo.count))
            let body = """
                {"changes": [{"id": "claim-s3", "operation": "claim", "task_id": \(work.freeTask.id), "made_at": "\(ISO8601DateFormatter().string(from: Date()))"},
                             {"id": "attach-s3", "operation": "attach", "task_id": \(work.freeTask.id), "made_at": "\(ISO8601DateFormatter().string(from: Date()))",
                              "blob": "\(digest)", "size": \(photo.count), "media_type": "image/jpeg"}]}
                """
            let pushed = try await LocalHTTP.request(
                .post, port: portA, "/v1/replicas/team-\(base.fixtures.red.id)/changes",
                headers: ["Authorization": "Bearer \(ann)", "Content-Type": "application/json"], body: Data(body.utf8))
            #expect(pushed.status == 200 && pushed.text.contains("\"attach-s3\"") && !pushed.text.contains("waiting"), "\(pushed.text)")
            // A's listener takes the push to the master; the operator's `verify` and `attachment get` read the bucket.
            _ = try await EventListener(.init(databaseURL: base.url, directory: base.replicas.appending(path: "a"))).once()
            let keys = ["AWS_ACCESS_KEY_ID": bucket.credentials.accessKey, "AWS_SECRET_ACCESS_KEY": bucket.credentials.secretKey]
            let address = "s3://teamwork-blobs?endpoint=\(bucket.endpoint.absoluteString)&region=us-east-1"
            _ = try await ReplicaGenerator(.init(databaseURL: base.url, directory: base.replicas.appending(path: "b"))).rebuildAll()
            let verified = try await Tool.service.run(
                [
                    "verify", "--database-url", base.url.connectionString, "--replicas", base.replicas.appending(path: "b").path, "--blobs",
                    address,
                ],
                environment: keys)
            #expect(
                verified.status == 0 && verified.stdout.contains("every attachment's file is whole"),
                "\(verified.stdout) \(verified.stderr)")
            let manager = ManagerTool(databaseURL: base.url.connectionString, environment: keys)
            let listed = try JSONOutput.decode(
                [AttachmentRecord].self, try await manager.ok("task", "attachments", String(work.freeTask.id), "--json"))
            let out = base.folder.appending(path: "fetched.jpg").path
            _ = try await manager.ok("attachment", "get", String(try #require(listed.first).id), "--output", out, "--blobs", address)
            #expect(FileManager.default.contents(atPath: out) == Data(photo), "the manager gets the very bytes, from the bucket")
            // Read back through the store as every host reads it, and by boto3: the same bytes, nothing half-sent left.
            let store = S3BlobStore(client: S3Client(location: bucket))
            let read = try await blockingWork { try store.digestOfStored(BlobDigest(hex: digest)!) }
            #expect(read.hex == digest)
            #expect(try Self.boto3Report(bucket) == "blobs/\(digest) \(photo.count) \(digest)\npartial 0\n")
        }
    }

    @Test func bytesThatDoNotHashToTheirNameLeaveNothingInTheBucket() async throws {
        try await Self.withTwoHosts { bucket, _, _, ann, portA, _ in
            let photo = BlobUploadTests.photo(300_000, seed: 66)
            let wrong = BlobDigest(of: BlobUploadTests.photo(300_000, seed: 67)).hex
            let sent = try await BlobUploadTests.patchAlone(port: portA, wrong, token: ann, offset: 0, length: photo.count, photo[...])
            #expect(sent.status == 422)
            #expect(try Self.boto3Report(bucket) == "partial 0\n")
        }
    }

    /// A piece left over (two hosts writing one person's upload at once, or a removal that failed
    /// partway) is passed by: the offset still gets past it, the file is whole and right, and
    /// nothing of the upload stays once it is (the review of the bucket: it was a wall for a day).
    @Test func aPieceLeftOverFromARaceNeitherStopsTheUploadNorOutlivesIt() async throws {
        try await ObjectStoreServer.with { bucket in
            let client = S3Client(location: bucket)
            let store = S3BlobStore(client: client)
            let photo = BlobUploadTests.photo(300_000, seed: 68)
            let digest = BlobDigest(of: photo)
            try await blockingWork {
                try store.append(photo[0..<100_000], to: digest, by: 7, at: 0)
                // A shorter piece at an offset inside the first (as a race between two hosts leaves it).
                try store.announce(digest, by: 7)
            }
            try await client.put(store.pieceKey(digest, by: 7, at: 50_000), Data(photo[50_000..<60_000]))
            let before = try await blockingWork { (try store.state(of: digest, for: 7), try store.inventory().partial.count) }
            #expect(before.0 == .partial(100_000) && before.1 == 1, "one upload, held to 100,000 bytes")
            try await blockingWork {
                try store.append(photo[100_000...], to: digest, by: 7, at: 100_000)
                try store.finish(digest, by: 7)
            }
            let after = try await blockingWork {
                (try store.state(of: digest, for: 7), try store.digestOfStored(digest), try store.pending(of: 7))
            }
            #expect(after.0 == .complete(300_000) && after.1 == digest)
            #expect(after.2.files == 1 && after.2.bytes == 300_000, "the file pending once, no piece counted")
            #expect(try await client.list("partial/").isEmpty)
        }
    }

    @Test func anObjectStoreIsNamedByItsBucketAndEndpointWithItsKeysNeverOnTheCommandLine() throws {
        let keys = ["AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"]
        let named = try #require(
            try S3Location.parse("s3://teamwork-blobs?endpoint=http://10.0.0.5:8333&region=eu-north-1", environment: keys))
        #expect(named.bucket == "teamwork-blobs" && named.endpoint.absoluteString == "http://10.0.0.5:8333" && named.region == "eu-north-1")
        #expect(named.credentials == S3Credentials(accessKey: "id", secretKey: "secret"))
        #expect(try S3Location.parse("/srv/blobs", environment: keys) == nil, "a folder stays a folder")
        for bad in [
            "s3://id:secret@teamwork-blobs?endpoint=http://10.0.0.5:8333", "s3://TW?endpoint=http://h", "s3://teamwork-blobs/photos",
            "s3://teamwork-blobs?endpoint=ftp://h", "s3://teamwork-blobs?bucket=x",
        ] {
            #expect(throws: TeamworkError.self, "\(bad)") { try S3Location.parse(bad, environment: keys) }
        }
        #expect(throws: TeamworkError.self, "no keys anywhere") {
            try S3Location.parse("s3://teamwork-blobs?endpoint=http://h", environment: ["HOME": "/nonexistent"])
        }
        // From the credentials file, as the AWS tools read it.
        let file = FileManager.default.temporaryDirectory.appending(path: "credentials-\(UUID().uuidString)")
        try "[default]\naws_access_key_id = fileid\naws_secret_access_key = filesecret\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try #require(
            try S3Location.parse("s3://teamwork-blobs?endpoint=http://h", environment: ["AWS_SHARED_CREDENTIALS_FILE": file.path]))
        #expect(fromFile.credentials == S3Credentials(accessKey: "fileid", secretKey: "filesecret"))
    }
}
