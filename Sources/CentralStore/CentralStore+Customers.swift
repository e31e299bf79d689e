import Foundation
import PostgresNIO
import TeamworkModel

/// Customers, their sites and tasks, their appointments and messages (docs/integrations.md).
extension CentralStore {
    static let customerColumns = "c.id, c.name, c.email, c.phone, c.language, c.consent, c.erased_at, c.created_at, c.updated_at"
    static let messageColumns = """
        m.id, m.task_id, m.customer_id, m.kind, m.sequence, m.channel, m.after_task_id, m.state, m.reason, m.attempts, m.sent_at,
        m.created_at
        """
    static let appointmentColumns = """
        a.task_id, a.customer_id, a.sequence, a.answer, a.asked_start, a.asked_end, a.answered_at,
        (SELECT CASE WHEN c.erased_at IS NOT NULL THEN 'erased' WHEN NOT c.consent THEN 'no consent'
                     WHEN c.email IS NULL AND c.phone IS NULL THEN 'no email or phone' END
           FROM customers c WHERE c.id = a.customer_id) AS not_told
        """

    static func customer(_ row: PostgresRow) throws -> Customer {
        let r = row.makeRandomAccess()
        return Customer(
            id: try r["id"].decode(Int64.self), name: try r["name"].decode(String.self), email: try r["email"].decode(String?.self),
            phone: try r["phone"].decode(String?.self),
            language: CustomerLanguage(rawValue: try r["language"].decode(String.self)) ?? .en,
            consent: try r["consent"].decode(Bool.self), erasedAt: try r["erased_at"].decode(Date?.self),
            createdAt: try r["created_at"].decode(Date.self), updatedAt: try r["updated_at"].decode(Date.self))
    }

    static func message(_ row: PostgresRow) throws -> CustomerMessage {
        let r = row.makeRandomAccess()
        return CustomerMessage(
            id: try r["id"].decode(Int64.self), taskID: try r["task_id"].decode(Int64.self),
            customerID: try r["customer_id"].decode(Int64.self),
            kind: CustomerMessage.Kind(rawValue: try r["kind"].decode(String.self)) ?? .booked,
            sequence: Int(try r["sequence"].decode(Int32.self)),
            channel: CustomerMessage.Channel(rawValue: try r["channel"].decode(String.self)) ?? .email,
            afterTaskID: try r["after_task_id"].decode(Int64?.self),
            state: CustomerMessage.State(rawValue: try r["state"].decode(String.self)) ?? .pending,
            reason: try r["reason"].decode(String?.self), attempts: Int(try r["attempts"].decode(Int32.self)),
            sentAt: try r["sent_at"].decode(Date?.self), createdAt: try r["created_at"].decode(Date.self))
    }

    static func appointment(_ row: PostgresRow) throws -> Appointment {
        let r = row.makeRandomAccess()
        return Appointment(
            taskID: try r["task_id"].decode(Int64.self), customerID: try r["customer_id"].decode(Int64.self),
            sequence: Int(try r["sequence"].decode(Int32.self)),
            answer: AppointmentAnswer(rawValue: try r["answer"].decode(String.self)) ?? .none,
            asked: try FieldTask.window(start: r["asked_start"].decode(Date?.self), end: r["asked_end"].decode(Date?.self)),
            answeredAt: try r["answered_at"].decode(Date?.self), notTold: try r["not_told"].decode(String?.self))
    }

    public func addCustomer(_ new: NewCustomer) async throws -> Customer {
        try await transaction { connection in
            try Self.customer(
                try await connection.query(
                    """
                    INSERT INTO customers AS c (name, email, phone, language, consent)
                    VALUES (\(new.name), \(new.email), \(new.phone), \(new.language.rawValue), \(new.consent))
                    RETURNING \(unescaped: Self.customerColumns)
                    """, logger: logger
                ).collect()[0])
        }
    }

    /// Customers by name; `search` narrows to those whose name, email or phone holds it.
    public func customers(search: String? = nil, limit: Int = 500) async throws -> [Customer] {
        let pattern = search.map(Self.containing)
        return try await rows(
            """
            SELECT \(unescaped: Self.customerColumns) FROM customers c
            WHERE \(pattern)::text IS NULL OR concat_ws(' ', c.name, c.email, c.phone) ILIKE \(pattern)
            ORDER BY lower(c.name), c.id LIMIT \(limit)
            """
        ).map(Self.customer)
    }

    public func customer(id: Int64) async throws -> Customer {
        guard let row = try await rows("SELECT \(unescaped: Self.customerColumns) FROM customers c WHERE c.id = \(id)").first else {
            throw TeamworkError.notFound("no customer with id \(id)")
        }
        return try Self.customer(row)
    }

    /// A customer by id (digits) or email (any case).
    public func customer(reference: String) async throws -> Customer {
        if let id = Int64(reference) { return try await customer(id: id) }
        guard
            let row = try await rows(
                "SELECT \(unescaped: Self.customerColumns) FROM customers c WHERE lower(c.email) = lower(\(reference))"
            ).first
        else { throw TeamworkError.notFound("no customer with that email") }
        return try Self.customer(row)
    }

    public func updateCustomer(id: Int64, _ changes: CustomerChanges) async throws -> Customer {
        let current = try await customer(id: id)
        if current.erasedAt != nil { throw TeamworkError.conflict("customer \(id) was erased") }
        let (setEmail, setPhone) = (changes.email != nil, changes.phone != nil)
        return try await transaction { connection in
            try Self.customer(
                try await connection.query(
                    """
                    UPDATE customers AS c SET name = coalesce(\(changes.name), name),
                        email = CASE WHEN \(setEmail) THEN \(changes.email ?? nil) ELSE email END,
                        phone = CASE WHEN \(setPhone) THEN \(changes.phone ?? nil) ELSE phone END,
                        language = coalesce(\(changes.language?.rawValue), language),
                        consent = coalesce(\(changes.consent), consent), updated_at = now()
                    WHERE c.id = \(id) RETURNING \(unescaped: Self.customerColumns)
                    """, logger: logger
                ).collect()[0])
        }
    }

