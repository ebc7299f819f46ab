#!/usr/bin/env bash
# Differential fuzzing for as long as asked (crates/inrush/tests/fuzz.rs): generated CSV files,
# text and typed, loaded both by inrush and by PostgreSQL's own COPY (a private PostgreSQL 18),
# typed files by inrush and by MariaDB's strict LOAD DATA INFILE (a private MariaDB 10.11), and
# typed files into SQLite tables, ordinary and STRICT, against what the shell's .import stores,
# and JSON lines against PostgreSQL's json_populate_record; the six at once. Alongside them,
# python/tests/test_fuzz.py: Arrow tables (Parquet, IPC, in memory) into PostgreSQL against COPY
# of each value's text, into MariaDB against its strict LOAD DATA, into SQLite against inrush's
# CSV path of the same text (a third of the minutes each). Prints, for each, the files or tables
# tried, how many both refused, and every difference found with its file.
#   scripts/fuzz.sh --minutes 30            # a new seed each run (printed)
#   scripts/fuzz.sh --minutes 5 --seed 42   # the same files again
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10
seed=$(date +%s)
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--minutes N] [--seed S]" >&2; exit 2 ;;
  esac
done
scripts/setup.sh
scripts/mariadb.sh install
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --locked 2>&1 | tail -n 1
echo "fuzz.sh: $minutes minutes from seed $seed"
export INRUSH_FUZZ_MINUTES=$minutes INRUSH_FUZZ_SEED=$seed
# The Arrow fuzz runs beside the CSV ones, so that the run takes the minutes asked for.
.venv/bin/python -m pytest python/tests/test_fuzz.py -q -p no:cacheprovider -s 2>&1 \
  | grep -E '^(fuzz:|E  )|passed|failed' &
arrow=$!
status=0
cargo test --locked -p inrush --test fuzz -- --nocapture --test-threads 6 2>&1 \
  | grep -E '^(fuzz:|file |  )|test result|panicked' || status=$?
wait "$arrow" || status=$?
exit "$status"
