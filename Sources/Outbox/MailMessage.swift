import Foundation

/// An email as Teamwork sends it (RFC 5322 and MIME): a UTF-8 text part and, for an appointment,
/// an iCalendar part (`text/calendar; method=REQUEST` or `CANCEL`, RFC 6047) attached as `invite.ics`.
/// Header values are encoded (RFC 2047) and stripped of line breaks, so no text of a customer's or
/// a task's can add a header.
public struct MailMessage: Sendable {
    public var from: String
    public var fromName: String
    public var to: String
    public var toName: String
    public var subject: String
    public var text: String
    /// The calendar's method and text.
    public var calendar: (method: String, text: String)?
    /// Stable for the message, so a mail system drops a repeat: `<message-ID@host>`.
    public var messageID: String
    public var date: Date

    public init(
        from: String, fromName: String, to: String, toName: String, subject: String, text: String,
        calendar: (method: String, text: String)? = nil, messageID: String, date: Date = Date()
    ) {
        self.from = from
        self.fromName = fromName
        self.to = to
        self.toName = toName
        self.subject = subject
        self.text = text
        self.calendar = calendar
        self.messageID = messageID
        self.date = date
    }

    /// The message as it goes over SMTP: CRLF line ends, lines at most 76 characters.
    public func rendered() -> String {
        let boundary = "teamwork-" + String(messageID.unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) })
        var lines = [
            "From: " + Self.mailbox(fromName, from), "To: " + Self.mailbox(toName, to), "Subject: " + Self.encodedWord(subject),
            "Date: " + Self.rfc5322(date), "Message-ID: " + messageID, "MIME-Version: 1.0", "Auto-Submitted: auto-generated",
        ]
        let body = Self.base64Lines(Data(text.utf8))
        if let calendar {
            lines += [
                "Content-Type: multipart/mixed; boundary=\"\(boundary)\"", "", "--" + boundary,
                "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", "",
            ]
            lines += body
            lines += [
                "--" + boundary, "Content-Type: text/calendar; charset=utf-8; method=\(calendar.method); name=\"invite.ics\"",
                "Content-Disposition: attachment; filename=\"invite.ics\"", "Content-Transfer-Encoding: base64", "",
            ]
            lines += Self.base64Lines(Data(calendar.text.utf8))
            lines.append("--" + boundary + "--")
        } else {
            lines += ["Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", ""]
            lines += body
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static func base64Lines(_ data: Data) -> [String] {
        let text = data.base64EncodedString()
        return stride(from: 0, to: text.count, by: 76).map { start in
            let from = text.index(text.startIndex, offsetBy: start)
            return String(text[from..<(text.index(from, offsetBy: 76, limitedBy: text.endIndex) ?? text.endIndex)])
        }
    }

    /// `=?utf-8?B?...?=` for text that is not plain printable ASCII; line breaks become spaces.
    static func encodedWord(_ text: String) -> String {
        let flat = text.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        if flat.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7f }) && flat.count <= 70 { return flat }
        // Each encoded word holds whole characters, at most 45 bytes (60 in base64).
        var words: [String] = []
        var current = Data()
        for character in flat {
            let bytes = Data(String(character).utf8)
            if current.count + bytes.count > 45 {
                words.append(current.base64EncodedString())
                current = Data()
            }
            current.append(bytes)
        }
        if !current.isEmpty { words.append(current.base64EncodedString()) }
        return words.map { "=?utf-8?B?\($0)?=" }.joined(separator: "\r\n ")
    }

    /// `"Name" <address>`, the name encoded when it must be.
    static func mailbox(_ name: String, _ address: String) -> String {
        let flat = name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f && $0 != "\"" && $0 != "\\" }
        let plain = String(String.UnicodeScalarView(flat))
        if plain.isEmpty { return "<\(address)>" }
        if plain.unicodeScalars.allSatisfy({ $0.value < 0x7f }) { return "\"\(plain)\" <\(address)>" }
        return encodedWord(plain) + " <\(address)>"
    }

    static func rfc5322(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
