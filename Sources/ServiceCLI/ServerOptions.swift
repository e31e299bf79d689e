import ArgumentParser
import Foundation
import SyncServer

/// Where the sync endpoint listens, and over what: `run` and `serve` share them.
struct ServerOptions: ParsableArguments {
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Option(help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (with --tls-key).", valueName: "file"))
    var tlsCert: String?
    @Option(help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"))
    var tlsKey: String?
    @Option(help: ArgumentHelp("Where workers' photos, signatures and PDFs are kept (default: blobs in the replicas folder).", valueName: "dir"))
    var blobs: String?
    @Option(help: "The largest file a worker may upload, in MB.") var maxFileMb = 25

    func validate() throws {
        if !(1...65_535).contains(port) { throw ValidationError("--port must be between 1 and 65535") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("give --tls-cert and --tls-key together") }
        if !(1...1_024).contains(maxFileMb) { throw ValidationError("--max-file-mb must be between 1 and 1024") }
    }

    var tls: SyncServer.TLSFiles? {
        guard let tlsCert, let tlsKey else { return nil }
        return .init(certificateChain: tlsCert, privateKey: tlsKey)
    }

    /// `configuration` with this address and TLS.
    func apply(to configuration: inout SyncServer.Configuration) {
        configuration.host = host
        configuration.port = port
        configuration.tls = tls
        configuration.blobsDirectory = blobs.map { URL(fileURLWithPath: $0) }
        configuration.maximumBlobBytes = Int64(maxFileMb) * 1024 * 1024
    }
}
