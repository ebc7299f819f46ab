#!/usr/bin/env bash
# A private MariaDB 10.11 server for inrush's tests and demo, without a system install: Debian's
# own packages (mariadb-server-core, mariadb-server, mariadb-client-core, mariadb-client, and any
# shared library they need that the machine lacks, e.g. libaio1 and liburing2) are fetched with
# `apt-get download` and unpacked with `dpkg -x` into ./.mariadb (at the repo root; not in git),
# so nothing is installed, no service is registered, and any number of servers can run side by
# side from it, each in its own data directory. The binaries run with ./.mariadb's libraries on
# LD_LIBRARY_PATH and --no-defaults, so no /etc/mysql config on the machine leaks in. When run as
# root, the server runs as the unprivileged user `inrush` (created if missing), as the private
# PostgreSQL does.
#
#   scripts/mariadb.sh install                  download + unpack once (quick when done); prints the bin dir
#   scripts/mariadb.sh start DATADIR PORT [OPT...]
#                                               initialise DATADIR if empty, start the server on
#                                               127.0.0.1:PORT (socket DATADIR/mysqld.sock), wait until
#                                               it answers; prints mysql://inrush:inrush@127.0.0.1:PORT/inrush
#                                               (OPT: more mariadbd options, after the defaults, e.g.
#                                               --innodb-autoinc-lock-mode=2)
#   scripts/mariadb.sh stop DATADIR             clean shutdown (idempotent)
#   scripts/mariadb.sh client DATADIR [ARGS]    the `mariadb` client, logged in as inrush to database
#                                               inrush over TCP, local-infile on (DATADIR/client.cnf)
#
# The server has a user inrush@'%' and inrush@localhost (password inrush, ALL privileges), a
# database inrush, and root@localhost with no password over the socket. Its error log is
# DATADIR/error.log.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
ROOT=$REPO/.mariadb
STAMP=$ROOT/.installed
BIN=$ROOT/usr/bin
MARIADBD=$ROOT/usr/sbin/mariadbd
# The packages whose files we use; their missing shared-library dependencies are added.
PACKAGES=(mariadb-server-core mariadb-server mariadb-client-core mariadb-client)
# MariaDB's default strict mode (what a fresh 10.11 has unless a config changes it).
SQL_MODE=STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION
RUN_AS=inrush

say() { echo "mariadb.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {
  echo "usage: scripts/mariadb.sh install | start DATADIR PORT [OPT...] | stop DATADIR | client DATADIR [ARGS...]" >&2
  exit 2
}

# --- install -------------------------------------------------------------------------------------

installed() { [ -f "$STAMP" ] && [ -x "$MARIADBD" ] && [ -x "$BIN/mariadb" ]; }

ld_library_path() { cat "$ROOT/.ld_library_path"; }

apt_download() {
  local opts=()
  # As root, apt drops to the _apt user to download, which cannot write to our directory (it
  # warns and downloads as root anyway); say so up front to keep the output clean.
  [ "$(id -u)" = 0 ] && opts=(-o APT::Sandbox::User=root)
  apt-get "${opts[@]}" -qq download "$@"
}

is_installed_pkg() {
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null)" = "ii " ]
}

# The shared-library packages (lib*, zlib1g; not Perl modules) that PACKAGES depend on, directly
# or through each other, and that the machine does not have.
missing_libraries() {
  local -A seen=()
  local queue=("$@") pkg dep missing=()
  while [ "${#queue[@]}" -gt 0 ]; do
    pkg=${queue[0]}
    queue=("${queue[@]:1}")
    while read -r dep; do
      dep=${dep%%:*}
      case "$dep" in
        *-perl | "<"*) continue ;;
        lib* | zlib1g) ;;
        *) continue ;;
      esac
      [ -n "${seen[$dep]:-}" ] && continue
      seen[$dep]=1
      if ! is_installed_pkg "$dep"; then
        missing+=("$dep")
        queue+=("$dep")
      fi
    done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
               --no-replaces --no-enhances "$pkg" 2>/dev/null |
             awk '/^  \|?(Pre)?Depends: / { print $2 }')
  done
  [ "${#missing[@]}" = 0 ] || printf '%s\n' "${missing[@]}"
}

