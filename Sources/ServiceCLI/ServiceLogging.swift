import ArgumentParser
import Foundation
import Logging
import TeamworkModel

/// How the long-running service commands log: swift-log to standard error,
/// as text lines or as one JSON object per line (for journald, Loki and the like).
struct LoggingOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(help: ArgumentHelp("Log format: text or json.", valueName: "format"))
    var logFormat: Format = .text

    @Option(help: ArgumentHelp("Lowest level logged: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: String = "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// Installs the handler for the whole process; call once, first thing.
    func bootstrap() {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let format = logFormat
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = format == .json ? JSONLogHandler(label: label) : TextLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

/// One JSON object per line on standard error: time, level, logger, message and the metadata.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let event = TextLogHandler.safe(event)
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            fields[key] = "\(value)"
        }
        if let error = event.error { fields["error"] = "\(error)" }
        fields["time"] = Date().formatted(.iso8601)
        fields["level"] = event.level.rawValue
        fields["logger"] = label
        fields["message"] = event.message.description
        guard var data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        data = TerminalText.escapedJSON(data)
        data.append(UInt8(ascii: "\n"))
        FileHandle.standardError.write(data)
    }
}

/// swift-log's text lines on standard error (StreamLogHandler's format), with
/// the metadata formatted only when a line is written. StreamLogHandler formats
/// its metadata again each time a key is set, and the server sets two on every
/// request (Hummingbird's request id, the caller's person id) whether or not
/// anything is logged: a couple of percent of the CPU a no-op pull costs.
struct TextLogHandler: LogHandler {
    private var lines: StreamLogHandler
    var metadata: Logger.Metadata = [:]

    init(label: String) {
        lines = StreamLogHandler.standardError(label: label)
    }

    var logLevel: Logger.Level {
        get { lines.logLevel }
        set { lines.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { lines.metadataProvider }
        set { lines.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var lines = self.lines
        lines.metadata = metadata.mapValues(Self.safe)
        lines.log(event: Self.safe(event))
    }

    /// The event with its message, metadata and error each on one line with no
    /// control characters (see `TerminalText`): a name or a change id from the
    /// field can neither drive the terminal of whoever reads the log nor forge a line.
    static func safe(_ event: LogEvent) -> LogEvent {
        var event = event
        event.message = "\(TerminalText.oneLine(event.message.description, limit: 10_000))"
        event.metadata = event.metadata?.mapValues(safe)
        if let error = event.error {
            event.metadata = (event.metadata ?? [:]).merging(["error": safe(.string("\(error)"))]) { $1 }
            event.error = nil
        }
        return event
    }

    static func safe(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): .string(TerminalText.oneLine(text, limit: 10_000))
        case .stringConvertible(let value): .string(TerminalText.oneLine(value.description, limit: 10_000))
        case .dictionary(let values): .dictionary(values.mapValues(safe))
        case .array(let values): .array(values.map(safe))
        }
    }
}
