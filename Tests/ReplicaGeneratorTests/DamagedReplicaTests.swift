import CentralStore
import Foundation
import ReplicaGenerator
import TeamDatabase
import TeamworkModel
import TeamworkTestSupport
import Testing

/// A replica file damaged under a running service (a disk error, an operator's
/// slip) is whole again within a pass, without anything in it changing.
@Suite("teamwork-service: a damaged replica is rebuilt")
struct DamagedReplicaTests {
    @Test func aReplicaOverwrittenWithRandomBytesIsSetAsideAndRebuiltOnTheNextPassWithoutAnyChange() async throws {
        try await TestWorld.with("damaged") { world, store in
            let fixtures = world.fixtures
            _ = try await store.createTask(try fixtures.task("red job", team: fixtures.red))
            _ = try await store.createTask(try fixtures.task("blue job", team: fixtures.blue))
            let service = ServiceProcess.run(
                databaseURL: world.url.connectionString, replicas: world.replicas,
                log: world.folder.path + "/service.log", sweep: "0.3")
            try await service.start()
            defer { service.stopInBackground() }
            let blue = world.replicas.appending(path: ReplicaID.team(fixtures.blue.id).fileName).path
            try await expectEventually("the first replicas written", within: .seconds(20)) {
                FileManager.default.fileExists(atPath: world.replicas.appending(path: "generator-state.json").path)
            }
            var random = SplitMix(seed: 24)
            let size = (try FileManager.default.attributesOfItem(atPath: blue)[.size] as? Int) ?? 4096
            try Data((0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }).write(to: URL(fileURLWithPath: blue))
            #expect((try? ReplicaContents.read(path: blue)) == nil, "the file is damaged")

            // No master change touches the blue team: the pass alone must mend it.
            try await expectEventually("the damaged file rebuilt", within: .seconds(20)) {
                (try? ReplicaContents.read(path: blue).tasks.map(\.master.title)) == ["blue job"]
            }
            let setAside = try FileManager.default.contentsOfDirectory(atPath: world.replicas.appending(path: "damaged").path)
            #expect(setAside.count == 1 && setAside[0].hasPrefix(ReplicaID.team(fixtures.blue.id).fileName), "\(setAside)")
            #expect(service.logText.contains("a replica cannot be read"), "one line says what happened")
            let verify = try await Tool.service.run([
                "verify", "--database-url", world.url.connectionString, "--replicas", world.replicas.path,
            ])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
            #expect(try await service.stop() == 0)
        }
    }
}
