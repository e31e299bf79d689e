import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

struct PersonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "person",
        abstract: "Add, list, show, update and remove people.",
        subcommands: [
            Add.self, List.self, Show.self, Update.self, Deactivate.self, Reactivate.self, Remove.self, Token.self, Device.self, Hours.self,
            AbsenceCommand.self, Calendar.self,
        ]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a person.")
        @OptionGroup var connection: ConnectionOptions
        @Option(name: .customLong("first"), help: "First name.") var firstName: String
        @Option(name: .customLong("last"), help: "Last name.") var lastName: String
        @Option(help: "Email address (unique).") var email: String
        @Option(help: "manager, worker or admin.") var role: String = "worker"
        @Option(help: "Avatar image URL (http or https).") var avatar: String?
        @Option(help: "What they can do, comma-separated: electrical,climbing.") var skills: String = ""
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let new = try NewPerson(
                firstName: firstName, lastName: lastName, email: email, role: try Role.parse(role), avatarURL: avatar,
                skills: try Skills.parse(skills, most: Skills.mostPerPerson, field: "skills")
            )
            let person = try await connection.withStore { try await $0.addPerson(new) }
            if output.json { try Output.json(person) } else { Output.line("Added person \(person.id): \(person.displayName)") }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List people, sorted by name.")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Only this role.") var role: String?
        @Option(help: "Only members of this team (slug or id).") var team: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let role = try self.role.map(Role.parse)
            let people = try await connection.withStore { store in
                let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                return try await store.listPeople(role: role, teamID: teamID)
            }
            if output.json { return try Output.json(people) }
            Output.table(
                ["ID", "NAME", "EMAIL", "ROLE", "SKILLS", "STATUS", "LAST SEEN"],
                people.map {
                    [
                        String($0.id), $0.displayName, $0.email, $0.role.rawValue, $0.skills.joined(separator: ", ").nonEmpty ?? "-",
                        $0.deactivatedAt.map { "inactive since \(String(ISODate.format($0).prefix(10)))" } ?? "active",
                        Output.date($0.lastSeenAt),
                    ]
                })
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one person and their teams.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Id or email.") var person: String
        @OptionGroup var output: OutputOptions

        struct Details: Encodable {
            var person: Person
            var teams: [Team]
        }

        func run() async throws {
            let details = try await connection.withStore { store in
                let person = try await store.person(reference: person)
                return Details(person: person, teams: try await store.teams(ofPerson: person.id))
            }
            if output.json { return try Output.json(details) }
            let p = details.person
            let defaultTeam = details.teams.first { $0.id == p.defaultTeamID }?.slug
            Output.details([
                ("id", String(p.id)), ("name", p.displayName), ("email", p.email), ("role", p.role.rawValue),
                ("status", p.deactivatedAt.map { "inactive since \(Output.date($0))" } ?? "active"),
                ("avatar", p.avatarURL ?? "-"), ("skills", p.skills.isEmpty ? "-" : p.skills.joined(separator: ", ")),
                ("home", p.homeLocationID.map { "location \($0)" } ?? "their team's depot"),
                ("teams", details.teams.map(\.slug).joined(separator: ", ")),
                ("default team", defaultTeam ?? "-"), ("created", Output.date(p.createdAt)),
                ("updated", Output.date(p.updatedAt)), ("last seen", Output.date(p.lastSeenAt)),
            ])
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a person's details.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Id or email.") var person: String
        @Option(name: .customLong("first")) var firstName: String?
        @Option(name: .customLong("last")) var lastName: String?
        @Option var email: String?
        @Option var role: String?
        @Option(help: "Avatar image URL.") var avatar: String?
        @Flag(help: "Remove the avatar.") var clearAvatar = false
        @Option(help: "Default team (slug or id); must be one of the person's teams.") var defaultTeam: String?
        @Flag(help: "Remove the default team.") var clearDefaultTeam = false
        @Option(help: "Replace their skills, comma-separated (\"\" for none): electrical,climbing.") var skills: String?
        @Option(help: "Where they start and end a working day: a site's location id.") var home: Int64?
        @Flag(help: "Remove their place (they start from their team's depot).") var clearHome = false
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if home != nil && clearHome { throw ValidationError("use --home or --clear-home, not both") }
            if avatar != nil && clearAvatar { throw ValidationError("use --avatar or --clear-avatar, not both") }
            if defaultTeam != nil && clearDefaultTeam { throw ValidationError("use --default-team or --clear-default-team, not both") }
        }

        func run() async throws {
            let role = try self.role.map(Role.parse)
            let updated = try await connection.withStore { store in
                let target = try await store.person(reference: person)
                var defaultTeamID: Int64?? = clearDefaultTeam ? .some(nil) : nil
                if let defaultTeam { defaultTeamID = .some(try await store.team(reference: defaultTeam).id) }
                let changes = try PersonChanges(
                    firstName: firstName, lastName: lastName, email: email, role: role,
                    avatarURL: clearAvatar ? .some(nil) : avatar.map { .some($0) }, defaultTeamID: defaultTeamID,
                    skills: try skills.map { try Skills.parse($0, most: Skills.mostPerPerson, field: "skills") },
                    homeLocationID: clearHome ? .some(nil) : home.map { .some($0) }
                )
                guard !changes.isEmpty else { throw TeamworkError(.usage, "nothing to change; see --help") }
                return try await store.updatePerson(id: target.id, changes)
            }
            if output.json { try Output.json(updated) } else { Output.line("Updated person \(updated.id): \(updated.displayName)") }
        }
    }

    struct Deactivate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Someone leaves: revoke their tokens at once, and give them no more work; history keeps their name.",
            discussion: """
                Refused, with the list, while tasks are still theirs to do (assigned or in progress): give those to \
                someone else first. Their completed work stays theirs. `person reactivate` undoes it (issue a new token).
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Id or email.") var person: String

        func run() async throws {
            let (left, revoked) = try await connection.withStore { store in
                try await store.deactivatePerson(id: try await store.person(reference: person).id)
            }
            Output.line("Deactivated person \(left.id): \(left.displayName); \(quantity(revoked, "token")) revoked")
        }
    }

    struct Reactivate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Someone comes back: they may be given work again (their old tokens stay revoked: issue a new one)."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Id or email.") var person: String

        func run() async throws {
            let back = try await connection.withStore { store in
                try await store.reactivatePerson(id: try await store.person(reference: person).id)
            }
            Output.line("Reactivated person \(back.id): \(back.displayName); issue a token with `teamwork-manager person token issue`")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a person who never did any work (refused while any task names them: deactivate them instead)."
        )
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Id or email.") var person: String

        func run() async throws {
            let removed = try await connection.withStore { store in
                let target = try await store.person(reference: person)
                try await store.removePerson(id: target.id)
                return target
            }
            Output.line("Removed person \(removed.id): \(removed.displayName)")
        }
    }
}
