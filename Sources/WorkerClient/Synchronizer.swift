import Foundation
import TeamDatabase
import TeamworkModel

/// One sync: push what is queued, then pull every replica the worker may have,
/// and drop the local copies of replicas they lost.
public struct Synchronizer: Sendable {
    public struct Report: Sendable, Equatable {
        public var pulledRows = 0
        public var pushed = 0
        public var rejected = 0
        public var refetched: [String] = []
        public var removed: [String] = []
    }

    public let client: SyncClient
    public let store: LocalStore
    public var pageSize = 2_000

    public init(client: SyncClient, store: LocalStore) {
        self.client = client
        self.store = store
    }

    public func sync(progress: (String) -> Void = { _ in }) async throws -> Report {
        var report = Report()
        let listing = try await client.listing()
        try store.set("person_id", String(listing.person))
        let wanted = listing.replicas
        let names = Set(wanted.map(\.name))
        for local in try store.replicas() where !names.contains(local.name) {
            try store.remove(replica: local.name)
            report.removed.append(local.title)
        }
        for entry in wanted {
            try store.register(name: entry.name, kind: entry.kind, title: entry.title, slug: entry.slug)
        }

        let queued = Dictionary(grouping: try store.pending(), by: \.replica)
        for (replica, changes) in queued.sorted(by: { $0.key < $1.key }) {
            guard names.contains(replica) else {
                try store.record(changes.map { .rejected($0.change.id, "you no longer have \(replica)") })
                report.rejected += changes.count
                continue
            }
            for batch in stride(from: 0, to: changes.count, by: 500).map({ Array(changes[$0..<min($0 + 500, changes.count)]) }) {
                let results = try await client.push(batch.map(\.change), to: replica)
                try store.record(results)
                report.pushed += results.filter { $0.status == .accepted }.count
                report.rejected += results.filter { $0.status == .rejected }.count
            }
        }

        for local in try store.replicas() {
            guard wanted.first(where: { $0.name == local.name })?.available == true else { continue }
            if local.kind == "common" {
                report.pulledRows += try await pullCommon(local)
                continue
            }
            var pages: [ChangePage] = []
            var epoch = local.epoch
            var position = local.position
            var replace = false
            var more = true
            while more {
                let page = try await client.page(local.name, epoch: epoch, since: position, limit: pageSize)
                if page.refetch {
                    // A new copy: gathered whole, swapped in at the end.
                    replace = true
                    pages.removeAll()
                }
                if replace {
                    pages.append(page)
                    progress("\(local.title): \(pages.reduce(0) { $0 + $1.tasks.count }) tasks fetched")
                } else {
                    report.pulledRows += try store.apply([page], to: local.name, replace: false)
                }
                epoch = page.epoch
                position = page.upTo
                more = page.more
            }
            if replace {
                report.pulledRows += try store.apply(pages, to: local.name, replace: true)
                report.refetched.append(local.title)
            }
        }
        try store.set("last_sync", ISODate.format(Date()))
        return report
    }

    /// The common replica: the same paging, into the device's people, teams and memberships.
    private func pullCommon(_ local: LocalStore.Replica) async throws -> Int {
        var pages: [CommonPage] = []
        var epoch = local.epoch
        var position = local.position
        var replace = false
        var rows = 0
        var more = true
        while more {
            let page = try await client.commonPage(epoch: epoch, since: position, limit: pageSize)
            if page.refetch {
                replace = true
                pages.removeAll()
            }
            if replace { pages.append(page) } else { rows += try store.apply(common: [page], replace: false) }
            epoch = page.epoch
            position = page.upTo
            more = page.more
        }
        if replace { rows += try store.apply(common: pages, replace: true) }
        return rows
    }
}
