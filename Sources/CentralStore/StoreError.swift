import Foundation
import PostgresNIO
import TeamworkModel

/// Turns PostgreSQL failures into `TeamworkError`s with messages for people.
/// Messages name constraints and fields, never the values (which may be personal data).
enum StoreError {
    /// What a write on a standby is told: the start of its message, by which a pool knows to look for the primary.
    static let standby = "the database does not take writes here (a standby)"

    /// Whether `error` is a write refused because the server is a standby (SQLSTATE 25006).
    static func isStandby(_ error: any Error) -> Bool {
        if let psql = error as? PSQLError { return psql.serverInfo?[.sqlState] == "25006" }
        if let transaction = error as? PostgresTransactionError,
            let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError
        {
            return isStandby(inner)
        }
        return (error as? TeamworkError)?.message.hasPrefix(standby) == true
    }

    static func map(_ error: any Error, connecting url: DatabaseURL? = nil) -> any Error {
        if error is TeamworkError || error is CancellationError { return error }
        if let deadline = error as? QueryDeadlineExceeded { return TeamworkError(.unavailable, deadline.description) }
        if let transaction = error as? PostgresTransactionError,
            let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError
        {
            return map(inner, connecting: url)
        }
        guard let psql = error as? PSQLError else {
            if let url {
                return TeamworkError(.unavailable, "cannot reach the database at \(url.displayString): \(describe(error))")
            }
            return error
        }
        if psql.code == .server, let info = psql.serverInfo {
            var mapped = server(state: info[.sqlState] ?? "", constraint: info[.constraintName], message: info[.message] ?? "", url: url)
            if info[.hint] == "overridable" { mapped.overridable = true }
            return mapped
        }
        switch psql.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
            let target = url.map { " at \($0.displayString)" } ?? ""
            let underlying = psql.underlying.map { ": \(describe($0))" } ?? ""
            return TeamworkError(.unavailable, "cannot reach the database\(target)\(underlying)")
        case .sslUnsupported:
            return TeamworkError(.configuration, "the database server does not support TLS; use sslmode=disable")
        case .authMechanismRequiresPassword:
            return TeamworkError(.configuration, "the database asks for a password; put it in the database URL")
        default:
            return TeamworkError(.internal, "database error: \(psql.code)")
        }
    }

    /// What went wrong on the way to the database, in words a person can act
    /// on (the driver's own description names its internal types).
    static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        let known: [(patterns: [String], meaning: String)] = [
            (["Connection refused", "errno: 111"], "connection refused: is PostgreSQL running and listening there?"),
            (["UnknownHost", "Name or service not known", "nodename nor servname"], "no such host name"),
            (["No such file or directory", "errno: 2)"], "no PostgreSQL socket there: is it running, and is the folder right?"),
            (["No route to host", "errno: 113", "Network is unreachable", "errno: 101"], "no network route to that host"),
            (["Permission denied", "errno: 13)"], "permission denied on the way to the server"),
            (
                ["connectTimeout", "timed out", "Timed out"],
                "no answer in time: is the host right, and does a firewall drop the connection?"
            ),
            (["Connection reset", "errno: 104"], "the server closed the connection at once"),
        ]
        for entry in known where entry.patterns.contains(where: text.contains) { return entry.meaning }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }

    private static func server(state: String, constraint: String?, message: String, url: DatabaseURL?) -> TeamworkError {
        switch state {
        case "23505":
            return .conflict(uniqueMessages[constraint ?? ""] ?? "this would create a duplicate (\(constraint ?? "unique constraint"))")
        case "23503":
            return foreignKey(constraint: constraint ?? "", message: message)
        case "23514", "23502":
            return .invalid(checkMessages[constraint ?? ""] ?? "a value is not allowed (\(constraint ?? "check"))")
        case "22P02", "22003", "22007", "22008":
            return .invalid("a value has the wrong form for its field")
        case "40001", "40P01":
            return .conflict("another change got in the way; try again")
        case "TWS01":
            // A rule of the schema refused the change and said why in words for people (no personal data beyond a name).
            return .conflict(message)
        case "TWS02":
            return .notFound(message)
        case "42501":
            return TeamworkError(.configuration, "the database role lacks permission for this (\(message))")
        case "3D000":
            return TeamworkError(.configuration, "the database \(url?.database ?? "") does not exist")
        case "28P01", "28000":
            return TeamworkError(.configuration, "the database refused the login for \(url?.username ?? "this user")")
        case "53300":
            // max_connections, or the role's CONNECTION LIMIT (docs/security.md, "Budgets").
            return TeamworkError(.unavailable, "the database has no connection left (\(message)); try again shortly")
        case "57P01", "57P02", "57P03", "08006", "08001", "08004":
            return TeamworkError(.unavailable, "the database is not available (\(message))")
        case "25006":
            // A host that is (again) a standby: the caller finds the primary anew (``StorePool``, ``CentralStore/open``).
            return TeamworkError(.unavailable, "\(standby) (\(message))")
        case "42P01", "42883":
            return TeamworkError(.configuration, "the database schema is missing or old: run `teamwork-manager db migrate`")
        default:
            return TeamworkError(.internal, "database error \(state): \(message)")
        }
    }

    private static let uniqueMessages: [String: String] = [
        "people_email_key": "a person with this email already exists",
        "teams_slug_key": "a team with this slug already exists",
        "team_memberships_pkey": "this person is already a member of the team",
        "locations_person_key": "this person already has a last-known location",
    ]

    private static let checkMessages: [String: String] = [
        "tasks_check": "a task needs a team, an assignee, or both",
        "locations_latitude_check": "latitude must be between -90 and 90",
        "locations_longitude_check": "longitude must be between -180 and 180",
        "teams_slug_check": "slug must be 1-40 characters of a-z, 0-9 and '-'",
        "teams_color_check": "colour must be #rrggbb",
        "tasks_reference_one_line": "reference is one line of at most 100 bytes, without control or invisible formatting characters",
    ]

    private static let missingReference: [String: String] = [
        "tasks_team_id_fkey": "no such team",
        "tasks_assignee_id_fkey": "no such person",
        "tasks_location_id_fkey": "no such location",
        "tasks_created_by_fkey": "the acting person does not exist",
        "teams_created_by_fkey": "the acting person does not exist",
    ]

    private static func foreignKey(constraint: String, message: String) -> TeamworkError {
        if constraint == "tasks_assignee_membership" {
            return .invalid("the assignee is not a member of that team")
        }
        if let missing = missingReference[constraint] {
            return .notFound(missing)
        }
        if constraint == "people_default_team_membership" {
            return .invalid("a default team must be one of the person's teams")
        }
        // "update or delete on table X violates foreign key constraint ... on table Y": still referenced.
        if message.hasPrefix("update or delete") {
            if constraint.hasPrefix("tasks_team") {
                return .conflict("the team still has tasks; move or delete them first")
            }
            if constraint.hasPrefix("tasks_assignee") {
                return .conflict("the person still has tasks assigned; reassign them first")
            }
            return .conflict("it is still referenced (\(constraint))")
        }
        return .notFound("a referenced row does not exist (\(constraint))")
    }
}

extension CentralStore {
    /// A store error in words fit for a log line or a report: PostgreSQL errors
    /// hide their details from `description`.
    public static func explain(_ error: any Error) -> String {
        let mapped = StoreError.map(error)
        if let teamwork = mapped as? TeamworkError { return teamwork.message }
        return "\(mapped)"
    }
}
