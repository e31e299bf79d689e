import CentralStore
import Foundation
import TeamworkModel

/// The world most tests start from: a fresh migrated database seeded with
/// ``Fixtures`` (two teams, three workers, a manager, a site), a scratch
/// folder removed afterwards, and a connection to the store. Tests add their
/// own tasks and tokens to it rather than building a world of their own.
public struct TestWorld: Sendable {
    public var url: DatabaseURL
    /// A scratch folder of the test's own (removed when the test ends).
    public var folder: URL
    public var fixtures: Fixtures

    /// `folder/replicas`: where a test's replica files go.
    public var replicas: URL { folder.appending(path: "replicas") }

    /// Runs `body` in a new world; `name` prefixes the scratch folder, for a reader of /tmp.
    public static func with<R: Sendable>(
        _ name: String = "world",
        _ body: (TestWorld, CentralStore) async throws -> R
    ) async throws -> R {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "\(name)-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            return try await CentralStore.withStore(url) { store in
                let world = TestWorld(url: url, folder: folder, fixtures: try await Fixtures.seed(store))
                return try await body(world, store)
            }
        }
    }

    /// A new device token for `person`, as `teamwork-manager person token` issues one.
    public func token(for person: Person, label: String = "phone", _ store: CentralStore) async throws -> String {
        try await store.issueToken(personID: person.id, label: label).secret
    }
}
