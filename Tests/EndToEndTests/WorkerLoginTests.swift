import Foundation
import TeamworkModel
import TeamworkTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A worker's token is a secret: it crosses no network in clear text, shows in
/// no process list, and follows no redirect.
@Suite("teamwork-worker login keeps the token secret")
struct WorkerLoginTests {

    @Test func aPlainHttpServerOnAnotherMachineIsRefusedUnlessInsecure() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            // A name that only looks like loopback resolves wherever its owner says (seen answered before).
            for server in [
                "http://teamwork.example:8080", "http://127.attacker.example:8080", "http://127.0.0.1.nip.io:8080",
                "http://localhost.attacker.example:8080", "http://0x7f.1:8080",
            ] {
                let refused = try await WorkerTool.run(setup.annHome, ["login", "--server", server, "--token", setup.annToken])
                #expect(refused.status == 64 && refused.stderr.contains("clear text"), "\(server): \(refused.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: setup.annHome.appending(path: "config.json").path))
            // Loopback is this machine: nothing crosses a network.
            #expect(
                try await WorkerTool.run(setup.annHome, ["login", "--server", setup.server.url, "--token", setup.annToken]).status == 0)
        }
    }

    /// Seen failing before: local.sqlite was created 0644 and a folder made by someone else stayed 0755.
    @Test func theDeviceFolderAndItsDatabaseAreTheOwnersOnlyWhoeverMadeThem() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let home = setup.annHome.path
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            #expect(
                try await WorkerTool.run(setup.annHome, ["login", "--server", setup.server.url, "--token", setup.annToken]).status == 0)
            func mode(_ path: String) throws -> Int {
                try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
            }
            #expect(try mode(home) == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: home)
            #expect(files.contains("local.sqlite"))
            for file in files { #expect(try mode(home + "/" + file) == 0o600, "\(file)") }
            // A device file an older tool left readable to others is made private at the next use.
            #expect(chmod(home + "/local.sqlite", 0o644) == 0)
            #expect(try await WorkerTool.run(setup.annHome, ["tasks"]).status == 0)
            #expect(try mode(home + "/local.sqlite") == 0o600)
        }
    }

    /// On a terminal, login asks for the token and does not show it as it is typed (seen before: a silent wait, the token echoed).
    @Test func onATerminalLoginAsksForTheTokenAndDoesNotShowIt() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            // A real pseudo-terminal (Python's pty module): the prompt comes first, then the token is typed.
            let script = """
                import os, pty, select, signal, sys, time
                pid, fd = pty.fork()
                if pid == 0:
                    os.execvpe(sys.argv[1], sys.argv[1:], os.environ)
                seen = b""
                deadline = time.time() + 20
                def read_some():
                    global seen
                    if not select.select([fd], [], [], 0.2)[0]:
                        return True
                    try:
                        chunk = os.read(fd, 1024)
                    except OSError:
                        return False
                    seen += chunk
                    return bool(chunk)
                while b"Token" not in seen and time.time() < deadline and read_some():
                    pass
                os.write(fd, (os.environ["TYPED"] + "\\n").encode())
                while time.time() < deadline and read_some():
                    pass
                if time.time() >= deadline:
                    os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                sys.stdout.write(seen.decode("utf-8", "replace"))
                sys.exit(os.waitstatus_to_exitcode(status))
                """
            let run = try await Tool.Run.python(
                script, arguments: [Tool.worker.path, "login", "--server", setup.server.url],
                environment: [
                    "TYPED": setup.annToken, "TEAMWORK_WORKER_HOME": setup.annHome.path,
                    "TEAMWORK_TOKEN": nil,
                ])
            #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
            #expect(run.stdout.contains("Token (from your manager"), "a prompt: \(run.stdout)")
            #expect(!run.stdout.contains(setup.annToken), "the token is not echoed: \(run.stdout)")
            #expect(run.stdout.contains("Signed in"))
        }
    }

    @Test func beforeSigningInEveryCommandSaysToLogInAndLeavesNothingBehind() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let home = setup.folder.appending(path: "new-device")
            for command in [["tasks"], ["sync"], ["status"], ["start", "1"], ["teams"]] {
                let run = try await WorkerTool.run(home, command)
                #expect(run.status == 64 && run.stderr.contains("teamwork-worker login --server URL"), "\(command): \(run.stderr)")
                #expect(!run.stderr.contains("--token"), "no hint puts the token on the command line")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: home.path).isEmpty, "no local.sqlite before a sign-in")
        }
    }

    @Test func aFailedLoginSaysItDidNotSignInAndLeavesNoDatabase() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let home = setup.folder.appending(path: "refused-device")
            let refused = try await WorkerTool.run(
                home, ["login", "--server", setup.server.url], input: "tw_" + String(repeating: "A", count: 43) + "\n")
            #expect(refused.status == 68 && refused.stderr.contains("not signed in"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("changes stay queued"), "\(refused.stderr)")
            let gone = try await WorkerTool.run(
                home, ["login", "--server", "http://127.0.0.1:\(ServiceProcess.freePort())", "--connect-timeout", "1"],
                input: setup.annToken + "\n")
            #expect(
                gone.status == 69 && gone.stderr.contains("not signed in") && !gone.stderr.contains("changes stay queued"), "\(gone.stderr)"
            )
            #expect(!FileManager.default.fileExists(atPath: home.appending(path: "local.sqlite").path))
        }
    }

    @Test func theTokenComesFromTheEnvironmentOrStandardInputNotTheCommandLine() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let fromEnvironment = try await WorkerTool.run(
                setup.annHome, ["login", "--server", setup.server.url],
                environment: ["TEAMWORK_TOKEN": setup.annToken])
            #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
            let fromInput = try await WorkerTool.run(setup.cyHome, ["login", "--server", setup.server.url], input: setup.cyToken + "\n")
            #expect(fromInput.status == 0, "\(fromInput.stderr)")
            #expect(try await WorkerTool.run(setup.cyHome, ["tasks"]).stdout.contains("blue job"))
            let none = try await WorkerTool.run(setup.folder.appending(path: "nobody"), ["login", "--server", setup.server.url])
            #expect(none.status == 64 && none.stderr.contains("standard input"))
        }
    }

    @Test func aRedirectIsNotFollowedSoTheTokenGoesNowhereElse() async throws {
        try await WorkerEndToEndTests().withSetup { setup in
            let (elsewhere, elsewhereSocket) = ServiceProcess.silentPort()
            defer { close(elsewhereSocket) }
            let redirector = Redirector(to: "http://127.0.0.1:\(elsewhere)/")
            defer { redirector.stop() }
            let login = try await WorkerTool.run(
                setup.annHome, ["login", "--server", "http://127.0.0.1:\(redirector.port)", "--token", setup.annToken])
            #expect(login.status != 0 && login.stderr.contains("not followed"), "\(login.stderr)")
            #expect(redirector.requests > 0, "the redirecting server was asked")
            // Nothing connected to where the redirect pointed.
            let flags = fcntl(elsewhereSocket, F_GETFL)
            _ = fcntl(elsewhereSocket, F_SETFL, flags | O_NONBLOCK)
            let visitor = accept(elsewhereSocket, nil, nil)
            if visitor >= 0 { close(visitor) }
            #expect(visitor < 0, "the token was not carried to the redirect's target")
        }
    }
}

/// A tiny HTTP server on loopback that answers every request with a 302 to `target`.
final class Redirector: @unchecked Sendable {
    let port: Int
    private let descriptor: Int32
    private let count = Locked(0)
    private let stopped = Locked(false)

    var requests: Int { count.value }

    init(to target: String) {
        (port, descriptor) = ServiceProcess.silentPort()
        let (descriptor, count, stopped) = (descriptor, count, stopped)
        Thread {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            while !stopped.value {
                guard poll(&poller, 1, 100) > 0 else { continue }
                let client = accept(descriptor, nil, nil)
                guard client >= 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 8192)
                _ = read(client, &buffer, buffer.count)
                count.mutate { $0 += 1 }
                let answer = Array("HTTP/1.1 302 Found\r\nLocation: \(target)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = write(client, answer, answer.count)
                close(client)
            }
        }.start()
    }

    func stop() {
        stopped.mutate { $0 = true }
        usleep(200_000)
        close(descriptor)
    }
}
