import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

#if canImport(Glibc)
    import Glibc
#endif

/// README.md's command lines, run: every `teamwork-manager`, `teamwork-service`
/// and `teamwork-worker` line of its shell blocks is taken from the README
/// itself (``DocumentedCommandsTests/documented()``, optional parts written
/// out), run against a throwaway database in an order a newcomer's first day
/// could take, and must end as the README says (exit 0, or the refusal it
/// names). Only example values are put in (a free port for 8080, the local
/// server for https://teamwork.example, a scratch folder for files, the id of
/// the conflict the walk made for 7); the README's task ids (12, 15) and token
/// id (3) are made to be the real ones. A README line that this walk does not
/// run, or runs with another outcome, fails here, naming it; so does a line of
/// docs/*.md that is neither one of README's nor tested elsewhere (listed below).
/// (`scripts/…` and `teamwork-bench` lines are the test and benchmark commands themselves.)
@Suite("README's command lines, run in a throwaway world")
struct DocumentedWalkTests {
    /// README lines not run by the walk, and where their behaviour is tested instead.
    static let elsewhere: [String: String] = [
        "teamwork-manager conflicts accept 8": "needs a completion the master set aside: ConflictDecisionTests, BoardTests",
        "teamwork-service listen --sweep 5": "runs until SIGTERM: ListenerProcessTests",
        "teamwork-service replicate --sweep 5": "runs until SIGTERM: ServiceCommandTests, ServiceFailureTests",
        "teamwork-service serve --host 127.0.0.1 --port 8080 --tls-cert F --tls-key F": "needs a certificate: HTTPSTests",
        "teamwork-worker watch": "runs until Ctrl-C: WatchEndToEndTests",
        "teamwork-service run --blobs s3://teamwork-blobs?endpoint=http://10.0.0.9:8333&region=us-east-1":
            "needs an object store: ObjectStoreTests (two hosts on one SeaweedFS bucket)",
        "teamwork-service verify --blobs s3://teamwork-blobs?endpoint=…": "needs an object store: ObjectStoreTests",
        "teamwork-manager attachment get 12 --output 12.jpg --blobs s3://…": "needs an object store: ObjectStoreTests",
        "teamwork-service listen": "runs until SIGTERM: ListenerProcessTests",
        "teamwork-service run": "README's `run` line is run above; plain `run`: ServiceCommandTests",
        "teamwork-manager person absence add bo@example.org --from now --to 2026-12-01 --reason sick":
            "a sick call on the day: DayPlanCLITests (absence from a time, re-plan from then)",
        "teamwork-manager day plan --team red --from now": "a re-plan on the day: DayPlanCLITests",
        "teamwork-manager day plan --team red --from now --apply": "a re-plan on the day, applied: DayPlanCLITests",
        "teamwork-manager webhook add --url https://billing.example/hooks --event task.completed --event task.cancelled":
            "needs a receiver (and DNS): WebhookTests, with one on this machine",
        "teamwork-manager webhook list": "WebhookTests",
        "teamwork-manager customer add --name Åsa Öberg --email asa@example.se --phone +46 70 123 45 67 --language sv --consent":
            "CustomerCLITests, as written",
        "teamwork-manager location customer 4 asa@example.se": "CustomerCLITests, as written",
        "teamwork-manager task create --title Replace heat pump --team red --location 4 --window 2026-12-03T10:00/PT2H":
            "CustomerCLITests, as written (its messages: CustomerMessagesEndToEndTests)",
        "teamwork-manager task messages 12": "CustomerCLITests, CustomerMessagesEndToEndTests",
        "teamwork-manager customer show asa@example.se": "CustomerCLITests",
        "teamwork-manager customer export asa@example.se": "CustomerCLITests",
        "teamwork-manager customer erase asa@example.se --yes": "CustomerCLITests",
        "teamwork-manager webhook rotate 1": "WebhookTests",
        "teamwork-manager webhook deliveries 1 --failed": "WebhookTests (the log, as JSON)",
        "teamwork-manager webhook replay 7": "WebhookTests",
        "teamwork-manager webhook pause 1 --reason billing is down for maintenance": "WebhookTests",
        "teamwork-manager webhook resume 1": "WebhookTests",
        "teamwork-manager webhook remove 1": "WebhookTests",
        "teamwork-service run --host 0.0.0.0 --port 8443 --tls-cert cert.pem --tls-key key.pem": "needs a certificate: TLSTests",
        "teamwork-manager person device pair ann@example.org --server https://teamwork.lan:8443 --qr":
            "README's pair line with another address: run above; the link on a phone: PhoneAppTests",
    ]

