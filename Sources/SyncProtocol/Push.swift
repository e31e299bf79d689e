import TeamworkModel

/// `POST /v1/replicas/{name}/changes`: `{"changes": [...]}`. Decoding is
/// strict: a field other than `changes` is an error, not ignored.
public struct PushRequest: Sendable, Codable, Equatable {
    /// Most changes in one push.
    public static let maximumChanges = 1_000
    /// Largest body, in bytes.
    public static let maximumBodySize = 1 << 20

    public var changes: [WorkerChange]

    public init(changes: [WorkerChange]) {
        self.changes = changes
    }

    enum CodingKeys: String, CodingKey { case changes }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        if let unknown = container.allKeys.first(where: { $0.stringValue != "changes" }) {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown field '\(unknown.stringValue)'"))
        }
        changes = try decoder.container(keyedBy: CodingKeys.self).decode([WorkerChange].self, forKey: .changes)
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
