import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

/// `customer`: the contacts whose visits Teamwork tells (docs/integrations.md).
struct CustomerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customer",
        abstract: "Add, change, list, show, export and erase customers, and see the messages they were sent.",
        discussion: """
            A site names its customer (`location customer SITE CUSTOMER`); a task inherits its site's or names its \
            own (`task create/update --customer`). Messages go only to a customer who agreed to them (--consent).
            """,
        subcommands: [
            Add.self, Update.self, List.self, Show.self, Messages.self, Hold.self, Release.self, Holds.self, Export.self, Erase.self,
        ]
    )

    struct ContactOptions: ParsableArguments {
        @Option(help: "Email address the messages go to.") var email: String?
        @Option(help: "Mobile number for text messages, with its country code: +46 70 123 45 67.") var phone: String?
        @Option(help: "The language of their messages: en or sv.") var language: String?
        @Flag(inversion: .prefixedNo, help: "Whether they agreed to get messages about their visits.") var consent: Bool?
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a customer.")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Their name, as messages greet them.") var name: String
        @OptionGroup var contact: ContactOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let new = try NewCustomer(
                name: name, email: contact.email, phone: contact.phone, language: try contact.language.map(CustomerLanguage.parse) ?? .en,
                consent: contact.consent ?? false)
            let customer = try await connection.withStore { try await $0.addCustomer(new) }
            if output.json { return try Output.json(customer) }
            Output.line("Added customer \(customer.id)" + (customer.consent ? "" : " (no consent to messages: none will be sent)"))
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Change a customer's contact details, language or consent.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Customer id or email.") var customer: String
        @Option var name: String?
        @OptionGroup var contact: ContactOptions
        @Flag(help: "Remove the email address.") var clearEmail = false
        @Flag(help: "Remove the phone number.") var clearPhone = false
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if contact.email != nil && clearEmail { throw ValidationError("use --email or --clear-email, not both") }
            if contact.phone != nil && clearPhone { throw ValidationError("use --phone or --clear-phone, not both") }
        }

        func run() async throws {
            let changes = try CustomerChanges(
                name: name, email: clearEmail ? .some(nil) : contact.email.map { .some($0) },
                phone: clearPhone ? .some(nil) : contact.phone.map { .some($0) },
                language: try contact.language.map(CustomerLanguage.parse), consent: contact.consent)
            guard !changes.isEmpty else { throw TeamworkError(.usage, "nothing to change; see --help") }
            let updated = try await connection.withStore { store in
                try await store.updateCustomer(id: try await store.customer(reference: customer).id, changes)
            }
            if output.json { return try Output.json(updated) }
            Output.line("Updated customer \(updated.id)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List customers by name.")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Only those whose name, email or phone holds this.") var search: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            if let search, search.count > 200 { throw TeamworkError.invalid("a search has at most 200 characters") }
            let customers = try await connection.withStore { try await $0.customers(search: search) }
            if output.json { return try Output.json(customers) }
            Output.table(
                ["ID", "NAME", "EMAIL", "PHONE", "LANG", "CONSENT"],
                customers.map {
                    [
                        String($0.id), $0.name, $0.email ?? "-", $0.phone ?? "-", $0.language.rawValue,
                        $0.erasedAt != nil ? "erased" : $0.consent ? "yes" : "no",
                    ]
                })
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One customer: contact, sites, tasks and their answers.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Customer id or email.") var customer: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let export = try await connection.withStore { store in
                try await store.customerExport(id: try await store.customer(reference: customer).id)
            }
            if output.json { return try Output.json(export) }
            let c = export.customer
            Output.details([
                ("id", String(c.id)), ("name", c.name), ("email", c.email ?? "-"), ("phone", c.phone ?? "-"),
                ("language", c.language.rawValue),
                ("consent", c.consent ? "yes" : "no: no message is sent"),
                ("erased", Output.date(c.erasedAt)),
                ("sites", export.sites.isEmpty ? "-" : export.sites.map { "\($0.id) \($0.name)" }.joined(separator: ", ")),
            ])
            if !export.tasks.isEmpty {
                Output.table(
                    ["TASK", "TITLE", "STATUS", "WINDOW", "ANSWER"],
                    export.tasks.map { work in
                        [
                            String(work.id), work.title, work.status.rawValue,
                            work.window.map { $0.compact(in: Zone.reading(work.timeZone)) } ?? "-",
                            CustomerCommand.answer(work.appointment, zone: Zone.reading(work.timeZone)),
                        ]
                    })
            }
        }
    }

    /// An appointment's answer as words: `asked to move to Tue 2 Dec 10:00–12:00`.
    static func answer(_ appointment: Appointment?, zone: Zone) -> String {
        appointment?.words(in: zone) ?? "-"
    }

    struct Messages: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The messages about a customer's visits: what went, what waits, and why one was not sent.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Customer id or email.") var customer: String
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let messages = try await connection.withStore { store in
                try await store.customerMessages(customerID: try await store.customer(reference: customer).id)
            }
            if output.json { return try Output.json(messages) }
            MessageTable.print(messages)
        }
    }

    struct Hold: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hold customers' messages about a day's visits until you release it (prepare the day first).",
            discussion: "The day is each task's own (its window, else its due time, on its clock). Without --team: every team.")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The day, like 2026-12-01.") var on: String
        @Option(help: "Only this team's tasks (slug or id).") var team: String?
        @Option(help: "Why, for the other dispatchers (at most 500 bytes).") var note = ""

        func run() async throws {
            let day = try LocalDate(parsing: on, field: "--on")
            try await connection.withStore { store in
                let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                try await store.holdMessages(day: day, teamID: teamID, note: note)
            }
            Output.line(
                "Customers' messages about \(day)\(team.map { " (team \($0))" } ?? "") are held: "
                    + "teamwork-manager customer release --on \(day)\(team.map { " --team \($0)" } ?? "") sends them")
        }
    }

    struct Release: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Release a held day: its customers' messages go now (only the newest news of each visit).")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "The held day, like 2026-12-01.") var on: String
        @Option(help: "The team it was held for (slug or id); without: the hold of every team.") var team: String?

        func run() async throws {
            let day = try LocalDate(parsing: on, field: "--on")
            let released = try await connection.withStore { store in
                let teamID = try await team.asyncMap { try await store.team(reference: $0).id }
                return try await store.releaseMessages(day: day, teamID: teamID)
            }
            Output.line(MessageHold.released(released, on: day))
        }
    }

    struct Holds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The days whose customers' messages are held, and how many wait.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (holds, teams) = try await connection.withStore { store in
                (try await store.messageHolds(), try await store.listTeams().map(\.team))
            }
            if output.json { return try Output.json(holds) }
            guard !holds.isEmpty else { return Output.line("No day is held.") }
            Output.table(
                ["DAY", "TEAM", "HELD", "NOTE"],
                holds.map { hold in
                    [
                        hold.day.description, hold.teamID.map { id in teams.first { $0.id == id }?.slug ?? String(id) } ?? "every team",
                        String(hold.held), hold.note,
                    ]
                })
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Everything kept about a customer, as JSON: for their request to see their data.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Customer id or email.") var customer: String

        func run() async throws {
            let export = try await connection.withStore { store in
                try await store.customerExport(id: try await store.customer(reference: customer).id)
            }
            try Output.json(export)
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a customer on their request: name, email, phone and messages gone; the work's history kept.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Customer id or email.") var customer: String
        @Flag(help: "Yes, erase them: this cannot be undone.") var yes = false

        func run() async throws {
            guard yes else { throw TeamworkError(.usage, "erasing cannot be undone: add --yes") }
            let erased = try await connection.withStore { store in
                try await store.eraseCustomer(id: try await store.customer(reference: customer).id)
            }
            Output.line("Erased customer \(erased.id): their sites and tasks are kept without them")
        }
    }
}

/// Messages as a table, for `customer messages` and `task messages`.
enum MessageTable {
    static func print(_ messages: [CustomerMessage]) {
        if messages.isEmpty { return Output.line("No messages.") }
        Output.table(
            ["ID", "TASK", "KIND", "SEQ", "CHANNEL", "STATE", "ATTEMPTS", "SENT", "WHY"],
            messages.map {
                [
                    String($0.id), String($0.taskID), $0.kind.rawValue.replacingOccurrences(of: "_", with: " "), String($0.sequence),
                    $0.channel.rawValue, $0.state.rawValue, String($0.attempts), Output.date($0.sentAt), $0.reason ?? "",
                ]
            }, maxWidth: 60)
    }
}

extension TaskCommand {
    struct Messages: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The messages about a task to its customer: what went, what waits, and why one was not sent.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Task id.") var id: Int64
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let messages = try await connection.withStore { store in
                _ = try await store.task(id: id)
                return try await store.customerMessages(taskID: id)
            }
            if output.json { return try Output.json(messages) }
            MessageTable.print(messages)
        }
    }
}
