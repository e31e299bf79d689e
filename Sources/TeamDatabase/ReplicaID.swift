import Foundation

/// Which replica a SQLite file is: one team's database, one person's personal
/// database (tasks assigned to them with no team), or the common database.
public enum ReplicaID: Hashable, Sendable, Comparable, CustomStringConvertible {
    case team(Int64)
    case person(Int64)
    case common

    /// `team-12.sqlite`, `person-7.sqlite`, `common.sqlite`.
    public var fileName: String {
        switch self {
        case .team(let id): "team-\(id).sqlite"
        case .person(let id): "person-\(id).sqlite"
        case .common: "common.sqlite"
        }
    }

    /// `team-12`, `person-7`, `common`: the file name without its extension.
    public var name: String { String(fileName.dropLast(".sqlite".count)) }

    /// The replica a file name stands for, or `nil` for any other file.
    public init?(fileName: String) {
        guard fileName.hasSuffix(".sqlite") else { return nil }
        let stem = fileName.dropLast(".sqlite".count)
        if stem == "common" {
            self = .common
        } else if stem.hasPrefix("team-"), let id = Int64(stem.dropFirst(5)), id > 0 {
            self = .team(id)
        } else if stem.hasPrefix("person-"), let id = Int64(stem.dropFirst(7)), id > 0 {
            self = .person(id)
        } else {
            return nil
        }
    }

    /// The replica that holds a task with this team and assignee: its team's,
    /// or, with no team, its assignee's personal one.
    public static func holding(teamID: Int64?, assigneeID: Int64?) -> ReplicaID? {
        if let teamID { return .team(teamID) }
        if let assigneeID { return .person(assigneeID) }
        return nil
    }

    public var description: String {
        switch self {
        case .team(let id): "team \(id)"
        case .person(let id): "person \(id)"
        case .common: "common"
        }
    }

    var kindName: String {
        switch self {
        case .team: "team"
        case .person: "person"
        case .common: "common"
        }
    }

    var ownerID: Int64 {
        switch self {
        case .team(let id), .person(let id): id
        case .common: 0
        }
    }

    private var order: (Int, Int64) {
        switch self {
        case .common: (0, 0)
        case .team(let id): (1, id)
        case .person(let id): (2, id)
        }
    }

    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool { lhs.order < rhs.order }
}
