import ServiceLifecycle

/// The listener as a service: on graceful shutdown it finishes the batch in
/// hand (``EventListener/stop()``); `afterPass` hears of every pass.
public struct ListenerService: Service {
    public let listener: EventListener
    public var afterPass: @Sendable (EventListener.PassReport) -> Void

    public init(listener: EventListener, afterPass: @escaping @Sendable (EventListener.PassReport) -> Void = { _ in }) {
        self.listener = listener
        self.afterPass = afterPass
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await listener.run { report in
                afterPass(report)
                if report.recorded > 0 || !report.complete {
                    listener.logger.info(
                        "took in worker changes",
                        metadata: [
                            "recorded": "\(report.recorded)", "applied": "\(report.applied)", "conflicts": "\(report.conflicts)",
                            "skipped": "\(report.skipped.count)",
                        ])
                }
            }
        } onGracefulShutdown: {
            listener.stop()
        }
    }
}
