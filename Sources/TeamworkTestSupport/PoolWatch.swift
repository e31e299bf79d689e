import Foundation
import TeamworkModel

/// Watches the test process's cooperative threads from a thread of its own. A test that blocks one
/// of them (a socket, a child process, a held lock waited on with `usleep`) can stall every other
/// test: on Linux the pool may not grow past a blocked worker, and then nothing async runs until the
/// block ends (seen: 40 s, then "I/O on closed channel" in an unrelated test). When no task has run
/// for 20 s, the stacks of the threads running Swift tasks are printed once on standard error, so
/// the test that blocked is named by the run that met it. ("No task has run": a task newly
/// started could not run within 20 s.) Blocking work belongs in ``blockingWork(_:)``.
public enum PoolWatch {
    static let lastBeat = Locked(ContinuousClock.now)

    /// Starts the watch once per test process (a benchmark that uses the test helpers gets none); later calls do nothing.
    public static func start() {
        guard CommandLine.arguments.first?.hasSuffix(".xctest") == true else { return }
        _ = started
    }

    private static let started: Void = {
        let thread = Thread {
            var reported = false
            while true {
                Task.detached { lastBeat.mutate { $0 = ContinuousClock.now } }
                Thread.sleep(forTimeInterval: 1)
                let silent = ContinuousClock.now - lastBeat.value
                if silent < .seconds(2) { reported = false }
                guard silent > .seconds(20), !reported else { continue }
                reported = true
                FileHandle.standardError.write(
                    Data("warning: no task of the test process has run for \(silent): what its task threads do:\n\(taskStacks())\n".utf8))
            }
        }
        thread.name = "pool-watch"
        thread.start()
    }()

    /// The stacks of this process's threads that run Swift tasks (gdb, within a minute); gdb's own
    /// words when it could not attach, and the whole output's end when no thread shows a task.
    static func taskStacks() -> String {
        let (status, text) = ServiceProcess.gdbStacks(of: getpid())
        guard status == 0 else { return "(no stacks: gdb ended with \(status): \(text.suffix(500)))" }
        let threads = text.components(separatedBy: "\nThread ").filter { $0.contains("swift_job_run") }
        guard !threads.isEmpty else { return "(no thread shows a task; gdb's output ends:)\n\(text.suffix(4_000))" }
        return threads.map { "Thread " + $0.split(separator: "\n").filter { !$0.hasPrefix("During symbol") }.joined(separator: "\n") }
            .joined(separator: "\n")
    }
}
