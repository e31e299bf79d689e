import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

struct TeamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "team",
        abstract: "Add, list, show, update and remove teams and their members.",
        subcommands: [Add.self, List.self, Show.self, Update.self, Remove.self, AddMember.self, RemoveMember.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a team.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Short unique name: a-z, 0-9 and '-', e.g. red-team.") var slug: String
        @Option(help: "Display name.") var name: String
        @Option(help: "What the team does.") var description: String = ""
        @Option(help: "Colour as #rrggbb.") var color: String?
        @Flag(help: "Members see each other's last-known positions (managers always do).") var sharePositions = false
        @Option(help: "The IANA time zone the team works in, e.g. Europe/Stockholm (default: TEAMWORK_TIME_ZONE, else UTC).")
        var timeZone: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let zone = timeZone ?? ProcessInfo.processInfo.environment["TEAMWORK_TIME_ZONE"].flatMap { $0.isEmpty ? nil : $0 } ?? "UTC"
            let new = try NewTeam(
                slug: slug, name: name, description: description, color: color, sharesPositions: sharePositions,
                timeZone: zone)
            let team = try await connection.withStore { try await $0.addTeam(new) }
            if output.json { try Output.json(team) } else { Output.line("Added team \(team.id): \(team.slug)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List teams with member and open-task counts.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        struct Line: Encodable {
            var team: Team
            var members: Int
            var openTasks: Int
        }

        func run() async throws {
            let lines = try await connection.withStore { try await $0.listTeams() }.map {
                Line(team: $0.team, members: $0.members, openTasks: $0.openTasks)
            }
            if output.json { return try Output.json(lines) }
            // Unfinished: open, assigned or in progress (the report's "open" means not assigned yet).
            Output.table(
                ["ID", "SLUG", "NAME", "MEMBERS", "UNFINISHED", "COLOR", "TIME ZONE"],
                lines.map {
                    [
                        String($0.team.id), $0.team.slug, $0.team.name, String($0.members), String($0.openTasks), $0.team.color ?? "-",
                        $0.team.timeZone,
                    ]
                })
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a team and its members.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Slug or id.") var team: String
        @OptionGroup var output: OutputOptions

        struct Details: Encodable {
            var team: Team
            var members: [TeamMember]
        }

        func run() async throws {
            let details = try await connection.withStore { store in
                let team = try await store.team(reference: team)
                return Details(team: team, members: try await store.members(teamID: team.id))
            }
            if output.json { return try Output.json(details) }
            let t = details.team
            Output.details([
                ("id", String(t.id)), ("slug", t.slug), ("name", t.name), ("description", t.description),
                ("color", t.color ?? "-"), ("time zone", t.timeZone),
                ("positions", t.sharesPositions ? "shared with members" : "managers only"),
                ("depot", t.depotLocationID.map { "location \($0)" } ?? "-"), ("minutes on site", String(t.taskMinutes)),
                ("travel", t.travelArea.rawValue),
                ("created", Output.date(t.createdAt)), ("updated", Output.date(t.updatedAt)),
            ])
            Output.line()
            Output.table(
                ["MEMBER", "NAME", "ROLE", "JOINED"],
                details.members.map {
                    [String($0.person.id), $0.person.displayName, $0.person.role.rawValue, Output.date($0.joinedAt)]
                })
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a team's details.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Slug or id.") var team: String
        @Option var slug: String?
        @Option var name: String?
        @Option var description: String?
        @Option(help: "Colour as #rrggbb.") var color: String?
        @Flag(help: "Remove the colour.") var clearColor = false
        @Flag(inversion: .prefixedNo, help: "Whether members see each other's last-known positions (managers always do).")
        var sharePositions: Bool?
        @Option(
            help:
                "The IANA time zone the team works in, e.g. Europe/Stockholm. Its tasks keep their instants and read on the new clock; its plans are remade at the same wall-clock time."
        )
        var timeZone: String?
        @Option(help: "Where its workers start and end the day unless they have a place of their own: a site's location id.")
        var depot: Int64?
        @Flag(help: "Remove the depot.") var clearDepot = false
        @Option(help: "Minutes on site of a task that does not say (1 to 720).") var taskMinutes: Int?
        @Option(help: "How drives are estimated: urban (×1.3 at 30 km/h) or rural (×1.4 at 60 km/h).") var travel: String?
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if color != nil && clearColor { throw ValidationError("use --color or --clear-color, not both") }
            if depot != nil && clearDepot { throw ValidationError("use --depot or --clear-depot, not both") }
            if let travel, TravelArea(rawValue: travel) == nil { throw ValidationError("--travel must be urban or rural") }
        }

        func run() async throws {
            let changes = try TeamChanges(
                slug: slug, name: name, description: description, color: clearColor ? .some(nil) : color.map { .some($0) },
                sharesPositions: sharePositions, timeZone: timeZone, depotLocationID: clearDepot ? .some(nil) : depot.map { .some($0) },
                taskMinutes: taskMinutes, travelArea: travel.flatMap(TravelArea.init(rawValue:))
            )
            guard !changes.isEmpty else { throw TeamworkError(.usage, "nothing to change; see --help") }
            let updated = try await connection.withStore { store in
                try await store.updateTeam(id: try await store.team(reference: team).id, changes)
            }
            if output.json { try Output.json(updated) } else { Output.line("Updated team \(updated.id): \(updated.slug)") }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a team (refused while it has tasks).")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Slug or id.") var team: String

        func run() async throws {
            let removed = try await connection.withStore { store in
                let target = try await store.team(reference: team)
                try await store.removeTeam(id: target.id)
                return target
            }
            Output.line("Removed team \(removed.id): \(removed.slug)")
        }
    }

    struct AddMember: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add-member", abstract: "Add a person to a team.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Team slug or id.") var team: String
        @Argument(help: "Person id or email.") var person: String

        func run() async throws {
            let (found, member) = try await connection.withStore { store in
                let found = try await store.team(reference: team)
                let member = try await store.person(reference: person)
                try await store.addMember(teamID: found.id, personID: member.id)
                return (found, member)
            }
            Output.line("Added \(member.displayName) to \(found.slug)")
        }
    }

    struct RemoveMember: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-member",
            abstract: "Remove a person from a team; their open tasks there go back to the team."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Team slug or id.") var team: String
        @Argument(help: "Person id or email.") var person: String

        func run() async throws {
            let (found, member, released) = try await connection.withStore { store in
                let found = try await store.team(reference: team)
                let member = try await store.person(reference: person)
                return (found, member, try await store.removeMember(teamID: found.id, personID: member.id))
            }
            let tail = released > 0 ? "; \(quantity(released, "open task")) returned to the team" : ""
            Output.line("Removed \(member.displayName) from \(found.slug)\(tail)")
        }
    }
}
