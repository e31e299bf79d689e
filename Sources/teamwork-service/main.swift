import ServiceCLI

await TeamworkService.runMain()
