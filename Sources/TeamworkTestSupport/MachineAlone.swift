/// One test at a time for what must not share the machine's two cores: a flood that measures
/// what the service does under it (BudgetFloodTests), and a real browser with its own service
/// (PhoneAppTests). Side by side, a CI run saw the phone test take 65 s instead of 8 and the
/// flood's sign-ins go unanswered for 30 s: each starved the other, and the flood's figures
/// were the machine's, not the service's. Other tests run beside either as before.
public actor MachineAlone {
    public static let shared = MachineAlone()
    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    private func acquire() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
    }

    /// Runs `body` with the machine to itself among the tests that ask for it.
    public static func run<R: Sendable>(_ body: () async throws -> R) async rethrows -> R {
        await shared.acquire()
        do {
            let result = try await body()
            await shared.release()
            return result
        } catch {
            await shared.release()
            throw error
        }
    }
}
