#!/usr/bin/env bash
# The demo on a fresh machine: set up, build, then `inrush demo` (private PostgreSQL, 1M rows,
# inrush against psql \copy). Extra arguments go to `inrush demo` (e.g. --rows 100000, or --keep
# to leave the server running and print its --to; `inrush demo --stop DIR` stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
# The tests' build (the dev profile, optimized: see Cargo.toml), so scripts/test.sh afterwards
# compiles only the test harnesses, not every crate again.
cargo build --workspace --locked --bins
exec target/debug/inrush demo "$@"
