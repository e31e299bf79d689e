import ArgumentParser
import CommandLineSupport
import Foundation
import TeamworkModel
import WorkerClient

struct Positions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Where you and your teammates last checked in, as of the last sync.",
        discussion: "Teammates appear only in teams whose manager lets members share positions; managers always see them."
    )
    @OptionGroup var output: JSONOption

    func run() async throws {
        let home = try WorkerHome()
        let store = try home.store()
        let me = try home.personID(store)
        let positions = try store.positions()
        if output.json { return try output.print(positions) }
        let now = Date()
        if positions.isEmpty { return TeamworkWorker.say("No positions: nobody you may see has checked in (or sync first).") }
        TextOutput.table(
            ["WHO", "POSITION", "REPORTED"],
            try positions.map { position in
                let who = position.personID == me ? "you" : (try store.personName(position.personID) ?? "person \(position.personID)")
                let minutes = Int(now.timeIntervalSince(position.reportedAt) / 60)
                let age =
                    minutes < 60 ? "\(max(0, minutes)) min ago" : minutes < 2_880 ? "\(minutes / 60) h ago" : "\(minutes / 1_440) days ago"
                return [
                    who, String(format: "%.5f, %.5f", position.latitude, position.longitude),
                    "\(ISODate.format(position.reportedAt)) (\(age))",
                ]
            })
    }
}
