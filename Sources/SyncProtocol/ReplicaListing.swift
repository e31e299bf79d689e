/// `GET /v1/replicas`: who the caller is, and the replicas they may read
/// (their teams', their personal one, the common one).
public struct ReplicaListing: Sendable, Codable, Equatable {
    public struct Entry: Sendable, Codable, Equatable {
        /// `team-12`, `person-7` or `common`: the `{name}` of the replica's paths.
        public var name: String
        /// `team`, `person` or `common`.
        public var kind: String
        public var id: Int64?
        public var slug: String?
        public var title: String
        /// False until the generator has written the file.
        public var available: Bool

        public init(name: String, kind: String, id: Int64?, slug: String?, title: String, available: Bool) {
            self.name = name
            self.kind = kind
            self.id = id
            self.slug = slug
            self.title = title
            self.available = available
        }
    }

    public var person: Int64
    public var replicas: [Entry]

    public init(person: Int64, replicas: [Entry]) {
        self.person = person
        self.replicas = replicas
    }
}