    final class Walk: @unchecked Sendable {
        let lines: [DocumentedCommandsTests.Line]
        var used = Set<Int>()
        let manager: ManagerTool
        let url: DatabaseURL
        let folder: URL
        let device: URL
        var substitutions: [String: String] = [:]

        init(url: DatabaseURL, folder: URL) throws {
            lines = try DocumentedCommandsTests.documented().filter { $0.file == "README.md" }
            // A home of its own: `db stop-local` must never reach the local default of whoever runs the tests.
            manager = ManagerTool(
                databaseURL: url.connectionString,
                environment: [
                    "TEAMWORK_HOME": folder.appending(path: "home").path,
                    // Where the walk's `teamwork-service run` keeps the files workers upload.
                    "TEAMWORK_BLOBS": folder.appending(path: "replicas/blobs").path,
                ])
            self.url = url
            self.folder = folder
            device = folder.appending(path: "device")
        }

        /// The README line of `tool` whose words start with `prefix`, with example values put in.
        func line(_ tool: String, _ prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> [String]? {
            let found = lines.indices.filter { index in
                !used.contains(index) && lines[index].tool == tool
                    && (lines[index].arguments.joined(separator: " ") + " ").hasPrefix(prefix + " ")
            }
            guard let index = found.first else {
                Issue.record("README.md has no (further) line `\(tool) \(prefix)`", sourceLocation: sourceLocation)
                return nil
            }
            used.insert(index)
            return lines[index].arguments.map { substitutions[$0] ?? $0 }
        }

        /// Runs a README line and checks it ends with `expected`; its result.
        @discardableResult
        func run(
            _ tool: String, _ prefix: String, expect expected: Int32 = 0, input: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> Tool.Run? {
            guard let arguments = line(tool, prefix, sourceLocation: sourceLocation) else { return nil }
            let result: Tool.Run
            switch tool {
            case "teamwork-manager": result = try await manager.run(arguments)
            case "teamwork-service":
                result = try await Tool.service.run(
                    arguments + [
                        "--database-url", url.connectionString,
                        "--replicas", folder.appending(path: "replicas").path,
                    ])
            default: result = try await WorkerTool.run(device, arguments, input: input)
            }
            #expect(
                result.status == expected, "README.md: \(tool) \(arguments.joined(separator: " ")) → \(result.status): \(result.stderr)",
                sourceLocation: sourceLocation)
            return result
        }

        /// A step the README leaves to the reader (more people, a second task), run as given.
        @discardableResult
        func given(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) async throws -> Tool.Run {
            let result = try await manager.run(arguments)
            #expect(result.status == 0, "given: \(arguments.joined(separator: " ")): \(result.stderr)", sourceLocation: sourceLocation)
            return result
        }
    }

