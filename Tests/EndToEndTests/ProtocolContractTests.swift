import BlobStore
import CentralStore
import Crypto
import Foundation
import HTTPTypes
import ReplicaGenerator
import SyncProtocol
import TeamworkModel
import TeamworkTestSupport
import Testing
import WebPush

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The running `teamwork-service run` answers every endpoint as
/// `docs/openapi.json` says: each status it sends is declared for that
/// operation, and each body validates against the declared schema, errors
/// included. What the worker sends validates too.
@Suite("Sync protocol: the OpenAPI contract")
struct ProtocolContractTests {
    struct Call: CustomStringConvertible {
        var method: String
        /// The document's path template.
        var template: String
        var path: String
        var token: String?
        var body: Data?
        var headers: [String: String] = [:]
        var status: Int
        var description: String { "\(method) \(path) → \(status)" }
    }

    @Test func everyEndpointsAnswersMatchTheDocument() async throws {
        let contract = try OpenAPIContract()
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "contract-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let (world, ann, task) = try await CentralStore.withStore(url) { store in
                let world = try await Fixtures.seed(store)
                let task = try await store.createTask(try world.task("red job", team: world.red, assignee: world.ann))
                _ = try await store.createTask(try world.task("bo's own", assignee: world.bo))
                return (world, try await store.issueToken(personID: world.ann.id, label: "").secret, task)
            }
            let replicas = folder.appending(path: "replicas")
            try await ReplicaGenerator(.init(databaseURL: url, directory: replicas)).rebuildAll()
            let port = ServiceProcess.freePort()
            let service = ServiceProcess(
                [
                    "run", "--database-url", url.connectionString, "--replicas", replicas.path,
                    "--port", String(port), "--sweep", "0.5",
                ], port: port, log: folder.path + ".log")
            try await service.start()
            defer { service.stopInBackground() }
            // /health is 503 until the listener's first pass (also declared; checked once it is up).
            try await expectEventually("the service healthy", within: .seconds(30)) { await LocalHTTP.health(port: port)?.status == 200 }

