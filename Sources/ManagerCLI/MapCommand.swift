import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

struct MapCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "map",
        abstract: "Tasks and workers on a map: GeoJSON, or one self-contained HTML page.",
        discussion: """
            --geojson prints an RFC 7946 FeatureCollection: every task in scope (a Point at its site, or no \
            geometry without one) and every worker in scope at their last-known position. --html FILE writes a \
            page that shows the same with no network needed. Tasks of every status but cancelled unless --status.
            """
    )
    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print the map as GeoJSON.") var geojson = false
    @Option(help: "Write the map as one HTML page to this file.") var html: String?
    @Option(help: "Only this team's tasks and workers (slug or id).") var team: String?
    @Option(help: "open, assigned, in-progress, completed or cancelled (repeatable).") var status: [String] = []
    @Option(help: "Only tasks due before this ISO 8601 date.") var dueBefore: String?

    func validate() throws {
        if !geojson && html == nil { throw ValidationError("give --geojson, --html FILE, or both") }
    }

    func run() async throws {
        let now = Date()
        let statuses = try status.map(TaskStatus.parse)
        let dueBefore = try self.dueBefore.map { try ISODate.parse($0, field: "due-before") }
        let (map, slug) = try await connection.withStore { store in
            let team = try await team.asyncMap { try await store.team(reference: $0) }
            let filter = DispatchMap.Filter(teamIDs: team.map { [$0.id] } ?? [], statuses: statuses, dueBefore: dueBefore)
            return (try await DispatchMap.load(store, filter: filter, now: now), team?.slug)
        }
        if let html {
            let page = try MapPage.html(map, title: "Teamwork dispatch map" + (slug.map { ": \($0)" } ?? ""), generatedAt: now, team: slug)
            do {
                try Data(page.utf8).write(to: URL(fileURLWithPath: html), options: .atomic)
            } catch {
                let folder = URL(fileURLWithPath: html).deletingLastPathComponent().path
                let reason = FileManager.default.fileExists(atPath: folder) ? error.localizedDescription : "no folder \(folder)"
                throw TeamworkError(.cannotWrite, "cannot write \(html): \(reason)")
            }
            let placed = map.features.filter { $0.geometry != nil }.count
            Output.announce("Wrote \(html): \(map.features.count) features, \(placed) on the map")
        }
        if geojson { Output.write(try map.encoded(pretty: true) + Data("\n".utf8), to: STDOUT_FILENO) }
    }
}

struct SuggestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suggest",
        abstract: "Who should take a task: candidates ranked by skills, distance and workload, with reasons.",
        discussion: """
            Candidates are the task's team (or --team), or every worker for a task without a team. Someone \
            without a required skill is left out and said to be. The rest are ranked by the great-circle \
            distance from their last-known position to the task's site plus 5 km for each open task they hold \
            (urgent 2, high 1.5, normal 1, low 0.5) and 10 km for each one in the same window; people whose \
            position is unknown come last; ties go to the fresher position, then the lower id. \
            `task assign ID --suggested` assigns the first.
            """
    )
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "Task id.") var id: Int64
    @Option(help: "Rank this team's members instead of the task's team.") var team: String?
    @Option(help: "Show at most this many.") var limit: Int = 5
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() async throws {
        let ranking = try await connection.withStore { store in
            let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
            return try await store.suggest(taskID: id, teamID: teamID, limit: limit)
        }
        if output.json { return try Output.json(ranking) }
        if ranking.candidates.isEmpty {
            Output.line("Nobody can take task \(id): \(ranking.noneBecause)")
        } else {
            Output.table(
                ["#", "PERSON", "EMAIL", "WHY"],
                ranking.candidates.enumerated().map { index, c in
                    [String(index + 1), c.name, c.email, c.reasons.joined(separator: ", ")]
                }, maxWidth: 140)
        }
        for excluded in ranking.excluded { Output.line("Left out: \(excluded.name) \(excluded.reason)") }
    }
}
