import ArgumentParser
import CentralStore
import Egress
import Foundation
import Outbox
import TeamworkModel

/// `teamwork-manager webhook …`: the systems that hear of Teamwork's events (docs/integrations.md).
struct WebhookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook",
        abstract: "Tell other systems (billing, CRM, a warehouse) of task events by signed HTTP POSTs (Standard Webhooks).",
        subcommands: [Add.self, List.self, Rotate.self, Pause.self, Resume.self, Deliveries.self, Replay.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Subscribe an address to events; prints its signing secret once.",
            discussion: "Events: \(WebhookEvent.allCases.map(\.rawValue).joined(separator: ", ")).")
        @OptionGroup var connection: ConnectionOptions
        @Option(help: "Where to POST, http(s).") var url: String
        @Option(help: "An event to hear of (repeatable).") var event: [String] = []
        @Option(help: "What it is for (at most 200 characters).") var description = ""
        @Flag(help: "Accept an address on this machine or a private network (the service must allow them too).") var allowPrivate = false
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let events = try event.map(WebhookEvent.parse)
            let address = try WebhookSubscription.validURL(url)
            if let refusal = await WebhookDestination.refusal(host: address.host ?? "", policy: EgressPolicy(allowPrivate: allowPrivate)) {
                throw TeamworkError.invalid("the webhook's address is refused: \(refusal) (--allow-private to accept it)")
            }
            let (subscription, secret) = try await connection.withStore {
                try await $0.addWebhook(url: url, events: events, description: description)
            }
            if output.json {
                struct Made: Encodable {
                    var webhook: WebhookSubscription
                    var secret: String
                }
                return try Output.json(Made(webhook: subscription, secret: secret))
            }
            Output.announce("webhook \(subscription.id) made; its signing secret, shown only now:")
            Output.line(secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List webhooks: address, events, their secret's fingerprint (the start of its SHA-256), state.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let (hooks, names) = try await connection.withStore { store in
                (try await store.webhooks(), output.json ? TaskCommand.Names() : try await TaskCommand.Names.load(store))
            }
            if output.json { return try Output.json(hooks) }
            Output.table(
                ["ID", "URL", "EVENTS", "SECRET", "ROTATED", "OLD SECRET SIGNS UNTIL", "STATE"],
                hooks.map { hook in
                    let rotated = hook.rotatedAt.map { at in
                        Output.date(at) + (hook.rotatedBy.map { " by \(names.people[$0] ?? String($0))" } ?? "")
                    }
                    return [
                        String(hook.id), hook.url, hook.events.map(\.rawValue).joined(separator: ","),
                        "sha256:\(hook.secretFingerprint)…", rotated ?? "-",
                        hook.previousUntil.flatMap { $0 > Date() ? Output.date($0) : nil } ?? "-",
                        hook.pausedAt == nil ? "active" : "paused: \(hook.pausedReason ?? "by hand")",
                    ]
                }, maxWidth: 60)
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a webhook a new secret (printed once); the old one still signs beside it for 24 hours.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Webhook id.") var id: Int64

        func run() async throws {
            let secret = try await connection.withStore { try await $0.rotateWebhookSecret(id: id) }
            Output.announce("webhook \(id) has a new secret, shown only now; the old one still signs for 24 hours:")
            Output.line(secret)
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop sending to a webhook; its events wait for it.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Webhook id.") var id: Int64
        @Option(help: "Why (shown in the list).") var reason = "paused by hand"

        func run() async throws {
            _ = try await connection.withStore { try await $0.pauseWebhook(id: id, reason: String(reason.prefix(200))) }
            Output.line("Paused webhook \(id)")
        }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send to a webhook again, from the oldest event that waited.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Webhook id.") var id: Int64

        func run() async throws {
            _ = try await connection.withStore { try await $0.pauseWebhook(id: id, reason: nil) }
            Output.line("Resumed webhook \(id)")
        }
    }

    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A webhook's deliveries, newest first: state, attempts, last answer.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Webhook id.") var id: Int64
        @Flag(help: "Only those that failed for good.") var failed = false
        @Option(help: "At most this many (1 to 1000).") var limit = 50
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let found = try await connection.withStore {
                try await $0.webhookDeliveries(subscriptionID: id, limit: limit, failedOnly: failed)
            }
            if output.json { return try Output.json(found) }
            Output.table(
                ["DELIVERY", "EVENT ID", "EVENT", "TASK", "STATE", "ATTEMPTS", "LAST"],
                found.map {
                    [
                        String($0.id), WebhookDelivery.messageID($0.eventID), $0.event, $0.taskID.map(String.init) ?? "-",
                        $0.state.rawValue, String($0.attempts), $0.lastError ?? $0.lastStatus.map { "HTTP \($0)" } ?? "-",
                    ]
                })
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send a delivery again, with its id (a receiver that has it drops it).")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Delivery id.") var delivery: Int64

        func run() async throws {
            let replayed = try await connection.withStore { try await $0.replayDelivery(id: delivery) }
            Output.line("Delivery \(replayed.id) (\(WebhookDelivery.messageID(replayed.eventID))) goes again")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a webhook and what waits for it.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Webhook id.") var id: Int64

        func run() async throws {
            try await connection.withStore { try await $0.removeWebhook(id: id) }
            Output.line("Removed webhook \(id)")
        }
    }
}
