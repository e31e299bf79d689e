import Foundation
import PostgresNIO
import TeamworkModel

extension CentralStore {
    /// The last-known positions `personID` may see: their own, and those of the
    /// members of each of their teams that shares positions, with the teams it
    /// is seen through (none for their own). One statement: safe on a shared connection.
    public func positions(
        visibleTo personID: Int64
    ) async throws
        -> [(personID: Int64, teamIDs: [Int64], latitude: Double, longitude: Double, reportedAt: Date)]
    {
        try await rows(
            """
            WITH visible (person_id, team_id) AS (
                SELECT \(personID)::bigint, NULL::bigint
                UNION
                SELECT theirs.person_id, mine.team_id
                  FROM team_memberships mine
                  JOIN teams t ON t.id = mine.team_id AND t.shares_positions
                  JOIN team_memberships theirs ON theirs.team_id = mine.team_id
                 WHERE mine.person_id = \(personID)
            )
            SELECT l.person_id,
                   coalesce(array_agg(v.team_id ORDER BY v.team_id) FILTER (WHERE v.team_id IS NOT NULL AND l.person_id <> \(personID)),
                            '{}'),
                   l.latitude, l.longitude, coalesce(p.last_seen_at, l.updated_at)
              FROM visible v
              JOIN locations l ON l.kind = 'person' AND l.person_id = v.person_id
              JOIN people p ON p.id = l.person_id
             GROUP BY l.person_id, l.latitude, l.longitude, p.last_seen_at, l.updated_at
             ORDER BY l.person_id
            """
        ).map { row in
            let (person, teams, latitude, longitude, reported) = try row.decode((Int64, [Int64], Double, Double, Date).self)
            return (person, teams, latitude, longitude, reported)
        }
    }
}
