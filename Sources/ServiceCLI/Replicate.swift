import ArgumentParser
import BlobStore
import CentralStore
import Foundation
import Logging
import ObjectStore
import ReplicaGenerator
import TeamworkModel

#if canImport(Glibc)
    import Glibc
#endif

struct Replicate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build the team, personal and common replicas and keep them in step with the master.",
        discussion: """
            With no flag, runs until SIGINT or SIGTERM: it wakes on every committed master change and sweeps \
            every --sweep seconds in case a notification was lost. --once catches up and exits (for cron or a \
            systemd timer); --full rebuilds every replica from one snapshot of the master. Instances that share a \
            replica folder elect one generator among them; the others stand by, and --once or --full exits 75 \
            when another instance is generating into the folder. Every pass also rebuilds a replica file that \
            cannot be read (it is kept in damaged/).
            """
    )
    @OptionGroup var options: ServiceOptions
    @OptionGroup var logging: LoggingOptions
    @Flag(help: "Rebuild every replica from scratch, then exit.") var full = false
    @Flag(help: "Apply what changed since the last run, then exit.") var once = false
    @Option(help: "Continuous mode: seconds between sweeps.") var sweep: Double = 5

    func validate() throws {
        if full && once { throw ValidationError("use --full or --once, not both") }
        if !(sweep > 0) { throw ValidationError("--sweep must be positive") }
    }

    func run() async throws {
        logging.bootstrap()
        let generator = try await options.generator(sweepInterval: .milliseconds(Int(sweep * 1000)))
        let directory = generator.configuration.directory.path
        if full || once {
            let finished: Void? = try await generator.ifNoOtherGenerator {
                try await (full ? rebuild(generator) : catchUp(generator))
            }
            if finished == nil {
                TeamworkService.say("another instance is generating into \(directory); left to it")
                throw ExitCode(75)
            }
        } else {
            TeamworkService.say("replicating into \(directory); stop with Ctrl-C or SIGTERM")
            let keeper = LocalClusterKeeper.forLocalDefault(options, logger: Logger(label: "teamwork.service"))
            try await TeamworkService.untilSignalled(
                [keeper].compactMap { $0 } + [
                    GeneratorService(
                        generator: generator,
                        roleChanged: { role in
                            TeamworkService.say(
                                role == .active ? "generating" : "another instance generates into \(directory); standing by")
                        },
                        afterPass: { report in
                            if report.entries > 0 {
                                TeamworkService.say(
                                    "applied \(quantity(report.entries, "change")) to \(quantity(report.replicaWrites, "replica")); feed position \(report.feedPosition)"
                                )
                            }
                        })
                ])
            TeamworkService.say("stopped")
        }
    }

    private func rebuild(_ generator: ReplicaGenerator) async throws {
        let interactive = isatty(STDERR_FILENO) == 1
        let result = try await generator.rebuildAll { progress in
            let line = String(format: "%d tasks, %d replicas, %.0f tasks/s", progress.tasks, progress.replicas, progress.tasksPerSecond)
            FileHandle.standardError.write(Data((interactive ? "\r\u{1B}[K" + line : line + "\n").utf8))
        }
        if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
        print(
            String(
                format: "Rebuilt %d replicas with %d tasks in %.2f s (%.0f tasks/s) in %@",
                result.replicas, result.tasks, seconds(result.elapsed), result.tasksPerSecond,
                generator.configuration.directory.path))
    }

    private func catchUp(_ generator: ReplicaGenerator) async throws {
        let directory = generator.configuration.directory.path
        let report = try await generator.catchUp()
        if report.rebuilt {
            print("No earlier run: rebuilt every replica in \(directory) (feed position \(report.feedPosition))")
        } else {
            print(
                "Applied \(quantity(report.entries, "change")) to \(quantity(report.replicaWrites, "replica")); feed position \(report.feedPosition)"
            )
        }
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare every replica with the master, and check every file an attachment names; exits 2 when any differs."
    )
    @OptionGroup var options: ServiceOptions
    @Flag(help: "Print the drift as JSON lines.") var json = false
    @Option(
        help: ArgumentHelp(
            "Where the sync endpoint keeps files: a folder, or s3://BUCKET?endpoint=URL&region=R (default: blobs in the replicas folder).",
            valueName: "dir|s3-url"))
    var blobs: String?

    func run() async throws {
        let generator = try await options.generator()
        let drift = try await generator.verify()
        var blobProblems: [String] = []
        // Every file an attachment names is in the blob store, whole: its bytes hash to its name.
        let store = try BlobLocation.parse(blobs, default: FileBlobStore.defaultRoot(replicas: generator.configuration.directory)).open()
        let referenced = try await CentralStore.withStore(generator.configuration.databaseURL) { try await $0.referencedBlobs() }
        for hex in referenced.sorted() {
            guard let digest = BlobDigest(hex: hex) else { continue }
            guard case .complete = try await blockingWork({ try store.state(of: digest) }) else {
                blobProblems.append("blob \(hex), named by an attachment, is not in \(store.location)")
                continue
            }
            let actual = try await blockingWork { try store.digestOfStored(digest) }
            if actual != digest {
                blobProblems.append("blob \(hex) is damaged: its bytes hash to \(actual.hex)")
            }
        }
        for item in drift {
            if json {
                let fields = ["replica": item.replica.fileName, "message": item.message]
                let data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print(item.description)
            }
        }
        for problem in blobProblems {
            if json {
                let data = try JSONSerialization.data(
                    withJSONObject: ["blobs": store.location, "message": problem], options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print(problem)
            }
        }
        if drift.isEmpty && blobProblems.isEmpty {
            if !json { print("No drift: every replica matches the master, and every attachment's file is whole.") }
        } else {
            TeamworkService.say(
                "\(quantity(drift.count, "difference")) between the replicas and the master, \(quantity(blobProblems.count, "missing or damaged file"))"
            )
            throw ExitCode(2)
        }
    }
}
