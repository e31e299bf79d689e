#!/usr/bin/env bash
# The standby: on first start, a copy of the primary (pg_basebackup -R writes standby.signal and
# primary_conninfo) and the primary told to wait for it at each commit; then the postgres image's
# own entrypoint, which starts it streaming.
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
    # From now on the primary answers a commit once this standby has it on disk.
    PGPASSWORD="$PRIMARY_PASSWORD" psql --host=postgres-primary --username=teamwork --dbname=postgres -v ON_ERROR_STOP=1 \
        -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()"
fi
exec docker-entrypoint.sh postgres -c hot_standby=on
