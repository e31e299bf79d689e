import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import TeamworkTestSupport
import Testing

/// The phone app's own files, as a phone's browser asks for them again each time it is online.
@Suite("The phone app's files")
struct FieldAppFilesTests {
    /// Issue 66: seen on main, a phone asking with the ETag of the copy it holds got the whole file
    /// again (200 and every byte), at every start. A copy it holds is now answered 304, no body.
    @Test func aFileThePhoneHoldsAlreadyIsAnswered304WithoutItsBytes() async throws {
        try await SyncServerTests().withServer { _, client in
            for path in ["/app/app.js", "/app/", "/app/app.css"] {
                let first = try await client.execute(uri: path, method: .get)
                #expect(first.status == .ok && first.body.readableBytes > 0, "\(path)")
                let etag = try #require(first.headers[.eTag], "\(path) has an ETag")
                let held = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag])
                #expect(held.status == .notModified && held.body.readableBytes == 0, "\(path): \(held.status)")
                #expect(held.headers[.eTag] == etag && held.headers[.cacheControl] == "no-cache")
                // Among others, or weak (the field compares weakly): the same.
                let listed = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: "\"0000\", W/\(etag)"])
                #expect(listed.status == .notModified, "\(path): \(listed.status)")
                // Another copy: the file, whole.
                let other = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: "\"0000\""])
                #expect(other.status == .ok && other.body == first.body, "\(path): \(other.status)")
            }
        }
    }

    /// Issue 66: seen on main, every file went uncompressed (231 KiB for a first load). A browser that
    /// takes gzip gets each text file gzipped, with a tag of its own and `Vary`, and gunzip (the
    /// system's, not ours) gives back the very bytes sent to a browser that does not; the gzipped
    /// copy's tag gets 304 too. An image is sent as it is.
    @Test func textFilesGoGzippedToABrowserThatTakesItAndGunzipToTheSameBytes() async throws {
        try await SyncServerTests().withServer { _, client in
            var plain = 0, packed = 0
            for path in ["/app/", "/app/app.js", "/app/app.css", "/app/sync.js", "/app/sw.js", "/app/manifest.webmanifest"] {
                let identity = try await client.execute(uri: path, method: .get, headers: [.acceptEncoding: "identity"])
                #expect(identity.status == .ok && identity.headers[.contentEncoding] == nil, "\(path)")
                let gzipped = try await client.execute(uri: path, method: .get, headers: [.acceptEncoding: "br;q=1, gzip;q=0.8"])
                #expect(gzipped.headers[.contentEncoding] == "gzip" && gzipped.headers[.vary] == "Accept-Encoding", "\(path)")
                #expect(gzipped.headers[.eTag] != identity.headers[.eTag], "\(path): one tag per coding")
                #expect(gzipped.body.readableBytes < identity.body.readableBytes, "\(path): \(gzipped.body.readableBytes)")
                let unpacked = try Self.gunzip(Data(gzipped.body.readableBytesView))
                #expect(unpacked == Data(identity.body.readableBytesView), "\(path)")
                let held = try await client.execute(
                    uri: path, method: .get, headers: [.acceptEncoding: "gzip", .ifNoneMatch: try #require(gzipped.headers[.eTag])])
                #expect(held.status == .notModified, "\(path)")
                let refused = try await client.execute(uri: path, method: .get, headers: [.acceptEncoding: "gzip;q=0, *"])
                #expect(refused.headers[.contentEncoding] == nil, "\(path): gzip;q=0 is a refusal")
                (plain, packed) = (plain + identity.body.readableBytes, packed + gzipped.body.readableBytes)
            }
            #expect(packed * 3 < plain, "\(packed) of \(plain) bytes")
            let icon = try await client.execute(uri: "/app/icon-192.png", method: .get, headers: [.acceptEncoding: "gzip"])
            #expect(icon.status == .ok && icon.headers[.contentEncoding] == nil)
        }
    }

    static func gunzip(_ data: Data) throws -> Data {
        let folder = FileManager.default.temporaryDirectory.appending(path: "gz-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appending(path: "f.gz")
        try data.write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-d", file.path]
        try process.run()
        process.waitUntilExit()
        return try Data(contentsOf: folder.appending(path: "f"))
    }
}
