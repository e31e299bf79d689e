import ManagerCLI

await TeamworkManager.runMain()
