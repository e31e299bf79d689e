// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "teamwork",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "teamwork-manager", targets: ["teamwork-manager"]),
        .executable(name: "teamwork-service", targets: ["teamwork-service"]),
        .executable(name: "teamwork-worker", targets: ["teamwork-worker"]),
        .library(name: "TeamworkModel", targets: ["TeamworkModel"]),
        .library(name: "CentralStore", targets: ["CentralStore"]),
        .library(name: "TeamworkTestSupport", targets: ["TeamworkTestSupport"]),
    ],
    // Direct dependencies pinned exactly: Package.resolved stays out of git (a build machine's package mirror may
    // have commit ids of its own), so these lines are the whole record of what is built.
    dependencies: [
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", exact: "2.37.6"),
        // Already built for postgres-nio (SCRAM): SHA-256 of uploaded files at no extra build cost.
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
    ],
    targets: [
        // Domain model (value types, validation, errors, local time read from the system's tz database, a task's
        // declaration) and the
        // small primitives every layer shares (retrying, deadlines, a lock, work off the cooperative threads).
        // No network and no database.
        .target(name: "TeamworkModel"),

        // Formats others read: CSV tables (RFC 4180), iCalendar (RFC 5545) and QR codes. No network, no database.
        .target(name: "TeamworkFormats", dependencies: ["TeamworkModel"]),

        // One HTTP request over Foundation's URLSession as Teamwork's clients make it (no cookies,
        // no cache, no redirects; cancellation safe on Linux).
        .target(name: "HTTPFetch", dependencies: ["TeamworkModel"]),

        // Everything the service sends out (webhooks, texts, the road network): one address resolved once and
        // vetted, an answer read to a bound, one deadline, a budget of open connections.
        .target(
            name: "Egress",
            dependencies: [
                "TeamworkModel",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),

        // Drive times from a road network (an OSRM table service), else the day planner's estimate.
        .target(
            name: "RoadTravel",
            dependencies: ["DayPlanner", "Egress", "TeamworkModel", .product(name: "Logging", package: "swift-log")]),

        // The system's zlib (gzip for the files the service serves as built).
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),

        // Web Push's two formats: a message encrypted for one subscription (RFC 8291) and the VAPID
        // token that names the sender (RFC 8292). No network; the push sender and the endpoint share it.
        .target(name: "WebPush", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),

        // The outbox's deliveries: Standard Webhooks signatures, the destination rule, the delivering service.
        .target(
            name: "Outbox",
            dependencies: [
                "TeamworkFormats",
                "CentralStore", "TeamworkModel", "Egress", "DayPlanner", "WebPush",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // The day planner's route solver: vehicle routing with time windows, skills, hours and
        // pinned work, and Solomon's benchmark format. Pure Swift, no I/O.
        .target(name: "DayPlanner", dependencies: ["TeamworkModel"]),

        // A private PostgreSQL cluster for the zero-setup local default and for tests.
        .target(name: "LocalPostgres"),

        // The central store: migrations and queries over PostgreSQL.
        .target(
            name: "CentralStore",
            dependencies: [
                "TeamworkFormats",
                "TeamworkModel",
                "LocalPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            plugins: ["EmbedSQL"]
        ),

        // The sync protocol's wire types and the rules for a worker change: what the
        // device, the sync endpoint and the replicas share. No I/O.
        .target(name: "SyncProtocol", dependencies: ["TeamworkModel"]),

        // SQLite's process-wide settings (sqlite3_config is variadic: C only).
        .target(name: "SQLiteConfig", linkerSettings: [.linkedLibrary("sqlite3")]),

        // The SQLite replicas: team, personal and common databases.
        .target(
            name: "TeamDatabase",
            dependencies: [
                "TeamworkModel", "SQLiteConfig", "SyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),

        // Builds and updates the replicas from the master and checks them.
        .target(
            name: "ReplicaGenerator",
            dependencies: [
                "TeamworkModel", "CentralStore", "TeamDatabase",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // The event listener: worker changes from the replicas reach the master exactly once.
        .target(
            name: "EventListener",
            dependencies: [
                "TeamworkModel", "CentralStore", "TeamDatabase",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // The sync endpoint: workers pull their replicas over HTTP.
        .target(
            name: "BlobStore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // Blobs in an S3-compatible bucket shared by every service host (SigV4 over the egress client).
        .target(
            name: "ObjectStore",
            dependencies: [
                "BlobStore", "Egress", "TeamworkModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // What both web surfaces (the sync endpoint and the board) share: one shared connection to the
        // master, budgets and per-address limits, 405 from the routes as registered, a 503 for a master away.
        .target(
            name: "ServerSupport",
            dependencies: [
                "TeamworkModel", "CentralStore", "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.embedInCode("Assets/icon.svg")]
        ),

        // Everything a browser sees: the dispatcher's web app (`/board`: pages, actions, the live feed, its
        // stylesheet and scripts), the customer's appointment page and the calendar feeds. Mounted by the
        // service on the sync endpoint's router; knows nothing of the workers' sync.
        .target(
            name: "WebPages",
            dependencies: [
                "TeamworkFormats",
                "TeamworkModel", "CentralStore", "BlobStore", "HTMLText", "ServerSupport", "DayPlanner", "RoadTravel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.embedInCode("Assets/board.css"), .embedInCode("Assets/board.js"), .embedInCode("Assets/map.js")]
        ),

        // The field worker's phone app at /app (docs/phone.md): its pages and routes, and its files under the names
        // they are served by (plain JavaScript modules, no build step; sw-cache.js and sw-sync.js make /app/sw.js).
        .target(
            name: "PhoneApp",
            dependencies: [
                "TeamworkModel", "CentralStore", "HTMLText", "ServerSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            resources: [
                .embedInCode("Files/index.html"), .embedInCode("Files/app.js"), .embedInCode("Files/rules.js"),
                .embedInCode("Files/local.js"), .embedInCode("Files/sync.js"), .embedInCode("Files/words.js"),
                .embedInCode("Files/notify.js"), .embedInCode("Files/fields.js"), .embedInCode("Files/dom.js"),
                .embedInCode("Files/work.js"), .embedInCode("Files/app.css"),
                .embedInCode("Files/sw-cache.js"), .embedInCode("Files/sw-sync.js"), .embedInCode("Files/manifest.webmanifest"),
                // The install icons: PNGs drawn from ServerSupport's icon.svg and icon-maskable.svg (scripts/app-icons).
                .embedInCode("Files/icon-192.png"), .embedInCode("Files/icon-512.png"), .embedInCode("Files/icon-maskable-512.png"),
            ]
        ),

        .target(
            name: "SyncServer",
            dependencies: [
                "PhoneApp",
                "TeamworkModel", "CentralStore", "TeamDatabase", "SyncProtocol", "BlobStore", "ObjectStore", "ServerSupport", "WebPages",
                "WebPush", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),

        // The worker's device: local copies, the offline queue, the sync client.
        .target(
            name: "WorkerClient",
            dependencies: [
                "TeamworkModel", "SyncProtocol", "BlobStore", "HTTPFetch",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The workers' commands (swift-argument-parser), and the executable: a thin shell over them.
        .target(
            name: "WorkerCLI",
            dependencies: [
                "WorkerClient", "TeamworkModel", "SyncProtocol", "CommandLineSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(name: "teamwork-worker", dependencies: ["WorkerCLI"]),

        // Markup that escapes whatever is interpolated: every web page (the board, `map --html`) is built with it.
        .target(name: "HTMLText"),

        // What every command-line tool shares: one-line errors, exit codes, safe output.
        .target(
            name: "CommandLineSupport",
            dependencies: ["TeamworkModel", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // The managers' command-line interface, as a library so the executable stays a thin shell.
        .target(
            name: "ManagerCLI",
            dependencies: [
                "TeamworkFormats",
                "TeamworkModel", "BlobStore", "ObjectStore",
                "CentralStore",
                "LocalPostgres",
                "CommandLineSupport",
                "HTMLText",
                "DayPlanner",
                "RoadTravel",
                "Outbox",
                "Egress",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            resources: [.embedInCode("Assets/map-page.css"), .embedInCode("Assets/map-page.js")]
        ),
        .executableTarget(name: "teamwork-manager", dependencies: ["ManagerCLI"]),

        // The service: replica generator, event listener and sync endpoint (with the board), together or one at a time.
        .target(
            name: "ServiceCLI",
            dependencies: [
                "TeamworkModel", "CentralStore", "ReplicaGenerator", "SyncServer", "WebPages", "EventListener", "CommandLineSupport",
                "LocalPostgres", "RoadTravel", "Outbox", "Egress",
                "BlobStore", "ObjectStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "teamwork-service", dependencies: ["ServiceCLI"]),

        // Writes what the task's declaration (TaskSchema) gives outside Swift: scripts/declare runs it.
        .executableTarget(name: "teamwork-declare", dependencies: ["TeamworkModel"]),

        // Measurements: prints figures, asserts nothing.
        .executableTarget(
            name: "teamwork-bench",
            dependencies: [
                "CentralStore", "ReplicaGenerator", "TeamDatabase", "LocalPostgres", "TeamworkModel", "CommandLineSupport",
                "SyncServer", "WorkerClient", "EventListener", "TeamworkTestSupport", "BlobStore", "ObjectStore", "DayPlanner",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),

        // Build-time embedding of sql/*.sql into the CentralStore module.
        .executableTarget(name: "EmbedSQLTool"),
        .plugin(name: "EmbedSQL", capability: .buildTool(), dependencies: ["EmbedSQLTool"]),

        // Throwaway databases and fixtures shared by the test targets.
        .target(
            name: "TeamworkTestSupport",
            dependencies: [
                "TeamworkFormats",
                "CentralStore", "LocalPostgres", "TeamworkModel", "ObjectStore",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),

        .testTarget(
            name: "EgressTests",
            dependencies: [
                "Egress", "TeamworkModel", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .testTarget(
            name: "TeamworkModelTests",
            dependencies: [
                "TeamworkFormats", "TeamworkModel", "TeamworkTestSupport",
            ]),
        .testTarget(
            name: "DayPlannerTests",
            dependencies: ["DayPlanner", "RoadTravel", "TeamworkModel", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "CentralStoreTests",
            dependencies: [
                "CentralStore", "TeamworkTestSupport", "TeamworkModel", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "ReplicaGeneratorTests",
            dependencies: [
                "ReplicaGenerator", "TeamDatabase", "CentralStore", "TeamworkTestSupport", "TeamworkModel", "LocalPostgres",
                "teamwork-service", "ServiceCLI",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "SyncServerTests",
            dependencies: [
                "PhoneApp",
                "SyncServer", "ReplicaGenerator", "EventListener", "TeamDatabase", "CentralStore", "TeamworkTestSupport", "TeamworkModel",
                "HTMLText", "WebPages", "ServerSupport", "HTTPFetch", "ObjectStore", "BlobStore",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "EventListenerTests",
            dependencies: [
                "EventListener", "ReplicaGenerator", "TeamDatabase", "CentralStore", "TeamworkTestSupport", "TeamworkModel",
                "LocalPostgres", "teamwork-service",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The end-to-end suites: the built tools and the service as processes, a browser, the peers nobody here wrote.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "PhoneApp",
                "TeamworkFormats",
                "TeamworkTestSupport", "CentralStore", "ReplicaGenerator", "TeamDatabase", "TeamworkModel", "LocalPostgres",
                "WorkerClient", "EventListener", "WorkerCLI", "teamwork-worker", "teamwork-service", "ManagerCLI", "ServiceCLI",
                "CommandLineSupport", "HTTPFetch", "Outbox", "Egress", "WebPush",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "ManagerCLITests",
            dependencies: [
                "TeamworkTestSupport", "CentralStore", "TeamworkModel", "LocalPostgres", "teamwork-manager", "teamwork-worker",
                "teamwork-service", "DayPlanner",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
