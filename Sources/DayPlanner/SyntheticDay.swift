import Foundation
import TeamworkModel

extension DayFacts {
    /// A made-up but realistic day of one Stockholm crew, the same for a seed: `workers` workers
    /// with one to three skills and weekly hours (early, normal or late shifts), `tasks` tasks at
    /// their own sites within about 8 km of the depot, most with a two- to four-hour window, the rest due by
    /// the end of the day, 15 to 40 minutes on site, a third needing a skill, mixed priorities;
    /// `absences` workers away (the first all day, the next from noon, the others all day), one
    /// task in twenty already started. For the realistic-day benchmark and the planner's checks.
    public static func synthetic(workers: Int, tasks count: Int, absences: Int, seed: UInt64) -> DayFacts {
        var random = SplitMix(seed: seed)
        func uniform() -> Double { random.unit() }
        func pick<T>(_ items: [T]) -> T { items[Int(uniform() * Double(items.count)) % items.count] }
        let zone = Zone.reading("Europe/Stockholm")
        let day = LocalDate(year: 2026, month: 12, day: 1)!  // a Tuesday
        let epoch = Date(timeIntervalSince1970: 1_700_000_000)
        let team = Team(
            id: 1, slug: "crew", name: "Crew", description: "", color: nil, createdBy: nil, createdAt: epoch, updatedAt: epoch,
            timeZone: zone.name, depotLocationID: 1, taskMinutes: 45, travelArea: .urban)
        let centre = (latitude: 59.3293, longitude: 18.0686)
        var sites: [Int64: Location] = [:]
        func site(_ id: Int64, spread: Double) -> Int64 {
            let latitude = centre.latitude + (uniform() - 0.5) * spread / 111
            let longitude = centre.longitude + (uniform() - 0.5) * spread / 56
            sites[id] = Location(
                id: id, kind: .site, personID: nil, name: "Site \(id)", latitude: latitude, longitude: longitude, elevation: nil,
                address: Address(), createdAt: epoch, updatedAt: epoch)
            return id
        }
        _ = site(1, spread: 0)
        let skills = ["electrical", "meters", "climbing", "high-voltage"]
        let shifts = try! [
            WorkingWeek(parsing: ["mon-fri 07:00-16:00"]), WorkingWeek(parsing: ["mon-fri 06:00-14:00"]),
            WorkingWeek(parsing: ["mon-fri 09:00-18:00"]),
        ]
        let midnight = zone.instant(day, LocalTime(hour: 0, minute: 0)!)
        func at(_ hour: Double) -> Date { midnight.addingTimeInterval(hour * 3600) }
        var members: [Member] = []
        for index in 0..<workers {
            let id = Int64(100 + index)
            let theirs = Set((0..<(1 + Int(uniform() * 3))).map { _ in pick(skills) }).sorted()
            let person = Person(
                id: id, firstName: "Worker", lastName: String(index + 1), email: "w\(index + 1)@example.org", role: .worker,
                createdAt: epoch, updatedAt: epoch, skills: theirs)
            var away: [Absence] = []
            if index < absences {
                let (from, reason): (Double, AbsenceReason) = index == 1 ? (12, .sick) : (0, index == 0 ? .sick : .vacation)
                away.append(Absence(id: Int64(index + 1), personID: id, startsAt: at(from), endsAt: at(24), reason: reason, note: ""))
            }
            members.append(
                Member(person: person, week: pick(shifts), exception: nil, absences: away, position: nil))
        }
        var work: [FieldTask] = []
        for index in 0..<count {
            let id = Int64(1000 + index)
            let place = site(Int64(10 + index), spread: 16)
            var window: TimeWindow?
            var due: Date?
            if uniform() < 0.6 {
                let start = 7 + Double(Int(uniform() * 8))
                window = try! TimeWindow(start: at(start), end: at(start + pick([2.0, 3.0, 4.0])))
            } else {
                due = at(pick([15.0, 16.0, 17.0]))
            }
            var task = FieldTask(
                id: id, title: "Job \(index + 1)", description: "", priority: pick([.low, .normal, .normal, .normal, .high, .urgent]),
                status: .open, teamID: 1, assigneeID: nil, locationID: place, dueAt: due, createdBy: nil, createdAt: epoch,
                updatedAt: epoch, startedAt: nil, completedAt: nil, completedBy: nil, completionNote: nil, version: 1,
                requiredSkills: uniform() < 0.33 ? [pick(skills)] : [], window: window, timeZone: zone.name,
                durationMinutes: Int(15 + uniform() * 25))
            if index % 20 == 0,
                let holder = members.dropFirst(absences).first(where: { Set(task.requiredSkills).isSubset(of: $0.person.skills) })
            {
                task.status = .inProgress
                task.assigneeID = holder.person.id
                task.startedAt = at(7)
                task.window = nil
                task.dueAt = nil
            }
            work.append(task)
        }
        return DayFacts(team: team, day: day, tasks: work, members: members, sites: sites)
    }
}