    @Test func everyCommandLineOfTheReadmeRunsAsItSays() async throws {
        try await TestDatabase.withFresh { url in
            let folder = FileManager.default.temporaryDirectory.appending(path: "doc-walk-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await CentralStore.withStore(url) { store in
                let walk = try Walk(url: url, folder: folder)
                /// The next id `sequence` gives is `next`.
                func nextID(_ sequence: String, _ next: Int) async throws {
                    _ = try await store.rows("SELECT setval(\(sequence)::regclass, \(next - 1))")
                }
                let csv = folder.appending(path: "tasks.csv")
                walk.substitutions = [
                    "map.html": folder.appending(path: "map.html").path, "tasks.csv": csv.path,
                    "prices.csv": folder.appending(path: "prices.csv").path,
                    "swaps.csv": folder.appending(path: "swaps.csv").path,
                    "meter.jpg": folder.appending(path: "meter.jpg").path,
                    "signature.png": folder.appending(path: "signature.png").path,
                    "fetched.jpg": folder.appending(path: "fetched.jpg").path,
                ]
                // A photo and a signature, as a phone's camera and a signing pad would leave them.
                try Data([0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 7, count: 5_000)).write(to: folder.appending(path: "meter.jpg"))
                try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 1, count: 900))
                    .write(to: folder.appending(path: "signature.png"))

                // Schema.
                try await walk.run("teamwork-manager", "db migrate")
                try await walk.run("teamwork-manager", "db status")
                // Teams and people.
                try await walk.run("teamwork-manager", "team add red")
                try await walk.run("teamwork-manager", "person add --first Ann")
                try await walk.given(
                    "person", "add", "--first", "Bo", "--last", "Berg", "--email", "bo@example.org", "--role", "worker",
                    "--skills", "electrical")
                try await walk.given("person", "add", "--first", "Cy", "--last", "Cole", "--email", "cy@example.org", "--role", "worker")
                try await walk.given("team", "add-member", "red", "bo@example.org")
                try await walk.run("teamwork-manager", "person list --role worker --team red")
                try await walk.run("teamwork-manager", "person show ann@example.org")
                try await walk.run("teamwork-manager", "team list")
                try await walk.run("teamwork-manager", "team show red")
                try await walk.run("teamwork-manager", "team update red --name")
                try await walk.run("teamwork-manager", "team update red --share-positions")
                try await walk.run("teamwork-manager", "team add-member red ann@example.org")
                try await walk.run("teamwork-manager", "person update ann@example.org --default-team red")
                try await walk.run("teamwork-manager", "person update ann@example.org --skills")
                // Her token: the README's id 3.
                try await nextID("access_tokens_id_seq", 3)
                let issued = try await walk.run("teamwork-manager", "person token issue ann@example.org")
                let token = try #require(
                    issued?.stdout.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("tw_") }.map(String.init),
                    "the token is printed once: \(issued?.stdout ?? "")")
                try await walk.run("teamwork-manager", "person token list")
                // Her phone: a pairing link (and its QR code), then cancelled before it is used.
                let paired = try await walk.run("teamwork-manager", "person device pair ann@example.org")
                #expect(paired?.stdout.hasPrefix("https://teamwork.example/app/pair?code=") == true, "\(paired?.stdout ?? "")")
                #expect(paired?.stderr.contains("█") == true, "--qr draws the code: \(paired?.stderr ?? "")")
                try await walk.run("teamwork-manager", "person device cancel ann@example.org")
                try await walk.run("teamwork-manager", "person calendar issue ann@example.org")
                try await walk.run("teamwork-manager", "person calendar revoke ann@example.org")
                // The parts catalogue: added, repriced, listed, a price list imported, exported.
                try await walk.run("teamwork-manager", "part add --code CBL-3x2.5")
                try await walk.run("teamwork-manager", "part update CBL-3x2.5")
                try await walk.run("teamwork-manager", "part list")
                try Data("code,name,unit,price,currency\nFUSE-16,Fuse 16 A,piece,12.50,SEK\n".utf8)
                    .write(to: folder.appending(path: "prices.csv"))
                try await walk.run("teamwork-manager", "part import prices.csv")
                let prices = try await walk.run("teamwork-manager", "part export")
                #expect(prices?.stdout.contains("FUSE-16,Fuse 16 A,piece,12.50,SEK") == true, "\(prices?.stdout ?? "")")
                // Locations.
                try await walk.run("teamwork-manager", "location add --name")
                try await walk.run("teamwork-manager", "location list")
                try await walk.run("teamwork-manager", "location show 1")
                // Tasks: the README's 12 is the first, 15 a free one to claim.
                try await nextID("tasks_id_seq", 12)
                try await walk.run("teamwork-manager", "task create --title Replace meter")
                try await walk.run("teamwork-manager", "task create --title Deliver parts")
                try await nextID("tasks_id_seq", 15)
                try await walk.given("task", "create", "--title", "Check pole 12", "--team", "red")
                try await walk.run("teamwork-manager", "task list")
                try await walk.run("teamwork-manager", "task show 12")
                // The README's versions: 3 for the update, 4 for the assignment after it.
                try await walk.given("task", "update", "12", "--description", "meter 4411")
                try await walk.given("task", "update", "12", "--description", "meter 4411, cellar")
                try await walk.run("teamwork-manager", "task update 12 --title")
                try await walk.run("teamwork-manager", "task assign 12 --team red --assignee bo@example.org")
                try await walk.run("teamwork-manager", "task update 12 --window")
                try await walk.run("teamwork-manager", "task update 12 --set")
                try await walk.run("teamwork-manager", "suggest 12")
                try await walk.run("teamwork-manager", "day plan --team red --on 2026-12-01")
                try await walk.run("teamwork-manager", "person hours ann@example.org")
                try await walk.run("teamwork-manager", "person absence add bo@example.org")
                try await walk.run("teamwork-manager", "person absence list")
                try await walk.run("teamwork-manager", "person absence remove 1")
                try await walk.run("teamwork-manager", "team update red --depot 1")
                try await walk.run("teamwork-manager", "person update ann@example.org --home 1")
                try await walk.run("teamwork-manager", "task update 12 --duration 90")
                try await walk.run("teamwork-manager", "day plan --team red --on 2026-12-01 --apply")
                try await walk.run("teamwork-manager", "task assign 12 --suggested")
                try await walk.run("teamwork-manager", "task assign 12 --assignee ann@example.org")
                // Recurring work: the README's plan 1 on the README's days.
                try await walk.run("teamwork-manager", "plan add --title Substation inspection")
                try await walk.run("teamwork-manager", "plan list")
                try await walk.run("teamwork-manager", "plan show 1")
                try await walk.run("teamwork-manager", "plan update 1")
                try await walk.run("teamwork-manager", "plan skip 1 2027-01-04")
                try await walk.run("teamwork-manager", "plan move 1 2027-02-01 2027-02-02")
                try await walk.run("teamwork-manager", "plan pause 1")
                try await walk.run("teamwork-manager", "plan resume 1")
                try await walk.run("teamwork-manager", "plan generate")
                try await walk.run("teamwork-manager", "plan remove 1")
                // Checklists: task 12 carries the README's, in its second version.
                try await walk.run("teamwork-manager", "checklist add Meter swap")
                try await walk.run("teamwork-manager", "checklist update Meter swap")
                try await walk.run("teamwork-manager", "checklist list")
                try await walk.run("teamwork-manager", "checklist show Meter swap")
                try await walk.run("teamwork-manager", "task update 12 --checklist")
                try await walk.run("teamwork-manager", "task checklist 12")
                try await walk.run("teamwork-manager", "checklist export Meter swap")
                try await walk.run("teamwork-manager", "map --geojson")
                try await walk.run("teamwork-manager", "map --html")
                #expect(FileManager.default.fileExists(atPath: folder.appending(path: "map.html").path))
                try await walk.run("teamwork-manager", "report")
                try await walk.run("teamwork-manager", "report materials --from 2026-12-01 --to 2026-12-07")
                try await walk.run("teamwork-manager", "report labour --from 2026-12-01 --to 2026-12-07")
                let week = try await walk.run("teamwork-manager", "report timesheet --week 2026-W49")
                #expect(week?.stdout.contains("person_id,person,date,work_minutes") == true, "payroll's CSV: \(week?.stdout ?? "")")
                // A week before the walk's own days (it runs on the wall clock's, from 2026-12-07 on).
                let closed = try await walk.run("teamwork-manager", "report timesheet --close 2026-W48")
                #expect(closed?.stdout.contains("Payroll is closed through 2026-11-29 (week 2026-W48)") == true, "\(closed?.stdout ?? "")")

