import SQLiteConfig

/// SQLite's process-wide settings. They take effect only before the process
/// opens its first database, so ``ReplicaDirectory`` applies them when made.
public enum SQLiteProcess {
    /// Turns off SQLite's memory statistics, which nothing here reads: with them
    /// on, every allocation SQLite makes takes one process-wide mutex, and the
    /// full rebuild's build threads, allocating for every statement they run,
    /// queue on it. `false` when some database was opened first (nothing changed).
    public static let configured: Bool = teamwork_sqlite_disable_memory_statistics() == 0
}
