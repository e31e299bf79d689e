import WorkerCLI

await TeamworkWorker.runMain()
