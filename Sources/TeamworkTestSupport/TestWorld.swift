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

    /// The work most tests start from, one task of each kind a device meets.
    public struct Work: Sendable {
        /// Red's, assigned to Ann.
        public var annTask: FieldTask
        /// Red's, free-floating: anyone in red may claim it.
        public var freeTask: FieldTask
        /// Blue's: assigned to `blueAssignee` when given, else free.
        public var blueTask: FieldTask
    }

    /// Creates ``Work`` on the master.
    public func work(_ store: CentralStore, blueAssignee: Person? = nil) async throws -> Work {
        let ann = try await store.createTask(try fixtures.task("fix the meter", team: fixtures.red, assignee: fixtures.ann))
        let free = try await store.createTask(try fixtures.task("anyone in red", team: fixtures.red))
        let blue = try await store.createTask(try fixtures.task("blue job", team: fixtures.blue, assignee: blueAssignee))
        return Work(annTask: ann, freeTask: free, blueTask: blue)
    }

    /// A new device token for `person`, as `teamwork-manager person token` issues one.
    public func token(for person: Person, label: String = "phone", _ store: CentralStore) async throws -> String {
        try await store.issueToken(personID: person.id, label: label).secret
    }
}
