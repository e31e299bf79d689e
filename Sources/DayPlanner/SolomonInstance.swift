/// A VRPTW instance in Solomon's text format (the literature's benchmark): the vehicle count and
/// capacity, then one line per customer (number, x, y, demand, ready time, due date, service
/// time), customer 0 the depot. Travel is the real-valued Euclidean distance, as the literature
/// uses; a vehicle may wait, must start service by the due date, and be back by the depot's.
public struct SolomonInstance: Sendable {
    public var name: String
    public var vehicles: Int
    public var capacity: Double
    /// Customer 0 is the depot.
    public var customers: [(id: Int, x: Double, y: Double, demand: Double, ready: Double, due: Double, service: Double)]

    /// Reads the text of one instance; `nil` with the reason when it is not one.
    public init(name: String, text: String) throws {
        self.name = name
        let lines = text.split(whereSeparator: \.isNewline).map { $0.split(whereSeparator: \.isWhitespace) }
        guard let header = lines.firstIndex(where: { $0.first == "NUMBER" }), header + 1 < lines.count,
            lines[header + 1].count >= 2, let count = Int(lines[header + 1][0]), let capacity = Double(lines[header + 1][1])
        else { throw SolomonError(name: name, reason: "no VEHICLE NUMBER and CAPACITY line") }
        vehicles = count
        self.capacity = capacity
        customers = lines.compactMap { fields in
            guard fields.count == 7, let id = Int(fields[0]) else { return nil }
            let numbers = fields[1...].compactMap { Double($0) }
            guard numbers.count == 6 else { return nil }
            return (id, numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5])
        }
        guard customers.first?.id == 0, customers.count > 1 else { throw SolomonError(name: name, reason: "no depot and customers") }
    }

    /// The instance as a routing problem: jobs are customers 1…n (job j is customer j + 1), every
    /// vehicle starts and ends at the depot within its window; leaving a customer out costs a
    /// million (the literature allows none).
    public var problem: RoutingProblem {
        let places = customers
        let travel = places.map { a in places.map { b in ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot() } }
        let depot = places[0]
        let jobs = places.indices.dropFirst().map { i in
            RoutingProblem.Job(
                place: i, earliest: places[i].ready, latest: places[i].due, service: places[i].service, load: places[i].demand)
        }
        let fleet = Array(
            repeating: RoutingProblem.Vehicle(start: 0, end: 0, earliest: depot.ready, latest: depot.due, capacity: capacity),
            count: vehicles)
        return RoutingProblem(jobs: jobs, vehicles: fleet, travel: travel)
    }
}

public struct SolomonError: Error, CustomStringConvertible {
    public var name: String
    public var reason: String
    public var description: String { "\(name): not a Solomon instance (\(reason))" }
}
