extension Optional {
    /// `map` for an async transform: looks up ids for options that were given.
    public func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
