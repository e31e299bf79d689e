import ArgumentParser
import Foundation
import Outbox
import TeamworkModel

/// How `run` reaches customers (docs/integrations.md): email over SMTP, texts through an SMS
/// provider's HTTP endpoint, the address of their appointment page, and the words.
struct MessageOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The SMTP relay customers' email goes through (or TEAMWORK_SMTP_URL): smtp://user@mail.example:587?from=visits@example.com (STARTTLS); its password from --smtp-password-file or TEAMWORK_SMTP_PASSWORD, never on the command line.",
            valueName: "url"))
    var smtpUrl: String?
    @Option(help: ArgumentHelp("A file holding the SMTP relay's password (or TEAMWORK_SMTP_PASSWORD).", valueName: "file"))
    var smtpPasswordFile: String?
    @Option(help: ArgumentHelp("Certificates to trust for the SMTP relay, PEM (or TEAMWORK_SMTP_CA_FILE).", valueName: "file"))
    var smtpCaFile: String?
    @Option(
        help: ArgumentHelp(
            "An SMS provider's endpoint for customers' texts, POSTed signed JSON {id, to, text} (or TEAMWORK_SMS_URL; the secret in TEAMWORK_SMS_SECRET).",
            valueName: "url"))
    var smsUrl: String?
    @Option(
        help: ArgumentHelp(
            "The address customers open their appointment page at (or TEAMWORK_PUBLIC_URL; default: --board-origin, else this server's).",
            valueName: "url"))
    var publicUrl: String?
    @Option(
        help: ArgumentHelp(
            "The company's name (or TEAMWORK_COMPANY): the sender of customers' email and texts, their words, the invitation's organizer and the customer's page.",
            valueName: "name"))
    var company: String?
    @Option(help: ArgumentHelp("A folder of KIND.LANGUAGE.txt files with the company's own words.", valueName: "dir"))
    var messageTemplates: String?
    @Option(help: ArgumentHelp("From when on the day before a visit its reminder goes, on the site's clock.", valueName: "HH:MM"))
    var reminderTime = "09:00"
    @Option(
        help: "Seconds one email's whole SMTP conversation may take (2 to 600); one cut off by a crash goes again after this and 5 more.")
    var smtpTimeout: Double = 120
    @Option(
        help: ArgumentHelp(
            "Run the customers' clock from this instant (ISO 8601, e.g. 2026-12-01T08:55:00+01:00) to rehearse a day or test one; reminders and visits being over are judged by it (default: the system's time).",
            valueName: "instant"))
    var clock: String?
    @Option(help: "At most this many messages to one customer in 24 hours.") var messagesPerDay = 10
    @Option(help: "Seconds before a failed message's first retry; each next waits up to twice as long (full jitter).")
    var messageRetry: Double = 30

    private var environment: [String: String] { ProcessInfo.processInfo.environment }
    private func setting(_ option: String?, _ variable: String) -> String? { optionOrEnvironment(option, variable) }

    static func isLoopback(_ host: String) -> Bool {
        ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()) || host.hasPrefix("127.")
    }

    /// Whether customers' links fall back to this server's own address (no --public-url, no --board-origin).
    func linksFallBack(boardOrigin: String?) -> Bool { setting(publicUrl, "TEAMWORK_PUBLIC_URL") == nil && boardOrigin == nil }

    func check() throws {
        if !(1...1000).contains(messagesPerDay) { throw ValidationError("--messages-per-day must be 1 to 1000") }
        if !(2...600).contains(smtpTimeout) { throw ValidationError("--smtp-timeout must be 2 to 600 seconds") }
        if !(0.01...3600).contains(messageRetry) { throw ValidationError("--message-retry must be 0.01 to 3600 seconds") }
        _ = try settings(defaultURL: "http://localhost", boardOrigin: nil)
    }

    /// The SMTP password from `--smtp-password-file` (its first line) or TEAMWORK_SMTP_PASSWORD, if given.
    func smtpPassword() throws -> String? {
        if let smtpPasswordFile {
            guard let text = try? String(contentsOfFile: smtpPasswordFile, encoding: .utf8),
                let line = text.split(separator: "\n", omittingEmptySubsequences: false).first, !line.isEmpty
            else { throw ValidationError("--smtp-password-file: cannot read a password from \(smtpPasswordFile)") }
            return String(line.hasSuffix("\r") ? line.dropLast() : line)
        }
        return environment["TEAMWORK_SMTP_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
    }

    func settings(defaultURL: String, boardOrigin: String?) throws -> MessageService.Settings {
        do {
            let given = setting(publicUrl, "TEAMWORK_PUBLIC_URL")
            let base = given ?? boardOrigin ?? defaultURL
            // One given for customers is https (http only on this machine); the fallbacks are as they are (with a warning).
            guard let url = URL(string: base), let host = url.host, url.query == nil,
                url.scheme?.lowercased() == "https" || (url.scheme?.lowercased() == "http" && (given == nil || Self.isLoopback(host)))
            else {
                throw ValidationError(
                    "--public-url must be an https address, like https://visits.example.com (http only on this machine): links carry secrets"
                )
            }
            var settings = MessageService.Settings(publicURL: base.hasSuffix("/") ? String(base.dropLast()) : base)
            // Anyone on the machine reads a command line (ps); a file or the environment is the owner's alone.
            if let smtpUrl, URLComponents(string: smtpUrl)?.password != nil {
                throw ValidationError(
                    "--smtp-url carries a password, which ps shows to everyone on this machine: give it in --smtp-password-file or TEAMWORK_SMTP_PASSWORD"
                )
            }
            let password = try smtpPassword()
            settings.smtp = try setting(smtpUrl, "TEAMWORK_SMTP_URL").map {
                var smtp = try SMTPSettings.parse($0, caFile: setting(smtpCaFile, "TEAMWORK_SMTP_CA_FILE"), password: password)
                smtp.totalTimeout = .milliseconds(Int(smtpTimeout * 1000))
                smtp.stepTimeout = min(smtp.stepTimeout, smtp.totalTimeout)
                return smtp
            }
            if let sms = setting(smsUrl, "TEAMWORK_SMS_URL") {
                guard let url = URL(string: sms), let host = url.host, url.scheme?.lowercased() == "https" || Self.isLoopback(host) else {
                    throw ValidationError("--sms-url must be an https address (http only on this machine): texts carry phone numbers")
                }
                settings.sms = try MessageService.SMSTarget(url: sms, secret: environment["TEAMWORK_SMS_SECRET"] ?? "")
            }
            // One name for the company: --company, else the SMTP url's older name= (not both, unless they agree).
            let named = settings.smtp.flatMap { $0.fromName.isEmpty ? nil : $0.fromName }
            if let company = setting(company, "TEAMWORK_COMPANY") ?? named {
                guard (1...100).contains(company.count), !company.contains(where: \.isNewline) else {
                    throw ValidationError("--company is 1 to 100 characters on one line")
                }
                if let named, named != company {
                    throw ValidationError(
                        "the SMTP url's name=\(named) and --company \(company) differ: give the company's name once, in --company")
                }
                settings.company = company
            }
            if let folder = messageTemplates { settings.templates = try MessageTemplates.load(folder: folder) }
            settings.reminderTime = try LocalTime(parsing: reminderTime, field: "--reminder-time")
            if let clock {
                guard let start = ISO8601DateFormatter().date(from: clock) else {
                    throw ValidationError("--clock takes an instant with its offset, like 2026-12-01T08:55:00+01:00")
                }
                settings.clock = WallClock(startingAt: start)
            }
            settings.dailyLimit = messagesPerDay
            settings.retryBase = .milliseconds(Int(messageRetry * 1000))
            return settings
        } catch let error as TeamworkError {
            throw ValidationError(error.message)
        }
    }
}
