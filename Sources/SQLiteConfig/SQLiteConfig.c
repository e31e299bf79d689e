#include "SQLiteConfig.h"
#include <sqlite3.h>

int teamwork_sqlite_disable_memory_statistics(void) {
    // With statistics on (the default), every allocation SQLite makes takes one
    // process-wide mutex to count it; threads building files at once queue on it.
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
