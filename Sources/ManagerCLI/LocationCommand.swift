import ArgumentParser
import CentralStore
import Foundation
import TeamworkModel

struct LocationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "location",
        abstract: "Add, list and show locations (task sites and people's last-known positions), and name a site's customer.",
        subcommands: [Add.self, List.self, Show.self, SetCustomer.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a task site.")
        @OptionGroup var connection: ConnectionOptions
        @Option(name: .customLong("lat"), parsing: .unconditional, help: "Latitude, -90 to 90.") var latitude: String
        @Option(name: .customLong("lon"), parsing: .unconditional, help: "Longitude, -180 to 180.") var longitude: String
        @Option(parsing: .unconditional, help: "Elevation in metres.") var elevation: String?
        @Option(help: "A name for the place.") var name: String = ""
        @Option var street: String = ""
        @Option var city: String = ""
        @Option var region: String = ""
        @Option var postalCode: String = ""
        @Option var country: String = ""
        @Option(help: "The site's IANA time zone when it differs from its tasks' teams' (e.g. America/New_York).")
        var timeZone: String?
        @Option(help: "The site's customer (id or email): its tasks' messages go to them.") var customer: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let new = try NewLocation(
                name: name, latitude: try number(latitude, "latitude"), longitude: try number(longitude, "longitude"),
                elevation: try elevation.map { try number($0, "elevation") },
                address: Address(street: street, city: city, region: region, postalCode: postalCode, country: country),
                timeZone: timeZone
            )
            let location = try await connection.withStore { store in
                let customerID = try await customer.asyncMap { try await store.customer(reference: $0).id }
                let location = try await store.addLocation(new)
                if let customerID { try await store.setSiteCustomer(locationID: location.id, customerID: customerID) }
                return location
            }
            if output.json { try Output.json(location) } else { Output.line("Added location \(location.id)") }
        }

        private func number(_ text: String, _ field: String) throws -> Double {
            guard let value = Double(text.trimmingCharacters(in: .whitespaces)) else {
                throw TeamworkError.invalid("\(field) must be a number")
            }
            return value
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List locations.")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "site or person.") var kind: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let kind = try self.kind.map { try parseKind($0) }
            let (locations, names) = try await connection.withStore { store in
                (try await store.listLocations(kind: kind), output.json ? TaskCommand.Names() : try await TaskCommand.Names.load(store))
            }
            if output.json { return try Output.json(locations) }
            // A person's last known position is named after the person.
            Output.table(
                ["ID", "KIND", "NAME", "LAT", "LON", "ADDRESS"],
                locations.map { location in
                    let name = location.name.isEmpty ? location.personID.flatMap { names.people[$0] } ?? "-" : location.name
                    return [
                        String(location.id), location.kind.rawValue, name, String(location.latitude), String(location.longitude),
                        location.address.singleLine,
                    ]
                })
        }

        private func parseKind(_ text: String) throws -> LocationKind {
            guard let kind = LocationKind(rawValue: text.lowercased()) else {
                throw TeamworkError.invalid("kind must be one of: site, person")
            }
            return kind
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one location.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Location id.") var id: Int64
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (l, customer) = try await connection.withStore { store in
                (try await store.location(id: id), try await store.siteCustomer(locationID: id))
            }
            // The JSON is the location as it always was; its customer is `customer show`'s.
            if output.json { return try Output.json(l) }
            Output.details([
                ("id", String(l.id)), ("kind", l.kind.rawValue), ("person", l.personID.map(String.init) ?? "-"),
                ("name", l.name), ("latitude", String(l.latitude)), ("longitude", String(l.longitude)),
                ("elevation", l.elevation.map { String($0) } ?? "-"), ("address", l.address.singleLine),
                ("customer", customer.map { "\($0.name) (\($0.id))" } ?? "-"),
                ("created", Output.date(l.createdAt)), ("updated", Output.date(l.updatedAt)),
            ])
        }
    }

    struct SetCustomer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "customer",
            abstract: "Name a site's customer (its tasks without one of their own tell them), or none with --none.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Site id.") var id: Int64
        @Argument(help: "Customer id or email.") var customer: String?
        @Flag(help: "The site has no customer.") var none = false

        func validate() throws {
            if (customer == nil) == !none { throw ValidationError("give a customer, or --none") }
        }

        func run() async throws {
            let named = try await connection.withStore { store in
                let found = try await customer.asyncMap { try await store.customer(reference: $0) }
                try await store.setSiteCustomer(locationID: id, customerID: found?.id)
                return found
            }
            Output.line(named.map { "Site \(id)'s customer is \($0.name) (\($0.id))" } ?? "Site \(id) has no customer")
        }
    }
}