install() {
  if installed; then
    echo "$BIN"
    return
  fi
  command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
    die "needs apt-get and dpkg (Debian or Ubuntu)"
  # One install at a time (tests may start several servers at once); the stamp, written last,
  # marks a finished one, so an interrupted install is redone from scratch.
  mkdir -p "$ROOT"
  exec 9>"$ROOT/.lock"
  flock 9
  if installed; then
    echo "$BIN"
    return
  fi
  local t0=$SECONDS
  find "$ROOT" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
  mkdir "$ROOT/.debs"

  # No package lists yet (a fresh machine): fetch them.
  if ! apt-cache show "${PACKAGES[0]}" >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
  fi
  local libs=()
  mapfile -t libs < <(missing_libraries "${PACKAGES[@]}")
  say "downloading ${PACKAGES[*]} ${libs[*]}"
  if ! (cd "$ROOT/.debs" && apt_download "${PACKAGES[@]}" "${libs[@]}") 2>"$ROOT/.apt.err"; then
    # Stale package lists (a superseded security update is gone from the mirror): refresh, retry.
    [ "$(id -u)" = 0 ] || { cat "$ROOT/.apt.err" >&2; die "apt-get download failed; try as root after 'apt-get update'"; }
    say "apt-get download failed; running apt-get update and retrying"
    apt-get update -qq
    mapfile -t libs < <(missing_libraries "${PACKAGES[@]}")
    rm -f "$ROOT/.debs"/*.deb
    (cd "$ROOT/.debs" && apt_download "${PACKAGES[@]}" "${libs[@]}")
  fi
  local deb
  for deb in "$ROOT/.debs"/*.deb; do
    dpkg -x "$deb" "$ROOT"
  done

  # Every directory holding shared libraries, except the server's plugins.
  find "$ROOT" \( -name '*.so' -o -name '*.so.[0-9]*' \) ! -path '*/plugin/*' ! -path '*/security/*' \
    -printf '%h\n' | sort -u | paste -sd: >"$ROOT/.ld_library_path"

  # Check that every binary we run finds its libraries (the unpacked ones, then the system's).
  local bad
  bad=$(for f in "$MARIADBD" "$BIN/"{mariadb,mariadb-admin,mariadb-dump,my_print_defaults,resolveip} \
        "$ROOT/usr/lib/mysql/plugin/"*.so; do
          LD_LIBRARY_PATH=$(ld_library_path) ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|$f: |"
        done || true)
  [ -z "$bad" ] || die "unresolved shared libraries after unpacking:"$'\n'"$bad"

  (cd "$ROOT/.debs" && for deb in *.deb; do dpkg-deb -f "$deb" Package Version | paste -sd' '; done) |
    sed 's/Package: //; s/ Version: / /' >"$ROOT/.packages"
  rm -rf "$ROOT/.debs" "$ROOT/.apt.err"
  mv "$ROOT/.packages" "$STAMP"
  say "unpacked $(wc -l <"$STAMP") packages into $ROOT ($(du -sh "$ROOT" | cut -f1)) in $((SECONDS - t0))s"
  echo "$BIN"
}

# --- server --------------------------------------------------------------------------------------

# Runs a command as the server's user: `inrush` when we are root, else ourselves.
as_server_user() {
  if [ "$(id -u)" = 0 ]; then
    setpriv --reuid="$RUN_AS" --regid="$RUN_AS" --init-groups --reset-env -- \
      env LD_LIBRARY_PATH="$(ld_library_path)" "$@"
  else
    env LD_LIBRARY_PATH="$(ld_library_path)" "$@"
  fi
}

ensure_server_user() {
  [ "$(id -u)" = 0 ] || return 0
  id "$RUN_AS" >/dev/null 2>&1 ||
    useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_AS"
  as_server_user test -x "$MARIADBD" ||
    die "user $RUN_AS cannot run $MARIADBD (is a directory above the repo closed to others?)"
}

# Whether a process lives; a zombie (exited, not yet reaped, as in a container without an init)
# does not.
alive() {
  local state
  state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$state" ] && [ "$state" != Z ]
}

# The pid in DATADIR's pid file when that process is a live mariadbd, else nothing.
running_pid() {
  local pidfile=$1/mariadbd.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  [ -n "$pid" ] && alive "$pid" || return 0
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mariadbd ] || return 0
  echo "$pid"
}

log_tail() {
  if [ -f "$1/error.log" ]; then
    say "last lines of $1/error.log:"
    tail -n 30 "$1/error.log" >&2
  fi
}

server_options() {
  local datadir=$1 port=$2
  printf '%s\n' \
    --no-defaults \
    "--basedir=$ROOT/usr" \
    "--plugin-dir=$ROOT/usr/lib/mysql/plugin" \
    "--lc-messages-dir=$ROOT/usr/share/mysql" \
    "--character-sets-dir=$ROOT/usr/share/mysql/charsets" \
    "--datadir=$datadir" \
    "--socket=$datadir/mysqld.sock" \
    "--pid-file=$datadir/mariadbd.pid" \
    "--log-error=$datadir/error.log" \
    "--port=$port" \
    --bind-address=127.0.0.1 \
    --skip-name-resolve \
    --local-infile=ON \
    "--sql-mode=$SQL_MODE" \
    --character-set-server=utf8mb4 \
    --collation-server=utf8mb4_general_ci \
    --innodb-buffer-pool-size=256M \
    --innodb-flush-log-at-trx-commit=2
  # character-set-server/collation-server: what Debian's packaged 50-server.cnf sets (the
  # compiled-in default of 10.11 is latin1).
  # innodb-flush-log-at-trx-commit=2: write the redo log at each commit but fsync it about once a
  # second: a throwaway test server needs no durability across an OS crash, and per-commit
  # fsyncs would dominate the timing of small transactions.
}

start() {
  local datadir=$1 port=$2 extra=("${@:3}")
  case "$port" in '' | *[!0-9]*) die "PORT must be a number, got '$port'" ;; esac
  install >/dev/null
  ensure_server_user
  mkdir -p "$datadir"
  datadir=$(cd "$datadir" && pwd)
  # Unix socket paths are limited to 107 bytes.
  [ "${#datadir}" -le 90 ] || die "DATADIR path too long for the socket inside it: $datadir"

  local pid
  pid=$(running_pid "$datadir")
  if [ -n "$pid" ]; then
    local running_port
    running_port=$(sed -n 's/^port=//p' "$datadir/client.cnf" 2>/dev/null || true)
    say "already running (pid $pid) in $datadir"
    [ -z "$running_port" ] || [ "$running_port" = "$port" ] ||
      die "it listens on port $running_port, not $port; stop it first"
    echo "mysql://inrush:inrush@127.0.0.1:$port/inrush"
    return
  fi

  [ "$(id -u)" = 0 ] && chown "$RUN_AS:$RUN_AS" "$datadir"
  if [ -z "$(ls -A "$datadir")" ]; then
    say "initialising $datadir"
    as_server_user "$BIN/mariadb-install-db" --no-defaults "--basedir=$ROOT/usr" \
      "--datadir=$datadir" --auth-root-authentication-method=normal --skip-test-db \
      --skip-name-resolve >"$datadir/install-db.log" 2>&1 ||
      { cat "$datadir/install-db.log" >&2; die "mariadb-install-db failed"; }
  elif [ ! -d "$datadir/mysql" ]; then
    die "$datadir is neither empty nor a MariaDB data directory"
  fi

  local t0=$SECONDS opts
  mapfile -t opts < <(server_options "$datadir" "$port")
  opts+=("${extra[@]}")
  # setsid: its own session, so the caller's Ctrl-C or exit does not reach it.
  as_server_user setsid "$MARIADBD" "${opts[@]}" </dev/null >>"$datadir/mariadbd.out" 2>&1 &
  local launcher=$!

  # Wait until it answers on its socket as root (no password, as mariadb-install-db left it).
  local admin=(env LD_LIBRARY_PATH="$(ld_library_path)" "$BIN/mariadb-admin" --no-defaults
    "--socket=$datadir/mysqld.sock" --user=root --connect-timeout=2)
  local deadline=$((SECONDS + 60))
  until "${admin[@]}" status >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log_tail "$datadir"
      die "server did not accept connections within 60s"
    fi
    if ! alive "$launcher"; then
      log_tail "$datadir"
      die "server exited during startup"
    fi
    sleep 0.2
  done

  # The account and database inrush uses (idempotent: also heals a half-initialised DATADIR).
  # mariadb-install-db also makes root@<hostname>, which skip-name-resolve ignores with a warning
  # at every start: drop it (root@localhost, @127.0.0.1 and @::1 stay, with no password).
  local host
  host=$(hostname 2>/dev/null || true)
  case "$host" in '' | localhost | 127.0.0.1 | ::1 | *"'"* | *\\*) host=none.invalid ;; esac
  env LD_LIBRARY_PATH="$(ld_library_path)" "$BIN/mariadb" --no-defaults \
    "--socket=$datadir/mysqld.sock" --user=root <<SQL ||
DROP USER IF EXISTS 'root'@'$host';
CREATE USER IF NOT EXISTS 'inrush'@'%' IDENTIFIED BY 'inrush';
CREATE USER IF NOT EXISTS 'inrush'@'localhost' IDENTIFIED BY 'inrush';
GRANT ALL PRIVILEGES ON *.* TO 'inrush'@'%' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'inrush'@'localhost' WITH GRANT OPTION;
CREATE DATABASE IF NOT EXISTS inrush;
SQL
    { log_tail "$datadir"; die "creating user and database inrush failed"; }

  # Options for `client`, and for anyone else: mariadb --defaults-file=DATADIR/client.cnf
  cat >"$datadir/client.cnf" <<EOF
[client]
host=127.0.0.1
port=$port
user=inrush
password=inrush

[mariadb-client]
database=inrush
local-infile=1
EOF
  chmod 644 "$datadir/client.cnf"
  # What we wrote as root belongs with the rest of DATADIR, for a later non-root start.
  if [ "$(id -u)" = 0 ]; then
    chown "$RUN_AS:$RUN_AS" "$datadir/client.cnf" "$datadir/mariadbd.out"
    [ ! -f "$datadir/install-db.log" ] || chown "$RUN_AS:$RUN_AS" "$datadir/install-db.log"
  fi

  env LD_LIBRARY_PATH="$(ld_library_path)" "$BIN/mariadb" "--defaults-file=$datadir/client.cnf" \
    -e 'SELECT 1' >/dev/null ||
    { log_tail "$datadir"; die "cannot log in as inrush over TCP on 127.0.0.1:$port"; }
  say "started (pid $(running_pid "$datadir")) in $((SECONDS - t0))s; socket $datadir/mysqld.sock, log $datadir/error.log"
  echo "mysql://inrush:inrush@127.0.0.1:$port/inrush"
}

stop() {
  local datadir=$1 pid
  [ -d "$datadir" ] || { say "not running ($datadir does not exist)"; return; }
  pid=$(running_pid "$datadir")
  if [ -z "$pid" ]; then
    say "not running in $datadir"
    return
  fi
  # SIGTERM is mariadbd's clean shutdown (as mariadb-admin shutdown), and needs no password.
  kill -TERM "$pid"
  local deadline=$((SECONDS + 60))
  while [ -n "$(running_pid "$datadir")" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "pid $pid still running 60s after SIGTERM; killing it (InnoDB recovers on next start)"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  say "stopped (pid $pid)"
}

client() {
  local datadir=$1
  shift
  installed || die "not installed; run scripts/mariadb.sh install"
  [ -f "$datadir/client.cnf" ] || die "no $datadir/client.cnf; start the server first"
  exec env LD_LIBRARY_PATH="$(ld_library_path)" "$BIN/mariadb" "--defaults-file=$datadir/client.cnf" "$@"
}

case "${1:-}" in
  install) [ $# = 1 ] || usage; install ;;
  start) [ $# -ge 3 ] || usage; start "${@:2}" ;;
  stop) [ $# = 2 ] || usage; stop "$2" ;;
  client) [ $# -ge 2 ] || usage; client "$2" "${@:3}" ;;
  *) usage ;;
esac
