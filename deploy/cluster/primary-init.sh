#!/usr/bin/env bash
# Run once by the postgres image when it makes the primary's cluster (docker-entrypoint-initdb.d):
# a role the standby streams as, allowed to replicate from the compose network.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -c "CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD '${REPLICATOR_PASSWORD}'"
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
