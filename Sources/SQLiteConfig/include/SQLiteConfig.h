#ifndef TEAMWORK_SQLITE_CONFIG_H
#define TEAMWORK_SQLITE_CONFIG_H

/// Turns off SQLite's memory statistics for the whole process. Returns an SQLite
/// result code: SQLITE_MISUSE (21) when SQLite was already initialized (some
/// database was opened first), in which case nothing changed.
///
/// A wrapper because sqlite3_config() is variadic, which Swift cannot call.
int teamwork_sqlite_disable_memory_statistics(void);

#endif
