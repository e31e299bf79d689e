import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOCore
import NIOSSL
import TeamworkModel

extension SyncServer {
    /// The PEM files of the server's certificate chain and private key.
    public struct TLSFiles: Sendable, Equatable {
        public var certificateChain: String
        public var privateKey: String

        public init(certificateChain: String, privateKey: String) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
        }

        /// Reads both files; one that cannot be read is a configuration error naming it.
        func configuration() throws -> TLSConfiguration {
            let chain: [NIOSSLCertificate]
            do {
                chain = try NIOSSLCertificate.fromPEMFile(certificateChain)
            } catch {
                throw TeamworkError(.configuration, "cannot read the TLS certificate \(certificateChain): \(error)")
            }
            guard !chain.isEmpty else { throw TeamworkError(.configuration, "no certificate in \(certificateChain)") }
            let key: NIOSSLPrivateKey
            do {
                key = try NIOSSLPrivateKey(file: privateKey, format: .pem)
            } catch {
                throw TeamworkError(.configuration, "cannot read the TLS private key \(privateKey): \(error)")
            }
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            // TLS 1.0 and 1.1 are deprecated (RFC 8996): a client that offers nothing newer is refused.
            tls.minimumTLSVersion = .tlsv12
            return tls
        }
    }

    /// HTTP/1.1, over TLS when `tls` is given; idle connections closed after `idleTimeout`.
    /// `connections`: told of each connection as it opens and closes, and of the server's shutdown.
    static func serverBuilder(_ configuration: Configuration, connections: Connections) throws -> HTTPServerBuilder {
        let idle = TimeAmount.nanoseconds(
            Int64(configuration.idleTimeout.components.seconds) * 1_000_000_000
                + configuration.idleTimeout.components.attoseconds / 1_000_000_000)
        let http = HTTPServerBuilder.http1(
            configuration: .init(additionalChannelHandlers: [Connections.Notice(connections)], idleTimeout: idle))
        guard let tls = configuration.tls else { return http }
        return try .tls(http, tlsConfiguration: try tls.configuration())
    }
}
