import DayPlanner
import Egress
import Foundation
import Logging
import TeamworkModel

/// Drive times from an OSRM server's `table` service (http://project-osrm.org/docs/v5.24.0/api/#table-service):
/// `GET {base}/table/v1/{profile}/{lon},{lat};…?sources=…&destinations=…&annotations=duration`,
/// answered with `{"code": "Ok", "durations": [[seconds or null, …], …]}`. A matrix larger than the
/// server's table limit (osrm-routed's `--max-table-size`, 100 by default) is asked for in blocks.
public struct OSRMTable: Sendable {
    public var base: URL
    public var profile: String
    /// Sources and destinations per request, at most.
    public var blockSize: Int
    /// For each request's whole answer.
    public var timeout: Duration
    /// The most of an answer read: a 100 × 100 block of durations is about 100 KB.
    static let answerLimit = 4 << 20

    public init(base: URL, profile: String = "driving", blockSize: Int = 100, timeout: Duration = .seconds(10)) throws {
        guard let scheme = base.scheme?.lowercased(), scheme == "http" || scheme == "https", base.host != nil else {
            throw TeamworkError.invalid("the OSRM address must be an http(s) URL like http://osrm.example:5000")
        }
        self.base = base
        self.profile = profile
        self.blockSize = max(1, blockSize)
        self.timeout = timeout
    }

    /// Why the road network gave no answer.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The request for the block of `sources` × `destinations` among `places`.
    public func url(_ places: [Coordinate], sources: Range<Int>, destinations: Range<Int>) -> URL {
        let coordinates = places.map { String(format: "%.6f,%.6f", $0.longitude, $0.latitude) }.joined(separator: ";")
        var url = base.appending(path: "table/v1/\(profile)/\(coordinates)")
        url.append(queryItems: [
            URLQueryItem(name: "sources", value: sources.map(String.init).joined(separator: ";")),
            URLQueryItem(name: "destinations", value: destinations.map(String.init).joined(separator: ";")),
            URLQueryItem(name: "annotations", value: "duration"),
        ])
        return url
    }

    /// An answer of the table service as minutes, `sources` rows of `destinations` each (nil: no route).
    public static func minutes(parsing data: Data, sources: Int, destinations: Int) throws -> [[Double?]] {
        struct Answer: Decodable {
            var code: String
            var message: String?
            var durations: [[Double?]]?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: data) else {
            throw Failure(description: "the OSRM answer is not the table service's JSON")
        }
        guard answer.code == "Ok" else {
            throw Failure(description: "OSRM said \(answer.code)" + (answer.message.map { ": \($0)" } ?? ""))
        }
        guard let durations = answer.durations, durations.count == sources, durations.allSatisfy({ $0.count == destinations })
        else { throw Failure(description: "the OSRM answer has not \(sources)×\(destinations) durations") }
        return try durations.map { row in
            try row.map { seconds in
                guard let seconds else { return nil }
                guard seconds.isFinite, seconds >= 0 else { throw Failure(description: "OSRM gave a duration of \(seconds)") }
                return seconds / 60
            }
        }
    }

    /// Minutes between each two of `places`, asked block by block.
    public func minutes(_ places: [Coordinate]) async throws -> [[Double?]] {
        var matrix = [[Double?]](repeating: [Double?](repeating: nil, count: places.count), count: places.count)
        for rowStart in stride(from: 0, to: places.count, by: blockSize) {
            for columnStart in stride(from: 0, to: places.count, by: blockSize) {
                try Task.checkCancellation()
                let rows = rowStart..<min(places.count, rowStart + blockSize)
                let columns = columnStart..<min(places.count, columnStart + blockSize)
                let answer: EgressAnswer
                do {
                    answer = try await EgressClient.send(
                        EgressClient.Request(url: url(places, sources: rows, destinations: columns)), policy: .operatorNamed,
                        timeout: timeout, bodyLimit: Self.answerLimit)
                } catch let failure as EgressFailure {
                    throw Failure(description: "OSRM: \(failure)")
                }
                guard !answer.truncated else { throw Failure(description: "the OSRM answer is over \(Self.answerLimit) bytes") }
                let (data, status) = (answer.body, answer.status)
                // OSRM answers its own errors (InvalidQuery, TooBig, NoTable) as 400 with a code and a message.
                guard status == 200 || status == 400 else { throw Failure(description: "OSRM answered HTTP \(status)") }
                let block = try Self.minutes(parsing: data, sources: rows.count, destinations: columns.count)
                for (i, row) in zip(rows, block) {
                    for (j, value) in zip(columns, row) { matrix[i][j] = value }
                }
            }
        }
        return matrix
    }
}

/// The drive times a plan uses: a road network's when one is configured and answers, else the
/// estimate from coordinates. A pair the network has no route for takes the estimate too.
public enum TravelTimes {
    public static func matrix(_ places: [Coordinate?], estimate: TravelEstimate, osrm: OSRMTable?, logger: Logger) async -> [[Double]] {
        let estimated = estimate.matrix(places)
        guard let osrm else { return estimated }
        // Each distinct point once: many tasks share a site.
        var distinct: [Coordinate] = []
        var index: [Int?] = []
        for place in places {
            guard let place else {
                index.append(nil)
                continue
            }
            if let found = distinct.firstIndex(of: place) {
                index.append(found)
            } else {
                distinct.append(place)
                index.append(distinct.count - 1)
            }
        }
        guard distinct.count > 1 else { return estimated }
        let road: [[Double?]]
        do {
            road = try await osrm.minutes(distinct)
        } catch {
            logger.warning(
                "day plan: the road network did not answer; drives are estimated from coordinates",
                metadata: ["osrm": "\(osrm.base)", "error": "\(error)"])
            return estimated
        }
        var missing = 0
        let matrix = places.indices.map { a in
            places.indices.map { b -> Double in
                guard let i = index[a], let j = index[b] else { return 0 }
                guard let minutes = road[i][j] else {
                    missing += 1
                    return estimated[a][b]
                }
                return minutes
            }
        }
        if missing > 0 {
            logger.notice("day plan: the road network has no route for \(quantity(missing, "pair")); those drives are estimated")
        }
        return matrix
    }
}
