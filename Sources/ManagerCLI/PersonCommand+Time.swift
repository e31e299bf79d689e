import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

extension PersonCommand {
    /// `person hours`: a person's working week and dated exceptions, on their team's clock.
    struct Hours: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or set when a person works: a weekly pattern and days that differ.",
            discussion: """
                --week "mon-fri 07:00-16:00" (repeat for more parts, e.g. --week "sat 08:00-12:00") replaces the \
                week; a weekday it does not name is a day off. --clear-week: none set (the planner's --hours apply). \
                --day 2026-12-24 --day-hours 08:00-12:00 (or off) sets one day; --clear-day 2026-12-24 removes it. \
                Times are on the clock of the team being planned.
                """)
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Id or email.") var person: String
        @Option(help: "A part of the week, like \"mon-fri 07:00-16:00\" (repeatable).") var week: [String] = []
        @Flag(help: "Remove the week (the planner's --hours apply).") var clearWeek = false
        @Option(help: "A day that differs from the week, like 2026-12-24.") var day: String?
        @Option(help: "Hours that day, like 08:00-12:00, or off.") var dayHours: String?
        @Option(help: "Remove the exception of this day.") var clearDay: String?
        @OptionGroup var output: OutputOptions

        struct Details: Encodable {
            var personID: Int64
            var week: String
            var days: [Day]
            struct Day: Encodable {
                var day: LocalDate
                var hours: String
            }
        }

        func validate() throws {
            if !week.isEmpty && clearWeek { throw ValidationError("use --week or --clear-week, not both") }
            if (day == nil) != (dayHours == nil) { throw ValidationError("--day and --day-hours go together") }
        }

        func run() async throws {
            let parsedWeek = try week.isEmpty ? nil : WorkingWeek(parsing: week)
            let exception = try day.map { day -> (LocalDate, DayHours?) in
                let date = try LocalDate(parsing: day, field: "--day")
                return (date, dayHours == "off" ? nil : try DayHours(parsing: dayHours ?? "", field: "--day-hours"))
            }
            let cleared = try clearDay.map { try LocalDate(parsing: $0, field: "--clear-day") }
            let details = try await connection.withStore { store in
                let target = try await store.person(reference: person)
                if let parsedWeek { try await store.setWorkingWeek(personID: target.id, parsedWeek) }
                if clearWeek { try await store.setWorkingWeek(personID: target.id, WorkingWeek()) }
                if let (day, hours) = exception { try await store.setWorkingDay(personID: target.id, day: day, hours: hours) }
                if let cleared, try await !store.removeWorkingDay(personID: target.id, day: cleared) {
                    throw TeamworkError.notFound("\(target.displayName) has no exception on \(cleared)")
                }
                let today = Zone.utc.date(of: Date()).adding(days: -1)
                return Details(
                    personID: target.id, week: try await store.workingWeek(personID: target.id).description,
                    days: try await store.workingDayExceptions(personID: target.id, from: today).map {
                        Details.Day(day: $0.day, hours: $0.hours?.description ?? "off")
                    })
            }
            if output.json { return try Output.json(details) }
            Output.details([("week", details.week)] + details.days.map { ($0.day.description, $0.hours) })
        }
    }

    /// `person absence add | list | remove`.
    struct AbsenceCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "absence", abstract: "Record when someone is away (vacation, sick, training): the planner leaves them out.",
            subcommands: [Add.self, List.self, Remove.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Record an absence.",
                discussion: """
                    --from and --to take a day (2026-12-01: from its start; as --to, to its end), a time on the \
                    person's team's clock (2026-12-01T12:00), an ISO 8601 instant, or now.
                    """)
            @OptionGroup var connection: ConnectionOptions
            @Argument(help: "Id or email.") var person: String
            @Option(help: "When it starts: a day, a time, or now.") var from: String
            @Option(help: "When it ends: a day (to its end) or a time.") var to: String
            @Option(help: "vacation, sick, training or other.") var reason: String
            @Option(help: "A short note (at most 200 characters).") var note = ""
            @OptionGroup var output: OutputOptions

            func run() async throws {
                guard let reason = AbsenceReason(rawValue: reason) else {
                    throw ValidationError("--reason must be vacation, sick, training or other")
                }
                let (absence, target, zone) = try await connection.withStore { store in
                    let target = try await store.person(reference: person)
                    let zone = try await Self.zone(of: target, store)
                    let absence = try await store.addAbsence(
                        personID: target.id, from: try Self.instant(from, zone: zone, end: false, field: "--from"),
                        to: try Self.instant(to, zone: zone, end: true, field: "--to"), reason: reason, note: note)
                    return (absence, target, zone)
                }
                if output.json { return try Output.json(absence) }
                Output.line(
                    "Recorded absence \(absence.id): \(target.displayName) away (\(absence.reason.rawValue)) "
                        + "from \(zone.format(absence.startsAt)) to \(zone.format(absence.endsAt))")
            }

            /// The clock of the person's default team, else their first team's, else UTC.
            static func zone(of person: Person, _ store: CentralStore) async throws -> Zone {
                let teams = try await store.teams(ofPerson: person.id)
                return Zone.reading((teams.first { $0.id == person.defaultTeamID } ?? teams.first)?.timeZone ?? "UTC")
            }

            static func instant(_ text: String, zone: Zone, end: Bool, field: String) throws -> Date {
                if text == "now" { return Date() }
                if let day = try? LocalDate(parsing: text) { return end ? zone.day(day).end : zone.day(day).start }
                return try ISODate.parse(text, field: field, in: zone)
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List absences not yet over.")
            @OptionGroup var connection: ConnectionOptions
            @Option(help: "Only this person's (id or email).") var person: String?
            @Option(help: "Only members of this team (slug or id).") var team: String?
            @OptionGroup var output: OutputOptions

            func run() async throws {
                let (absences, people) = try await connection.withStore { store in
                    let personID = try await person.asyncMap { try await store.person(reference: $0).id }
                    let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                    let found = try await store.absences(personID: personID, teamID: teamID, endingAfter: Date())
                    // Each on the clock of the person's team, as they were entered (seen on main: UTC).
                    var people: [Int64: (name: String, zone: Zone)] = [:]
                    for id in Set(found.map(\.personID)) {
                        let someone = try await store.person(id: id)
                        people[id] = (someone.displayName, try await Add.zone(of: someone, store))
                    }
                    return (found, people)
                }
                if output.json { return try Output.json(absences) }
                Output.table(
                    ["ID", "PERSON", "FROM", "TO", "REASON", "NOTE"],
                    absences.map {
                        let zone = people[$0.personID]?.zone ?? .utc
                        return [
                            String($0.id), people[$0.personID]?.name ?? "", zone.format($0.startsAt), zone.format($0.endsAt),
                            $0.reason.rawValue, $0.note,
                        ]
                    })
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove an absence (ended early, or entered by mistake).")
            @OptionGroup var connection: ConnectionOptions
            @Argument(help: "Absence id.") var id: Int64

            func run() async throws {
                let removed = try await connection.withStore { try await $0.removeAbsence(id: id) }
                Output.line("Removed absence \(removed.id)")
            }
        }
    }
}
