import Foundation
import TeamworkModel

/// The words of the customers' messages, per kind and language (docs/integrations.md). Built in
/// for English and Swedish; a company changes any of them with a folder of `KIND.LANGUAGE.txt`
/// files (`booked.sv.txt`): the first line `Subject: ...`, then a blank line, then the body.
/// Placeholders: {name} {task} {site} {window} {link} {eta} {worker} {summary} {used} {company}.
/// `{used}` (what was used on the job, done only) is in no built-in template: a company that wants
/// its customers told puts it in its own `done` files.
public struct MessageTemplates: Sendable {
    public struct Template: Sendable, Equatable {
        public var subject: String
        public var body: String
    }

    public static let placeholders: Set<String> = [
        "name", "task", "site", "window", "link", "eta", "worker", "summary", "used", "company",
    ]

    var templates: [String: Template]

    public static let builtIn = MessageTemplates(templates: [
        "booked.en": Template(
            subject: "Your visit: {task}, {window}",
            body: """
                Hello {name},

                We will come for {task} at {site}, {window}.

                Confirm, pick another time or cancel: {link}

                The attached invitation puts the visit in your calendar.

                {company}
                """),
        "changed.en": Template(
            subject: "Your visit has moved: {task}, {window}",
            body: """
                Hello {name},

                The visit for {task} at {site} is now {window}.

                Confirm, pick another time or cancel: {link}

                The attached invitation updates your calendar.

                {company}
                """),
        "cancelled.en": Template(
            subject: "Your visit is cancelled: {task}",
            body: """
                Hello {name},

                The visit for {task} at {site} is cancelled. The attached update takes it out of your calendar.

                {company}
                """),
        "reminder.en": Template(
            subject: "Tomorrow: {task}, {window}",
            body: """
                Hello {name},

                A reminder: we come for {task} at {site} tomorrow, {window}.

                {company}
                """),
        "on_my_way.en": Template(
            subject: "{worker} is on the way, there about {eta}",
            body: """
                Hello {name},

                {worker} is on the way to {site} for {task} and expects to be there about {eta}.

                {company}
                """),
        "done.en": Template(
            subject: "Done: {task}",
            body: """
                Hello {name},

                {worker} has finished {task} at {site}.
                {summary}

                {company}
                """),
        "booked.sv": Template(
            subject: "Ert besök: {task}, {window}",
            body: """
                Hej {name},

                Vi kommer för {task} på {site}, {window}.

                Bekräfta, välj en annan tid eller avboka: {link}

                Den bifogade inbjudan lägger besöket i din kalender.

                {company}
                """),
        "changed.sv": Template(
            subject: "Ert besök är flyttat: {task}, {window}",
            body: """
                Hej {name},

                Besöket för {task} på {site} är nu {window}.

                Bekräfta, välj en annan tid eller avboka: {link}

                Den bifogade inbjudan uppdaterar din kalender.

                {company}
                """),
        "cancelled.sv": Template(
            subject: "Ert besök är avbokat: {task}",
            body: """
                Hej {name},

                Besöket för {task} på {site} är avbokat. Den bifogade uppdateringen tar bort det ur din kalender.

                {company}
                """),
        "reminder.sv": Template(
            subject: "I morgon: {task}, {window}",
            body: """
                Hej {name},

                En påminnelse: vi kommer för {task} på {site} i morgon, {window}.

                {company}
                """),
        "on_my_way.sv": Template(
            subject: "{worker} är på väg, framme cirka {eta}",
            body: """
                Hej {name},

                {worker} är på väg till {site} för {task} och räknar med att vara framme cirka {eta}.

                {company}
                """),
        "done.sv": Template(
            subject: "Klart: {task}",
            body: """
                Hej {name},

                {worker} har gjort klart {task} på {site}.
                {summary}

                {company}
                """),
    ])

    /// The built-in templates with those in `folder` in their place; a file with a name, a
    /// placeholder or a shape Teamwork does not know is refused, naming the file.
    public static func load(folder: String) throws -> MessageTemplates {
        var loaded = builtIn
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder) } catch {
            throw TeamworkError(.configuration, "cannot read the message templates folder \(folder)")
        }
        for name in names.sorted() where name.hasSuffix(".txt") {
            let key = String(name.dropLast(4))
            guard builtIn.templates[key] != nil else {
                throw TeamworkError(
                    .configuration,
                    "\(name): a template is named KIND.LANGUAGE.txt, with KIND one of \(CustomerMessage.Kind.allCases.map(\.rawValue).joined(separator: ", ")) and LANGUAGE en or sv"
                )
            }
            guard let data = FileManager.default.contents(atPath: folder + "/" + name), data.count <= 16_384,
                let text = String(data: data, encoding: .utf8)
            else { throw TeamworkError(.configuration, "\(name): not UTF-8 text of at most 16 KB") }
            let lines = text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
            guard let first = lines.first, first.hasPrefix("Subject: "), lines.count >= 3, lines[1].isEmpty else {
                throw TeamworkError(.configuration, "\(name): the first line is 'Subject: ...', then a blank line, then the body")
            }
            let template = Template(subject: String(first.dropFirst(9)), body: lines.dropFirst(2).joined(separator: "\n"))
            for field in [template.subject, template.body] {
                if let unknown = placeholders(in: field).first(where: { !Self.placeholders.contains($0) }) {
                    throw TeamworkError(
                        .configuration,
                        "\(name): no placeholder {\(unknown)}; there are {\(Self.placeholders.sorted().joined(separator: "} {"))}")
                }
            }
            loaded.templates[key] = template
        }
        return loaded
    }

    static func placeholders(in text: String) -> [String] {
        var found: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            found.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return found
    }

    /// The subject and body of `kind` in `language`, with `values` in the placeholders.
    public func render(_ kind: CustomerMessage.Kind, _ language: CustomerLanguage, _ values: [String: String]) -> Template {
        let template = templates["\(kind.rawValue).\(language.rawValue)"] ?? templates["\(kind.rawValue).en"]!
        func fill(_ text: String) -> String {
            var out = text
            for (key, value) in values { out = out.replacingOccurrences(of: "{\(key)}", with: value) }
            return out
        }
        return Template(subject: fill(template.subject), body: fill(template.body))
    }

    /// A time of day on the site's clock: `10:35`.
    public static func clock(_ date: Date, in zone: Zone) -> String {
        let time = zone.time(of: date)
        return String(format: "%02d:%02d", time.hour, time.minute)
    }
}
