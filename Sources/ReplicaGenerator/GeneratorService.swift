import ServiceLifecycle

/// The generator as a service: the folder's one generator, or standing by for
/// another instance (``ReplicaGenerator/follow(retry:roleChanged:leaseChecked:afterPass:)``),
/// until graceful shutdown. The callbacks report each pass, each look at the
/// lease and each change of role, for `/health`, `/metrics` and the log.
public struct GeneratorService: Service {
    public let generator: ReplicaGenerator
    public var roleChanged: @Sendable (GeneratorRole) -> Void
    public var leaseChecked: @Sendable () -> Void
    public var afterPass: @Sendable (CatchUpReport) -> Void

    public init(
        generator: ReplicaGenerator, roleChanged: @escaping @Sendable (GeneratorRole) -> Void = { _ in },
        leaseChecked: @escaping @Sendable () -> Void = {},
        afterPass: @escaping @Sendable (CatchUpReport) -> Void = { _ in }
    ) {
        self.generator = generator
        self.roleChanged = roleChanged
        self.leaseChecked = leaseChecked
        self.afterPass = afterPass
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await generator.follow(roleChanged: roleChanged, leaseChecked: leaseChecked, afterPass: afterPass)
        }
    }
}
