import Foundation

/// An option's value, else its environment variable's when that is set and not empty: how every
/// `teamwork-service` option with a `TEAMWORK_…` twin is read.
func optionOrEnvironment(_ option: String?, _ variable: String) -> String? {
    option ?? ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
}