                // The service, once per run.
                try await walk.run("teamwork-service", "replicate --full")
                try await walk.run("teamwork-service", "replicate --once")
                try await walk.run("teamwork-service", "verify")
                try await walk.run("teamwork-service", "listen --once")

                // Ann's device against `teamwork-service run`.
                let port = ServiceProcess.freePort()
                walk.substitutions["8080"] = String(port)
                walk.substitutions["https://teamwork.example:8443"] = "http://127.0.0.1:\(port)"
                let runLine = try #require(walk.line("teamwork-service", "run"))
                let service = ServiceProcess(
                    runLine + [
                        "--database-url", url.connectionString,
                        "--replicas", folder.appending(path: "replicas").path,
                    ],
                    port: port, log: folder.appending(path: "service.log").path)
                try await service.start()
                defer { service.stopInBackground() }
                try await expectEventually("replicas written") {
                    FileManager.default.fileExists(atPath: folder.appending(path: "replicas/generator-state.json").path)
                }
                try await walk.run("teamwork-worker", "login", input: token + "\n")
                try await walk.run("teamwork-worker", "sync")
                try await walk.run("teamwork-worker", "teams")
                try await walk.run("teamwork-worker", "tasks --all")
                try await walk.run("teamwork-worker", "tasks --today")
                try await walk.run("teamwork-worker", "show 12")
                try await walk.run("teamwork-worker", "checklist 12")
                try await walk.run("teamwork-worker", "check 12 isolated")
                try await walk.run("teamwork-worker", "check 12 reading 48213")
                try await walk.run("teamwork-worker", "attach 12 meter.jpg")
                try await walk.run("teamwork-worker", "sign 12 --signer Jane Doe signature.png")
                // What she used: a catalogue part (added above) and a line of her own, listed from her device.
                let parts = try await walk.run("teamwork-worker", "parts")
                #expect(parts?.stdout.contains("CBL-3x2.5") == true, "the catalogue came with the common data: \(parts?.stdout ?? "")")
                try await walk.run("teamwork-worker", "used 12 CBL-3x2.5 12.5")
                try await walk.run("teamwork-worker", "used 12 --line Cable ties 20")
                let used = try await walk.run("teamwork-worker", "used 12")
                #expect(used?.stdout.contains("CBL-3x2.5") == true && used?.stdout.contains("Cable ties") == true, "\(used?.stdout ?? "")")
                // Her time: the work, and the drive there.
                try await walk.run("teamwork-worker", "time 12 --start 08:00 --end 10:30")
                try await walk.run("teamwork-worker", "time 12 --travel --start 07:35 --end 08:00")
                let time = try await walk.run("teamwork-worker", "time 12")
                #expect(time?.stdout.contains("2:30") == true && time?.stdout.contains("0:25") == true, "\(time?.stdout ?? "")")
                try await walk.run("teamwork-worker", "start 12")
                try await walk.run("teamwork-worker", "complete 12")
                try await walk.run("teamwork-worker", "claim 15")
                try await walk.run("teamwork-worker", "reopen 12")
                try await walk.run("teamwork-worker", "checkin")
                // `undo [CHANGE]`: the check-in, named by its id from `status --json`.
                let queued = try JSONSerialization.jsonObject(
                    with: Data(try await WorkerTool.run(walk.device, "status", "--json").stdout.utf8))
                walk.substitutions["CHANGE"] = try #require(
                    ((queued as? [String: Any])?["queued"] as? [[String: Any]])?.last?["change_id"] as? String)
                try await walk.run("teamwork-worker", "undo")
                try await walk.run("teamwork-worker", "status")
                // Meanwhile the manager gives 15 to Bo: Ann's claim, sent after, becomes a conflict.
                try await walk.given("task", "assign", "15", "--team", "red", "--assignee", "bo@example.org")
                let sent = try await WorkerTool.run(walk.device, "sync")
                #expect(sent.status == 0, "\(sent.stderr)")
                try await walk.run("teamwork-worker", "positions")
                try await expectEventually("the field's changes reach the master", every: .milliseconds(200)) {
                    let shown = try await walk.manager("task", "show", "12", "--json").stdout
                    let conflicts = try await walk.manager("conflicts", "--all", "--json").stdout
                    return shown.contains("\"in_progress\"") && !conflicts.contains("[]")
                }
                try await expectEventually("the photo and the signature reach the master", every: .milliseconds(200)) {
                    try await walk.manager("task", "attachments", "12", "--json").stdout.contains("Jane Doe")
                }
                try await walk.run("teamwork-manager", "task attachments 12")
                // What she used reached the master; the manager reads it, then corrects her cable.
                try await expectEventually("what was used reaches the master", every: .milliseconds(200)) {
                    try await walk.manager("task", "used", "12", "--json").stdout.contains("Cable ties")
                }
                try await walk.run("teamwork-manager", "task used 12")
                let corrected = try await walk.run("teamwork-manager", "task used 12 CBL-3x2.5 10")
                #expect(corrected?.stdout.contains("CBL-3x2.5") == true, "\(corrected?.stdout ?? "")")
                // Her time reached the master too; the manager reads it, then corrects her work.
                try await expectEventually("her time reaches the master", every: .milliseconds(200)) {
                    try await walk.manager("task", "time", "12", "--json").stdout.contains("travel")
                }
                try await walk.run("teamwork-manager", "task time 12")
                let retimed = try await walk.run("teamwork-manager", "task time 12 --start 08:00 --end 11:00")
                #expect(retimed?.stdout.contains("3:00") == true, "\(retimed?.stdout ?? "")")
                let attachments = try JSONSerialization.jsonObject(
                    with: Data(try await walk.manager("task", "attachments", "12", "--json").stdout.utf8))
                let photo = try #require(
                    (attachments as? [[String: Any]])?.first { $0["media_type"] as? String == "image/jpeg" }?["id"] as? Int)
                walk.substitutions["1"] = String(photo)
                try await walk.run("teamwork-manager", "attachment get 1")
                #expect(
                    FileManager.default.contents(atPath: folder.appending(path: "fetched.jpg").path)
                        == FileManager.default.contents(atPath: folder.appending(path: "meter.jpg").path))
                walk.substitutions["1"] = nil
                #expect(service.isRunning)
                #expect(try await service.stop() == 0, "run ends cleanly on SIGTERM")

                // Field changes the master could not take as they were.
                try await walk.run("teamwork-manager", "conflicts --all --task 12")
                let conflicts = try await walk.manager("conflicts", "--all", "--json").stdout
                let listed = try JSONSerialization.jsonObject(with: Data(conflicts.utf8)) as? [[String: Any]] ?? []
                let conflict = try #require(listed.first?["id"] as? Int, "Ann's late claim is a conflict: \(conflicts)")
                walk.substitutions["7"] = String(conflict)
                try await walk.run("teamwork-manager", "conflicts resolve 7")
                try await walk.run("teamwork-manager", "task history 12")
                try await walk.run("teamwork-manager", "task cancel 12")
                try await walk.run("teamwork-manager", "task reopen 12")
                try await walk.run("teamwork-manager", "task delete 12")
                // The README's CSV example, imported as shown.
                let readme = try String(contentsOf: DocumentedCommandsTests.root.appending(path: "README.md"), encoding: .utf8)
                let example = try #require(
                    readme.components(separatedBy: "```csv\n").dropFirst().first?.components(separatedBy: "```").first)
                try Data(example.utf8).write(to: csv)
                try await walk.run("teamwork-manager", "task import tasks.csv")

                // People leave.
                try await walk.run("teamwork-manager", "person token revoke 3")
                try await walk.run("teamwork-manager", "team remove-member red ann@example.org")
                try await walk.run("teamwork-manager", "person deactivate ann@example.org")
                try await walk.run("teamwork-manager", "person reactivate ann@example.org")
                // "only for someone no task names": her tasks were deleted or handed back to the team.
                try await walk.run("teamwork-manager", "person remove ann@example.org")
                // "refused while the team has tasks".
                try await walk.run("teamwork-manager", "team remove red", expect: TeamworkError.Code.conflict.exitStatus)
                // On the local default only; elsewhere it says there is nothing of its own to stop.
                try await walk.run("teamwork-manager", "db stop-local")

                for (index, line) in walk.lines.enumerated() where !walk.used.contains(index) {
                    let text = "\(line.tool) \(line.arguments.joined(separator: " "))"
                    #expect(Self.elsewhere[text] != nil, "README.md line not run by this walk nor tested elsewhere: \(text)")
                }
                // docs/*.md: their lines of the three tools are README's (run above) or tested elsewhere.
                let run = Set(walk.used.map { "\(walk.lines[$0].tool) \(walk.lines[$0].arguments.joined(separator: " "))" })
                for line in try DocumentedCommandsTests.documented() where line.file != "README.md" {
                    let text = "\(line.tool) \(line.arguments.joined(separator: " "))"
                    #expect(
                        run.contains(text) || Self.elsewhere[text] != nil,
                        "\(line.file): not run by this walk nor tested elsewhere: \(text)")
                }
            }
        }
    }
}
