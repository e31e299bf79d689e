import CentralStore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServerSupport
import TeamworkFormats
import TeamworkModel

/// `GET /calendar/{secret}.ics`: a worker's assigned work from today on, as iCalendar, for the
/// calendar app on their phone (docs/integrations.md, "Calendar feeds"). The secret in the address
/// is the feed's only key (calendar apps send no header), so: looked up only by its SHA-256 in a
/// SECURITY DEFINER function, every unknown secret answered 404 and counted against its address
/// (30 a minute), at most 4 lookups in flight per address and 32 in all, each on the shared
/// connection, and at most 500 events.
public struct CalendarFeeds<Context: RemoteAddressRequestContext>: Sendable {
    /// The most events a feed holds.
    static var maximumEvents: Int { 500 }
    let store: SharedStore<any EndpointStore>
    let lookups = Budget<String>(perPrincipal: 4, total: 32)
    let limiter = AddressLimiter(perAddress: 30)

    /// Tells made-up feed addresses from real ones before anything is looked up.
    let keys: LinkKeys

    public init(store: SharedStore<any EndpointStore>, keys: LinkKeys) { (self.store, self.keys) = (store, keys) }

    public func add(to router: Router<Context>) {
        router.get("calendar/:file") { request, context in try await feed(request, context) }
    }

    func feed(_ request: Request, _ context: Context) async throws -> Response {
        let file = context.parameters.get("file") ?? ""
        let address = AddressLimiter.key(context.remoteAddress?.ipAddress)
        let notFound = TeamworkError.notFound("no such calendar")
        guard file.hasSuffix(".ics") else { throw notFound }
        let secret = String(file.dropLast(4))
        guard secret.hasPrefix("twcal_"), (40...100).contains(secret.utf8.count),
            secret.utf8.allSatisfy({
                $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0)
                    || (97...122).contains($0)
            })
        else { throw notFound }
        // A made-up address costs nothing: not a budget, not the master.
        guard await keys.verdict(secret, kind: .calendar) != .madeUp else { throw notFound }
        guard limiter.allows(address) else { throw TooManyLookups() }
        guard case .success(let place) = lookups.reserve(for: address) else { throw PageBusy() }
        defer { place.release() }
        let now = Date()
        let built = try await store.run { store -> (Person, [FieldTask], [Int64: Location], [Int64: Int])? in
            guard let person = try await store.calendarPerson(secret: secret) else { return nil }
            let (tasks, sites) = try await store.calendarWork(
                personID: person.id, from: now.addingTimeInterval(-86_400), limit: Self.maximumEvents)
            var minutes: [Int64: Int] = [:]
            for id in Set(tasks.compactMap(\.teamID)) { minutes[id] = try await store.team(id: id).taskMinutes }
            return (person, tasks, sites, minutes)
        }
        guard let (person, tasks, sites, minutes) = built else {
            limiter.failed(address)
            throw notFound
        }
        let calendar = ICalendar(
            name: "Teamwork: \(person.displayName)",
            events: tasks.map { task in
                ICalendar.Event(
                    task: task, site: task.locationID.flatMap { sites[$0] }, minutesOnSite: task.teamID.flatMap { minutes[$0] } ?? 45)
            })
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/calendar; charset=utf-8", .cacheControl: "private, max-age=300",
                .contentDisposition: "inline; filename=\"teamwork.ics\"",
            ],
            body: .init(byteBuffer: ByteBuffer(string: calendar.text(now: now))))
    }

    struct TooManyLookups: ShownError {
        var status: HTTPResponse.Status { .tooManyRequests }
        var shownMessage: String { "too many unknown calendars from this address: try again in a minute" }
    }
}

/// A page whose share of the master's connection is taken: 503, try again.
struct PageBusy: ShownError {
    var status: HTTPResponse.Status { .serviceUnavailable }
    var shownMessage: String { "busy: try again in a moment" }
}
