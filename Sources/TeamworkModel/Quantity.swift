/// A count with its noun, as a person writes it: `1 task`, `3 tasks`, `0 tasks`, `1 change waits`.
/// The one rule for every count the tools and pages say in words.
public func quantity(_ count: Int, _ one: String, _ many: String? = nil) -> String {
    "\(count) " + (count == 1 ? one : many ?? one + "s")
}