    /// Erases a customer on their request: name, email and phone gone, consent withdrawn, their
    /// messages, appointments and links deleted. Sites and tasks keep pointing at the erased row, so
    /// the work's history stands.
    public func eraseCustomer(id: Int64) async throws -> Customer {
        _ = try await customer(id: id)
        return try await transaction { connection in
            // What is removed is recorded (customer_erasures), by the one function allowed to remove it.
            // Collected: an error the function raises comes with its rows, not with the call.
            _ = try await connection.query("SELECT teamwork_erase_customer(\(id))", logger: logger).collect()
            return try Self.customer(
                try await connection.query("SELECT \(unescaped: Self.customerColumns) FROM customers c WHERE c.id = \(id)", logger: logger)
                    .collect()[0])
        }
    }

    /// Names `customerID` (nil: none) as site `locationID`'s customer.
    public func setSiteCustomer(locationID: Int64, customerID: Int64?) async throws {
        try await requireSite(locationID)
        if let customerID { _ = try await customer(id: customerID) }
        try await transaction { connection in
            try await connection.query(
                "UPDATE locations SET customer_id = \(customerID), updated_at = now() WHERE id = \(locationID)", logger: logger)
        }
    }

    /// The customer a site names, if any.
    public func siteCustomer(locationID: Int64) async throws -> Customer? {
        try await rows(
            """
            SELECT \(unescaped: Self.customerColumns) FROM customers c JOIN locations l ON l.customer_id = c.id
            WHERE l.id = \(locationID)
            """
        ).first.map(Self.customer)
    }

    /// The customer a task's messages go to: its own, else its site's.
    public func taskCustomer(taskID: Int64) async throws -> Customer? {
        try await rows(
            """
            SELECT \(unescaped: Self.customerColumns) FROM tasks k LEFT JOIN locations l ON l.id = k.location_id
            JOIN customers c ON c.id = coalesce(k.customer_id, l.customer_id) WHERE k.id = \(taskID)
            """
        ).first.map(Self.customer)
    }

    /// Each task's customer (its own, else its site's), for the board and lists.
    public func taskCustomers(taskIDs: [Int64]) async throws -> [Int64: Customer] {
        guard !taskIDs.isEmpty else { return [:] }
        var found: [Int64: Customer] = [:]
        for row in try await rows(
            """
            SELECT k.id AS task, \(unescaped: Self.customerColumns) FROM tasks k LEFT JOIN locations l ON l.id = k.location_id
            JOIN customers c ON c.id = coalesce(k.customer_id, l.customer_id) WHERE k.id = ANY(\(taskIDs))
            """)
        {
            found[try row.makeRandomAccess()["task"].decode(Int64.self)] = try Self.customer(row)
        }
        return found
    }

    public func appointments(taskIDs: [Int64]) async throws -> [Int64: Appointment] {
        guard !taskIDs.isEmpty else { return [:] }
        let list = try await rows("SELECT \(unescaped: Self.appointmentColumns) FROM appointments a WHERE a.task_id = ANY(\(taskIDs))")
            .map(Self.appointment)
        return Dictionary(uniqueKeysWithValues: list.map { ($0.taskID, $0) })
    }

    /// Messages about a task, or to a customer, oldest first.
    public func customerMessages(taskID: Int64? = nil, customerID: Int64? = nil, limit: Int = 200) async throws -> [CustomerMessage] {
        try await rows(
            """
            SELECT \(unescaped: Self.messageColumns) FROM customer_messages m
            WHERE (\(taskID)::bigint IS NULL OR m.task_id = \(taskID))
              AND (\(customerID)::bigint IS NULL OR m.customer_id = \(customerID))
            ORDER BY m.id DESC LIMIT \(limit)
            """
        ).map(Self.message).reversed()
    }

    /// Everything kept about a customer, for their request to see it: the contact, the sites that
    /// name them, the tasks for them (with appointment answers) and the messages sent.
    public func customerExport(id: Int64) async throws -> CustomerExport {
        let customer = try await customer(id: id)
        let sites = try await rows(
            "SELECT \(unescaped: Columns.location) FROM locations l WHERE l.customer_id = \(id) ORDER BY l.id"
        ).map(Location.init(row:))
        let tasks = try await rows(
            """
            SELECT \(unescaped: Columns.task) FROM tasks k LEFT JOIN locations l ON l.id = k.location_id
            WHERE coalesce(k.customer_id, l.customer_id) = \(id) ORDER BY k.id
            """
        ).map(FieldTask.init(row:))
        let appointments = try await appointments(taskIDs: tasks.map(\.id))
        return CustomerExport(
            customer: customer, sites: sites,
            tasks: tasks.map {
                .init(
                    id: $0.id, title: $0.title, status: $0.status, window: $0.window, timeZone: $0.timeZone,
                    appointment: appointments[$0.id])
            },
            messages: try await customerMessages(customerID: id, limit: 10_000))
    }
}

/// What `customer export` gives: everything kept about one customer.
public struct CustomerExport: Sendable, Codable {
    public struct Work: Sendable, Codable {
        public var id: Int64
        public var title: String
        public var status: TaskStatus
        public var window: TimeWindow?
        public var timeZone: String
        public var appointment: Appointment?
    }

    public var customer: Customer
    public var sites: [Location]
    public var tasks: [Work]
    public var messages: [CustomerMessage]
}
