import DayPlanner
import Foundation
import Logging
import RoadTravel
import TeamworkModel
import Testing

/// Drive times: the estimate from coordinates, and an OSRM table service's answer as OSRM
/// documents it (http://project-osrm.org/docs/v5.24.0/api/#table-service), with the estimate
/// taking over where the network is out of reach or has no route.
@Suite("Drive times")
struct TravelTests {
    static let stockholm = Coordinate(latitude: 59.3303, longitude: 18.0586)
    static let uppsala = Coordinate(latitude: 59.8586, longitude: 17.6389)

    @Test func theEstimateIsTheGreatCircleTimesTheAreasRoadFactorAtItsSpeed() {
        // 63.3 km apart as the crow flies; checked against the flat-earth approximation, good to 0.1% at this range.
        let km =
            GreatCircle.meters(
                fromLatitude: Self.stockholm.latitude, longitude: Self.stockholm.longitude, toLatitude: Self.uppsala.latitude,
                longitude: Self.uppsala.longitude) / 1000
        let degree = 6371.0088 * Double.pi / 180
        let middle = (Self.stockholm.latitude + Self.uppsala.latitude) / 2 * Double.pi / 180
        let north = (Self.uppsala.latitude - Self.stockholm.latitude) * degree
        let east = (Self.uppsala.longitude - Self.stockholm.longitude) * degree * cos(middle)
        let flat = (north * north + east * east).squareRoot()
        #expect(abs(km - flat) / flat < 0.001 && abs(km - 63.3) < 0.1, "\(km) \(flat)")
        let urban = TravelEstimate(area: .urban).minutes(from: Self.stockholm, to: Self.uppsala)
        let rural = TravelEstimate(area: .rural).minutes(from: Self.stockholm, to: Self.uppsala)
        #expect(abs(urban - km * 1.3 / 30 * 60) < 1e-9)
        #expect(abs(rural - km * 1.4 / 60 * 60) < 1e-9)
        let matrix = TravelEstimate().matrix([Self.stockholm, nil, Self.uppsala])
        #expect(matrix[0][0] == 0 && matrix[1][2] == 0 && matrix[2][1] == 0, "a place that is nowhere costs no drive")
        #expect(matrix[0][2] == matrix[2][0] && matrix[0][2] > 0)
    }

    @Test func anOSRMTableAnswerIsReadAsMinutesWithNullForNoRoute() throws {
        let answer = Data(
            """
            {"code":"Ok","durations":[[0,120.5,null],[130.2,0,60]],
             "sources":[{"hint":"x","distance":4.2,"name":"Kungsgatan","location":[18.0586,59.3303]},
                        {"hint":"y","distance":1.0,"name":"","location":[17.6389,59.8586]}],
             "destinations":[{"location":[18.0586,59.3303]},{"location":[17.6389,59.8586]},{"location":[18.1,59.3]}]}
            """.utf8)
        let minutes = try OSRMTable.minutes(parsing: answer, sources: 2, destinations: 3)
        #expect(minutes[0][1] == 120.5 / 60 && minutes[1][0] == 130.2 / 60 && minutes[1][2] == 1)
        #expect(minutes[0][2] == nil)
        let refused = Data(#"{"code":"InvalidQuery","message":"Query string malformed close to position 28"}"#.utf8)
        #expect(throws: OSRMTable.Failure.self) { try OSRMTable.minutes(parsing: refused, sources: 1, destinations: 1) }
        do {
            _ = try OSRMTable.minutes(parsing: refused, sources: 1, destinations: 1)
        } catch {
            #expect("\(error)" == "OSRM said InvalidQuery: Query string malformed close to position 28")
        }
        #expect(throws: OSRMTable.Failure.self) { try OSRMTable.minutes(parsing: answer, sources: 3, destinations: 3) }
        #expect(throws: OSRMTable.Failure.self) { try OSRMTable.minutes(parsing: Data("<html>".utf8), sources: 1, destinations: 1) }
        let negative = Data(#"{"code":"Ok","durations":[[-5]]}"#.utf8)
        #expect(throws: OSRMTable.Failure.self) { try OSRMTable.minutes(parsing: negative, sources: 1, destinations: 1) }
    }

    @Test func theRequestNamesEveryPlaceAsLongitudeLatitudeAndOneBlock() throws {
        let table = try OSRMTable(base: URL(string: "http://osrm.example:5000")!)
        let url = table.url([Self.stockholm, Self.uppsala, Self.stockholm], sources: 0..<2, destinations: 1..<3)
        let parts = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        #expect(parts.path == "/table/v1/driving/18.058600,59.330300;17.638900,59.858600;18.058600,59.330300")
        let items = Dictionary(uniqueKeysWithValues: (parts.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        #expect(items == ["sources": "0;1", "destinations": "1;2", "annotations": "duration"])
        #expect(throws: TeamworkError.self) { try OSRMTable(base: URL(string: "ftp://osrm.example")!) }
    }

    /// Nothing listens at the address: the plan's drives are the estimate, and a log line says so.
    @Test func anUnreachableRoadNetworkFallsBackToTheEstimateWithALogLine() async throws {
        let lines = LogLines()
        let logger = Logger(label: "test") { _ in lines }
        let places: [Coordinate?] = [Self.stockholm, Self.uppsala, nil]
        let table = try OSRMTable(base: URL(string: "http://127.0.0.1:1")!, timeout: .seconds(5))
        let matrix = await TravelTimes.matrix(places, estimate: TravelEstimate(), osrm: table, logger: logger)
        #expect(matrix == TravelEstimate().matrix(places))
        #expect(lines.messages.contains { $0.contains("the road network did not answer") }, "\(lines.messages)")
    }
}

/// A log handler that keeps every message.
final class LogLines: LogHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var messages: [String] { lock.withLock { kept } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lock.withLock { kept.append(event.message.description) }
    }
}
