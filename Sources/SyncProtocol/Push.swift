import TeamworkModel

/// `POST /v1/replicas/{name}/changes`: `{"changes": [...]}`, and `"resent": true` when the
/// device sends again changes a host accepted before and the master has not confirmed (the
/// host then answers those the master's ledger holds as settled, without taking them again).
/// Decoding is strict: a field other than these is an error, not ignored.
public struct PushRequest: Sendable, Codable, Equatable {
    /// Most changes in one push.
    public static let maximumChanges = 1_000
    /// Largest body, in bytes.
    public static let maximumBodySize = 1 << 20

    public var changes: [WorkerChange]
    /// These changes were accepted before, by this host or another, and are sent again because the
    /// master has not confirmed them (the host that accepted them may have lost them with its disk).
    public var resent: Bool

    public init(changes: [WorkerChange], resent: Bool = false) {
        self.changes = changes
        self.resent = resent
    }

    enum CodingKeys: String, CodingKey { case changes, resent }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        if let unknown = container.allKeys.first(where: { !["changes", "resent"].contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown field '\(unknown.stringValue)'"))
        }
        let known = try decoder.container(keyedBy: CodingKeys.self)
        changes = try known.decode([WorkerChange].self, forKey: .changes)
        resent = try known.decodeIfPresent(Bool.self, forKey: .resent) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(changes, forKey: .changes)
        if resent { try container.encode(true, forKey: .resent) }
    }
}

/// What the endpoint answers a push: each change's fate, in order, and the counts.
public struct PushResponse: Sendable, Codable, Equatable {
    public var results: [WorkerChangeResult]
    public var accepted: Int
    public var rejected: Int

    public init(results: [WorkerChangeResult]) {
        self.results = results
        accepted = results.filter { $0.status == .accepted }.count
        rejected = results.filter { $0.status == .rejected }.count
    }
}