            // What the worker's own types send.
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let push = try encoder.encode(
                PushRequest(changes: [
                    WorkerChange(id: "c-1", operation: .start, taskID: task.id, madeAt: Date()),
                    WorkerChange(id: "c-2", operation: .checkin, madeAt: Date(), latitude: 59.3, longitude: 18.1),
                ]))
            try contract.validate(
                try JSONSerialization.jsonObject(with: push), against: try #require(contract.schema(named: "PushRequest")))

            // A photo, and an attachment naming it once it is uploaded.
            let photo = Data([0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 9, count: 3_000))
            let digest = BlobDigest(of: photo).hex
            let attach = try encoder.encode(
                PushRequest(changes: [
                    WorkerChange(
                        id: "c-3", operation: .attach, taskID: task.id, madeAt: Date(), blob: digest, size: Int64(photo.count),
                        mediaType: "image/jpeg")
                ]))
            try contract.validate(
                try JSONSerialization.jsonObject(with: attach), against: try #require(contract.schema(named: "PushRequest")))
            let blob = "/v1/blobs/{sha256}"
            func piece(_ offset: Int, _ length: Int) -> [String: String] {
                ["Content-Type": "application/offset+octet-stream", "Upload-Offset": String(offset), "Upload-Length": String(length)]
            }
            let text = Data("plain text".utf8)

            let red = "team-\(world.red.id)", blue = "team-\(world.blue.id)"
            // A phone's push subscription, as a browser gives it.
            let p256dh = WebPush.base64URL(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            let subscription = Data(
                #"{"endpoint":"https://push.example.org/send/abc","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"AAECAwQFBgcICQoLDA0ODw"}}"#
                    .utf8)
            let changes = "/v1/replicas/{name}/changes"
            let calls: [Call] = [
                Call(method: "GET", template: "/health", path: "/health", status: 200),
                Call(method: "GET", template: "/metrics", path: "/metrics", status: 200),
                Call(method: "GET", template: "/v1/replicas", path: "/v1/replicas", token: ann, status: 200),
                Call(method: "GET", template: "/v1/replicas", path: "/v1/replicas", status: 401),
                Call(method: "GET", template: "/v1/positions", path: "/v1/positions", token: ann, status: 200),
                Call(method: "GET", template: "/v1/positions", path: "/v1/positions", token: "tw_nope", status: 401),
                Call(method: "GET", template: changes, path: "/v1/replicas/\(red)/changes", token: ann, status: 200),
                Call(method: "GET", template: changes, path: "/v1/replicas/common/changes?limit=2", token: ann, status: 200),
                Call(method: "GET", template: changes, path: "/v1/replicas/\(red)/changes?since=0&wait=1", token: ann, status: 200),
                Call(method: "GET", template: changes, path: "/v1/replicas/\(red)/changes?limit=1&stream=1", token: ann, status: 200),
                Call(method: "GET", template: changes, path: "/v1/replicas/\(red)/changes?stream=1&wait=1", token: ann, status: 400),
                Call(method: "GET", template: changes, path: "/v1/replicas/\(red)/changes?since=-1", token: ann, status: 400),
                Call(method: "GET", template: changes, path: "/v1/replicas/\(red)/changes?wait=99", token: ann, status: 400),
                Call(method: "GET", template: changes, path: "/v1/replicas/\(blue)/changes", token: ann, status: 403),
                Call(method: "GET", template: changes, path: "/v1/replicas/secrets/changes", token: ann, status: 404),
                Call(method: "GET", template: changes, path: "/v1/replicas/person-\(world.ann.id)/changes", token: ann, status: 404),
                Call(method: "POST", template: changes, path: "/v1/replicas/\(red)/changes", token: ann, body: push, status: 200),
                Call(
                    method: "POST", template: changes, path: "/v1/replicas/\(red)/changes", token: ann,
                    body: Data("{\"changes\": [{]}".utf8), status: 400),
                Call(
                    method: "POST", template: changes, path: "/v1/replicas/\(red)/changes", token: ann,
                    body: Data(#"{"changes": [], "extra": 1}"#.utf8), status: 400),
                Call(method: "POST", template: changes, path: "/v1/replicas/common/changes", token: ann, body: push, status: 403),
                Call(method: "POST", template: changes, path: "/v1/replicas/\(blue)/changes", token: ann, body: push, status: 403),
                Call(
                    method: "POST", template: changes, path: "/v1/replicas/person-\(world.ann.id)/changes", token: ann, body: push,
                    status: 404),
                Call(
                    method: "POST", template: changes, path: "/v1/replicas/\(red)/changes", token: ann,
                    body: Data(repeating: 0x20, count: PushRequest.maximumBodySize + 1), status: 413),
                Call(method: "POST", template: changes, path: "/v1/replicas/\(red)/changes", token: nil, body: push, status: 401),
                Call(method: "HEAD", template: blob, path: "/v1/blobs/\(digest)", token: ann, status: 200),
                Call(method: "HEAD", template: blob, path: "/v1/blobs/NOT-A-DIGEST", token: ann, status: 400),
                Call(method: "HEAD", template: blob, path: "/v1/blobs/\(digest)", status: 401),
                Call(
                    method: "PATCH", template: blob, path: "/v1/blobs/\(digest)", token: ann, body: photo.prefix(1_000),
                    headers: piece(0, photo.count), status: 200),
                Call(
                    method: "PATCH", template: blob, path: "/v1/blobs/\(digest)", token: ann, body: photo.prefix(1_000),
                    headers: piece(0, photo.count), status: 409),
                Call(
                    method: "PATCH", template: blob, path: "/v1/blobs/\(digest)", token: ann, body: photo.dropFirst(1_000),
                    headers: piece(1_000, photo.count), status: 201),
                Call(
                    method: "PATCH", template: blob, path: "/v1/blobs/\(digest)", token: ann, body: photo,
                    headers: piece(0, photo.count), status: 200),
                Call(
                    method: "PATCH", template: blob, path: "/v1/blobs/\(BlobDigest(of: text).hex)", token: ann, body: text,
                    headers: piece(0, text.count), status: 415),
                Call(
                    method: "PATCH", template: blob, path: "/v1/blobs/\(String(repeating: "a", count: 64))", token: ann, body: photo,
                    headers: piece(0, photo.count), status: 422),
                Call(
                    method: "PATCH", template: blob, path: "/v1/blobs/\(String(repeating: "b", count: 64))", token: ann, body: photo,
                    headers: piece(0, 26 * 1024 * 1024 + 1), status: 400),
                Call(method: "PATCH", template: blob, path: "/v1/blobs/\(digest)", token: ann, body: photo, status: 400),
                Call(method: "POST", template: changes, path: "/v1/replicas/\(red)/changes", token: ann, body: attach, status: 200),
                Call(method: "GET", template: "/v1/push", path: "/v1/push", token: ann, status: 200),
                Call(method: "GET", template: "/v1/push", path: "/v1/push", status: 401),
                Call(method: "PUT", template: "/v1/push", path: "/v1/push", token: ann, body: subscription, status: 204),
                Call(method: "PUT", template: "/v1/push", path: "/v1/push", token: ann, body: Data("{".utf8), status: 400),
                Call(
                    method: "PUT", template: "/v1/push", path: "/v1/push", token: ann,
                    body: Data(#"{"endpoint":"ftp://push.example.org/","keys":{"p256dh":"AA","auth":"AA"}}"#.utf8), status: 422),
                Call(method: "PUT", template: "/v1/push", path: "/v1/push", token: ann, body: Data(count: 5000), status: 413),
                // A push service on this machine: only where the service allows it for its tests.
                Call(
                    method: "PUT", template: "/v1/push", path: "/v1/push", token: ann,
                    body: Data(
                        #"{"endpoint":"http://127.0.0.1:9/push/abc","keys":{"p256dh":"\#(p256dh)","auth":"AAECAwQFBgcICQoLDA0ODw"}}"#.utf8),
                    status: 422),
                Call(method: "PUT", template: "/v1/push", path: "/v1/push", body: subscription, status: 401),
                Call(method: "DELETE", template: "/v1/push", path: "/v1/push", token: ann, status: 204),
            ]
            for call in calls {
                let method: HTTPRequest.Method =
                    switch call.method {
                    case "POST": .post
                    case "HEAD": .head
                    case "PATCH": .patch
                    case "PUT": .put
                    case "DELETE": .delete
                    default: .get
                    }
                var headers = call.headers
                if let token = call.token { headers["Authorization"] = "Bearer \(token)" }
                let response = try await LocalHTTP.request(method, port: port, call.path, headers: headers, body: call.body)
                let data = response.body
                #expect(response.status == call.status, "\(call): \(response.text.prefix(300))")
                do {
                    let sent = response.header("Content-Type") ?? ""
                    let declared = try contract.responseSchema(
                        path: call.template, method: call.method, status: response.status, sent: sent)
                    #expect(sent.hasPrefix(declared.contentType), "\(call): sent \(sent), declared \(declared.contentType)")
                    if let schema = declared.schema, declared.contentType == "application/json" {
                        try contract.validate(try JSONSerialization.jsonObject(with: data), against: schema)
                    }
                    if declared.contentType == "application/x-ndjson" {
                        // Each line is what the same request answers without `stream`.
                        let page = try #require(
                            try contract.responseSchema(
                                path: call.template, method: call.method, status: response.status,
                                sent: "application/json"
                            ).schema)
                        let lines = data.split(separator: UInt8(ascii: "\n"))
                        #expect(!lines.isEmpty, "\(call): a stream from position 0 sends the replica at once")
                        for line in lines { try contract.validate(try JSONSerialization.jsonObject(with: line), against: page) }
                    }
                } catch {
                    Issue.record("\(call): \(error)")
                }
            }
        }
    }

    @Test(arguments: [
        (#"{"results": [{"id": "a", "status": "accepted", "duplicate": false}], "accepted": 1, "rejected": 0}"#, true),
        (#"{"results": [], "accepted": 1, "rejected": 0, "surprise": 1}"#, false),
        (#"{"results": [], "rejected": 0}"#, false),
        (#"{"results": [{"id": "a", "status": "maybe", "duplicate": false}], "accepted": 1, "rejected": 0}"#, false),
        (#"{"results": [{"id": "a", "status": "accepted", "duplicate": 1}], "accepted": 1, "rejected": 0}"#, false),
        (#"{"results": [{"id": "a", "status": "accepted", "duplicate": false}], "accepted": 1.5, "rejected": 0}"#, false),
        (#"{"results": [{"id": 7, "status": "accepted", "duplicate": false}], "accepted": 1, "rejected": 0}"#, false),
    ])
    func theCheckerHoldsABodyToItsSchema(_ body: String, _ valid: Bool) throws {
        let contract = try OpenAPIContract()
        let schema = try #require(contract.schema(named: "PushResponse"))
        let value = try JSONSerialization.jsonObject(with: Data(body.utf8))
        let violation = (try? contract.validate(value, against: schema)) == nil
        #expect(violation != valid, "\(body)")
    }
}
