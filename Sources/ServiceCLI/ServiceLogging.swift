import ArgumentParser
import Foundation
import Logging

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
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            fields[key] = "\(value)"
        }
        if let error = event.error { fields["error"] = "\(error)" }
        fields["time"] = Date().formatted(.iso8601)
        fields["level"] = event.level.rawValue
        fields["logger"] = label
        fields["message"] = event.message.description
        guard var data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
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
        lines.metadata = metadata
        lines.log(event: event)
    }
}
