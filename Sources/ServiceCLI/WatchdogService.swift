import Foundation
import Logging
import ServiceLifecycle

/// Tells systemd how the service is doing: `READY=1` once every part has
/// finished a pass, then `WATCHDOG=1` at half of `WatchdogSec=` while every
/// part keeps finishing passes (`healthy`). A loop that stalls stops the
/// feeding, and systemd restarts the service: a process is either doing its
/// job or is restarted, never "running" and doing nothing. `STOPPING=1` at
/// graceful shutdown.
struct WatchdogService: Service {
    let notifier: SystemdNotifier
    let logger: Logger
    let healthy: @Sendable () -> Bool
    /// How often health is looked at before the service is ready, and without a watchdog.
    var look: Duration = .milliseconds(500)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var ready = false
            var starving = false
            while !Task.isCancelled {
                let fine = healthy()
                if fine && !ready {
                    ready = notifier.send("READY=1")
                    if ready { logger.info("told systemd the service is ready") }
                }
                if ready, notifier.watchdogInterval != nil {
                    if fine {
                        notifier.send("WATCHDOG=1")
                        if starving { logger.notice("feeding systemd's watchdog again: every part is making progress") }
                    } else if !starving {
                        logger.error("not feeding systemd's watchdog: a part has stopped making progress (see /health)")
                    }
                    starving = !fine
                }
                let pause = notifier.watchdogInterval.map { ready ? $0 / 2 : look } ?? look
                try? await Task.sleep(for: pause)
            }
        }
        notifier.send("STOPPING=1")
    }
}
