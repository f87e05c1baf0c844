# shellcheck shell=bash
# Sourced by .ci/run before the test suite: a throwaway PostgreSQL server for the history's
# tests (tests/history/test_history_postgres.py), which fail rather than skip without one when CI=true.
# It listens on a unix socket in a temporary folder only (no port to collide on), is named to
# the tests by PERFGATE_TEST_PG_URL, and is stopped by the EXIT trap set here.
# PostgreSQL refuses to run as root: as root (CI), the cluster belongs to the user perfgate-pg.

perfgate_pg_bin() {
  if command -v initdb >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"
  else
    # Debian installs the server's binaries off PATH, one folder per major version.
    { ls -d /usr/lib/postgresql/*/bin 2>/dev/null || true; } | sort -V | tail -n 1
  fi
}

PERFGATE_PG_BIN="$(perfgate_pg_bin)"
if [ -z "$PERFGATE_PG_BIN" ] || [ ! -x "$PERFGATE_PG_BIN/initdb" ]; then
  apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
  PERFGATE_PG_BIN="$(perfgate_pg_bin)"
fi
PERFGATE_PG_HOME="$(mktemp -d /tmp/perfgate-pg.XXXXXX)"
if [ "$(id -u)" = 0 ]; then
  id -u perfgate-pg >/dev/null 2>&1 \
    || useradd --system --no-create-home --shell /usr/sbin/nologin perfgate-pg
  chown perfgate-pg "$PERFGATE_PG_HOME"
  perfgate_pg_as() { runuser -u perfgate-pg -- "$@"; }
else
  perfgate_pg_as() { "$@"; }
fi
perfgate_pg_stop() {
  perfgate_pg_as "$PERFGATE_PG_BIN/pg_ctl" -D "$PERFGATE_PG_HOME/data" -m fast -w stop \
    >/dev/null 2>&1 || true
  rm -rf "$PERFGATE_PG_HOME"
}
trap perfgate_pg_stop EXIT
perfgate_pg_as "$PERFGATE_PG_BIN/initdb" -D "$PERFGATE_PG_HOME/data" -U perfgate --auth=trust \
  --no-sync -E UTF8 --locale=C >"$PERFGATE_PG_HOME/initdb.log"
perfgate_pg_as "$PERFGATE_PG_BIN/pg_ctl" -D "$PERFGATE_PG_HOME/data" -l "$PERFGATE_PG_HOME/log" \
  -w -o "-k $PERFGATE_PG_HOME -c listen_addresses='' -c fsync=off" start >/dev/null
export PERFGATE_TEST_PG_URL="postgresql://perfgate@/postgres?host=$PERFGATE_PG_HOME"
echo "PostgreSQL $("$PERFGATE_PG_BIN/postgres" --version | awk '{print $3}') for the tests: $PERFGATE_TEST_PG_URL"
