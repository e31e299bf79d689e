import Foundation
import PostgresNIO
import TeamworkModel
import TeamworkTestSupport
import Testing

@testable import CentralStore

/// The master holds a task's reference to the rule DeclaredValues checks first (sql/0053): whatever writes the
/// row, a line break or an invisible formatting character never gets in.
@Suite struct TaskReferenceTests {
    @Test func theMasterRefusesAReferenceThatIsNotOneVisibleLine() async throws {
        try await TestDatabase.withStore { store in
            let world = try await Fixtures.seed(store)
            var new = try world.task("meter", team: world.red)
            try new.declared.set("reference", to: "WO-1182")
            let task = try await store.createTask(new)
            #expect(task.reference == "WO-1182")
            for bad in ["a\nb", "a\u{2028}b", "a\u{202E}b", "a\u{200B}b", "a\u{85}b", "", String(repeating: "x", count: 101)] {
                do {
                    _ = try await store.rows("UPDATE tasks SET reference = \(bad) WHERE id = \(task.id)")
                    Issue.record("taken: \(bad.unicodeScalars.map { String($0.value, radix: 16) })")
                } catch {
                    let said = (StoreError.map(error) as? TeamworkError)?.message ?? "\(error)"
                    #expect(said.hasPrefix("reference is one line"), "\(said)")
                }
            }
            #expect(try await store.task(id: task.id).reference == "WO-1182")
        }
    }
}
