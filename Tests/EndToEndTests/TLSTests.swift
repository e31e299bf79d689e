import Foundation
import LocalPostgres
import TeamworkModel
import TeamworkTestSupport
import Testing

/// The sync endpoint over HTTPS (`--tls-cert`, `--tls-key`), with the real worker as its client.
@Suite("Sync over TLS")
struct TLSTests {
    /// A self-signed certificate for localhost and 127.0.0.1, made by openssl: (certificate, key).
    static func selfSigned(in folder: URL) async throws -> (String, String) {
        let (certificate, key) = (folder.path + "/cert.pem", folder.path + "/key.pem")
        let log = folder.path + "/openssl.log"
        let status = try await ChildProcess.finish(
            [
                "/usr/bin/env", "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", key, "-out", certificate,
            ], standardOutput: log, standardError: log)
        #expect(status == 0, "openssl: \(String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self))")
        return (certificate, key)
    }

    @Test func theEndpointServesHTTPSAndTheWorkerRefusesACertificateItDoesNotTrust() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let (certificate, key) = try await Self.selfSigned(in: setup.folder.deletingLastPathComponent())
            let port = ServiceProcess.freePort()
            let server = ServiceProcess(
                [
                    "serve", "--database-url", setup.url.connectionString, "--replicas", setup.folder.path,
                    "--port", String(port), "--tls-cert", certificate, "--tls-key", key,
                ],
                port: port, log: setup.folder.path + ".tls.log")
            try await server.start()
            defer { server.stopInBackground() }
            // A client that trusts the certificate: curl with it as its CA.
            let out = setup.folder.path + ".curl"
            let curl = try await ChildProcess.finish(
                [
                    "/usr/bin/env", "curl", "-sS", "--cacert", certificate, "-o", out, "-w", "%{http_code}",
                    "-H", "Authorization: Bearer \(setup.annToken)", "https://localhost:\(port)/v1/replicas",
                ],
                standardOutput: out + ".code", standardError: out + ".err")
            let code = String(decoding: FileManager.default.contents(atPath: out + ".code") ?? Data(), as: UTF8.self)
            let body = String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self)
            #expect(curl == 0 && code == "200" && body.contains("Red Team"), "\(code) \(body)")

            // TLS 1.2 and newer only (seen failing before: TLS 1.0 and 1.1 were answered). SECLEVEL=0 lets
            // the client offer the old versions at all, so only the server can be refusing them.
            for (version, answered) in [("-tls1", false), ("-tls1_1", false), ("-tls1_2", true), ("-tls1_3", true)] {
                let log = setup.folder.path + ".s_client\(version)"
                let status = try await ChildProcess.finish(
                    [
                        "/usr/bin/env", "openssl", "s_client", "-connect", "127.0.0.1:\(port)", version,
                        "-cipher", "DEFAULT@SECLEVEL=0", "-brief",
                    ],
                    standardOutput: log, standardError: log)
                #expect(
                    (status == 0) == answered,
                    "\(version): \(String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self))")
            }

            // The worker trusts the system's certificate authorities only: a self-signed certificate is refused.
            let untrusted = try await WorkerTool.run(
                setup.cyHome, ["login", "--server", "https://localhost:\(port)"],
                environment: ["TEAMWORK_TOKEN": setup.cyToken])
            #expect(untrusted.status == 69 && untrusted.stderr.contains("certificate"), "\(untrusted.stderr)")
            #expect(!FileManager.default.fileExists(atPath: setup.cyHome.appending(path: "config.json").path))
            let plain = try await WorkerTool.run(
                setup.cyHome, ["login", "--server", "http://127.0.0.1:\(port)", "--timeout", "3"],
                environment: ["TEAMWORK_TOKEN": setup.cyToken])
            #expect(plain.status != 0, "plain HTTP to a TLS port gets no answer")
        }
    }

    @Test func anUnreadableCertificateEndsServeWithOneLine() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let port = ServiceProcess.freePort()
            let server = ServiceProcess(
                [
                    "serve", "--database-url", setup.url.connectionString, "--replicas", setup.folder.path,
                    "--port", String(port), "--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem",
                ],
                port: port, log: setup.folder.path + ".badtls.log")
            try await server.start(waitForPort: false)
            let status = try await server.exitStatus(within: .seconds(10))
            #expect(status == 78 && server.logText.contains("/nonexistent/cert.pem"), "\(server.logText)")
        }
    }
}
