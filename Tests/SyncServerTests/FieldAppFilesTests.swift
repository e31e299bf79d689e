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
}
