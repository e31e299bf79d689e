#!/usr/bin/env bash
# The standby: on first start, a copy of the primary (pg_basebackup -R writes standby.signal and
# primary_conninfo); at every start, the primary told to wait for it at each commit; then the
# postgres image's own entrypoint, which starts it streaming.
set -euo pipefail
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    chown postgres:postgres "$PGDATA"
    chmod 0700 "$PGDATA"
    until gosu postgres pg_basebackup --host=postgres-primary --username=replicator --pgdata="$PGDATA" \
        --write-recovery-conf --wal-method=stream --checkpoint=fast; do
        echo "standby: waiting for the primary..." >&2
        rm -rf "${PGDATA:?}"/*
        sleep 2
    done
    # The copy holds the primary's synchronous_standby_names (postgresql.auto.conf): promoted, this
    # server would wait at every commit for a standby of its own that does not exist.
    sed -i '/^synchronous_standby_names/d' "$PGDATA/postgresql.auto.conf"
fi
# At every start (idempotent): the primary answers a commit once this standby has it on disk. Not
# fatal: a primary that cannot be told says so here, and the standby streams asynchronously meanwhile.
for attempt in 1 2 3 4 5; do
    if PGPASSWORD="$PRIMARY_PASSWORD" psql --host=postgres-primary --username=teamwork --dbname=postgres -v ON_ERROR_STOP=1 \
        -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null; then
        break
    fi
    echo "standby: cannot make the primary wait for this standby (attempt $attempt of 5); replication is asynchronous meanwhile" >&2
    sleep 2
done
exec docker-entrypoint.sh postgres -c hot_standby=on
