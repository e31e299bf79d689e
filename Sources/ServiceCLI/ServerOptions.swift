import ArgumentParser
import CentralStore
import Foundation
import ObjectStore
import RoadTravel
import SyncServer
import WebPages

/// Where the sync endpoint listens, and over what: `run` and `serve` share them.
struct ServerOptions: ParsableArguments {
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Option(help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (with --tls-key).", valueName: "file"))
    var tlsCert: String?
    @Option(help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?
    @Option(
        help: ArgumentHelp(
            "Where workers' photos, signatures and PDFs are kept: a folder, or an S3-compatible bucket shared by every host, s3://BUCKET?endpoint=URL&region=R, with keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (default: blobs in the replicas folder).",
            valueName: "dir|s3-url")
    )
    var blobs: String?
    @Option(help: "The largest file a worker may upload, in MB.") var maxFileMb = 25
    @Option(
        help: ArgumentHelp(
            "Connections the kernel may queue before the server accepts them (or TEAMWORK_BACKLOG; capped by net.core.somaxconn; docs/operations.md).",
            valueName: "n"))
    var backlog: Int?
    @Option(
        help: ArgumentHelp(
            "How long a push waits for its replica's lock before the device is told to retry (503), in seconds.", valueName: "s"))
    var pushLockTimeout = 5
    @Flag(help: "Serve no dispatcher's board at /board.") var noBoard = false
    @Option(
        help: ArgumentHelp(
            "The PostgreSQL role the board reads and acts through, one in teamwork_manager (or TEAMWORK_BOARD_DATABASE_URL; default: the service's own URL).",
            valueName: "url"))
    var boardDatabaseUrl: String?
    @Option(
        help: ArgumentHelp(
            "The board map's tile URL template, {z}/{x}/{y} (or TEAMWORK_MAP_TILES; default: OpenStreetMap's standard tiles).",
            valueName: "url"))
    var mapTiles: String?
    @Option(help: ArgumentHelp("The credit the tile provider asks for (or TEAMWORK_MAP_ATTRIBUTION).", valueName: "text"))
    var mapAttribution: String?
    @Option(
        help: ArgumentHelp(
            "The board's address as browsers see it, behind a TLS-terminating proxy (or TEAMWORK_BOARD_ORIGIN): https://dispatch.example.com.",
            valueName: "url"))
    var boardOrigin: String?
    @Option(
        name: .customLong("trusted-proxy"),
        help: ArgumentHelp(
            "A proxy in front of the service whose X-Forwarded-For is believed, by its IP address (repeatable): budgets per address count the client it names.",
            valueName: "address"))
    var trustedProxies: [String] = []
    @Option(
        help: ArgumentHelp(
            "Where leaflet.js and leaflet.css are (default: Debian's libjs-leaflet, /usr/share/javascript/leaflet).", valueName: "dir"))
    var leafletDir: String?
    @Option(
        help: ArgumentHelp(
            "An OSRM server whose table service gives the day planner's drives (or TEAMWORK_OSRM_URL; default: estimated from coordinates).",
            valueName: "url"))
    var osrm: String?

    /// The road network the board's planner asks, if one is set.
    private func road() throws -> OSRMTable? {
        try setting(osrm, "TEAMWORK_OSRM_URL").map { text in
            guard let url = URL(string: text) else { throw ValidationError("--osrm must be an http(s) URL") }
            do { return try OSRMTable(base: url) } catch { throw ValidationError("\(error)") }
        }
    }

    func validate() throws {
        _ = try road()
        if !(1...65_535).contains(port) { throw ValidationError("--port must be between 1 and 65535") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("give --tls-cert and --tls-key together") }
        // A file larger than a person's allowance of files not yet attached (256 MB) could never be taken.
        if !(1...256).contains(maxFileMb) { throw ValidationError("--max-file-mb must be between 1 and 256") }
        if let tiles = tilesTemplate, BoardConfiguration.tileOrigin(tiles) == nil {
            throw ValidationError(
                "--map-tiles must be an http(s) URL template with {z}, {x} and {y}, like \(BoardConfiguration.openStreetMapTiles)")
        }
        if let url = boardURLText { _ = try DatabaseURL(parsing: url) }
        if let origin = originText {
            let parts = origin.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 3, ["http:", "https:"].contains(parts[0].lowercased()), parts[1].isEmpty, !parts[2].isEmpty,
                parts[2].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:[]".contains($0)) })
            else {
                throw ValidationError("--board-origin must be a scheme and a host, like https://dispatch.example.com (no path)")
            }
        }
        for proxy in trustedProxies where SyncServer.proxyKey(proxy) == nil {
            throw ValidationError("--trusted-proxy takes an IP address, like 10.0.0.2 or fd00::2 (not '\(proxy)')")
        }
        if !(1...300).contains(pushLockTimeout) { throw ValidationError("--push-lock-timeout must be 1 to 300 seconds") }
        if let value = backlogValue, !(1...1_048_576).contains(value) { throw ValidationError("--backlog must be 1 to 1048576") }
        if backlog == nil, let text = environment["TEAMWORK_BACKLOG"], !text.isEmpty, Int(text) == nil {
            throw ValidationError("TEAMWORK_BACKLOG must be a number, not '\(text)'")
        }
    }

    private var originText: String? { setting(boardOrigin, "TEAMWORK_BOARD_ORIGIN") }
    private var backlogValue: Int? { backlog ?? environment["TEAMWORK_BACKLOG"].flatMap { Int($0) } }

    private var environment: [String: String] { ProcessInfo.processInfo.environment }
    private var tilesTemplate: String? { setting(mapTiles, "TEAMWORK_MAP_TILES") }
    private var boardURLText: String? { setting(boardDatabaseUrl, "TEAMWORK_BOARD_DATABASE_URL") }

    private func setting(_ option: String?, _ variable: String) -> String? { optionOrEnvironment(option, variable) }

    var tls: SyncServer.TLSFiles? {
        guard let tlsCert, let tlsKey else { return nil }
        return .init(certificateChain: tlsCert, privateKey: tlsKey)
    }

    /// `configuration` with this address and TLS.
    func apply(to configuration: inout SyncServer.Configuration) throws {
        configuration.host = host
        configuration.port = port
        configuration.tls = tls
        if let blobs {
            switch try BlobLocation.parse(blobs, default: configuration.blobsFolder) {
            case .folder(let folder): configuration.blobsDirectory = folder
            case .bucket(let bucket): configuration.blobBucket = bucket
            }
        }
        configuration.maximumBlobBytes = Int64(maxFileMb) * 1024 * 1024
        if let backlogValue { configuration.backlog = backlogValue }
        configuration.pushLockTimeout = .seconds(pushLockTimeout)
        configuration.trustedProxies = Set(trustedProxies.compactMap(SyncServer.proxyKey))
        if !noBoard {
            var board = BoardConfiguration(databaseURL: boardURLText.flatMap { try? DatabaseURL(parsing: $0) } ?? configuration.databaseURL)
            if let tiles = tilesTemplate { board.tileURL = tiles }
            if let credit = setting(mapAttribution, "TEAMWORK_MAP_ATTRIBUTION") { board.tileAttribution = credit }
            if let leafletDir { board.leafletDirectory = URL(fileURLWithPath: leafletDir) }
            board.publicOrigin = originText
            board.osrm = try? road()
            configuration.board = board
        }
    }
}
