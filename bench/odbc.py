#!/usr/bin/env python3
"""Benchmark inrush's ODBC target against the ODBC tools a user would pick, on each driver.

Starts a private PostgreSQL 18 (as bench/run.py does) and a private MariaDB 10.11 (as
bench/mariadb.py does), makes an SQLite file, generates the sqlbulkcopy rows (`inrush gen`:
3 INT + 3 VARCHAR(100)) and loads them through Debian's ODBC drivers over unixODBC:

  postgresql  psqlODBC ({PostgreSQL Unicode}), over the server's Unix socket
  mariadb     MariaDB Connector/ODBC ({MariaDB Unicode}), over TCP on 127.0.0.1
  sqlite      the SQLite ODBC driver ({SQLite3}), in process

with these methods, each in its own process:

  row_by_row_autocommit    pyodbc, one INSERT per row, autocommit on: the usual "before".
                           On --row-by-row-rows rows (default 10,000), its time scaled to all rows
  pyodbc_fast_executemany  pyodbc with fast_executemany (parameter arrays), 10,000 rows per call,
                           one commit
  odbc2parquet             `odbc2parquet insert` of the same rows as Parquet (when the binary is
                           there: --odbc2parquet PATH, or `cargo install odbc2parquet`)
  inrush_odbc              inrush load --to 'odbc:...'
  inrush_native            inrush load --to the same server through its own engine: the ceiling

Each load goes into the table dropped and created again just before it (untimed). The time is
the loading process's wall time, start to exit, commit included. After every load the table's
COUNT(*) and the sums of the three INT columns must equal those of the CSV, else the script
stops; a tool that fails on a driver is reported as failed with its first error line, and the
run goes on. Raw numbers go to bench/out/odbc-<date>.json. See bench/README.md.

Runs under .venv's Python (scripts/setup.sh: pyarrow), into which it installs pyodbc if
missing; needs the ODBC drivers (scripts/setup.sh installs them as root).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mariadb  # noqa: E402
import run  # noqa: E402
import sqlite  # noqa: E402

COLUMNS = run.SQLBULKCOPY_COLUMNS
TABLE = "sqlbulkcopy"
DRIVERS = ("postgresql", "mariadb", "sqlite")
METHODS = ("row_by_row_autocommit", "pyodbc_fast_executemany", "odbc2parquet", "inrush_odbc",
           "inrush_native")

# The pyodbc loads, run as a child process so each is timed and measured alone.
PYODBC_SCRIPT = r"""
import csv, sys, pyodbc
mode, conn_str, table, path, limit = sys.argv[1:6]
limit = int(limit)
conn = pyodbc.connect(conn_str, autocommit=(mode == "row_by_row_autocommit"))
cur = conn.cursor()
sql = f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?, ?)"
def row(r):
    return [int(v) if i < 3 and v else (v or None) for i, v in enumerate(r)]
with open(path, newline="") as f:
    rows = csv.reader(f)
    if mode == "row_by_row_autocommit":
        for i, r in enumerate(rows):
            if i >= limit:
                break
            cur.execute(sql, row(r))
    else:
        cur.fast_executemany = True
        batch = []
        for r in rows:
            batch.append(row(r))
            if len(batch) == 10000:
                cur.executemany(sql, batch)
                batch.clear()
        if batch:
            cur.executemany(sql, batch)
        conn.commit()
conn.close()
"""


def pyodbc_connect(conn_str: str):
    import pyodbc
    return pyodbc.connect(conn_str, autocommit=True)


class Target:
    """One driver's database: its ODBC connection string and inrush's native `--to`."""

    def __init__(self, name: str, odbc: str, native: str, ddl_types: dict[str, str]):
        self.name, self.odbc, self.native, self.types = name, odbc, native, ddl_types

    def recreate(self) -> None:
        conn = pyodbc_connect(self.odbc)
        cols = ", ".join(f"{n} {self.types.get(t, t)}" for n, t in COLUMNS)
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(f"CREATE TABLE {TABLE} ({cols})")
        conn.close()

    def fingerprint(self) -> tuple:
        sums = ", ".join(f"SUM({n})" for n, t in COLUMNS if t == "int")
        sql = f"SELECT COUNT(*), {sums} FROM {TABLE}"
        if self.name == "sqlite":
            # Read by SQLite itself: its ODBC driver describes SUM as a 32-bit integer, and the
            # sums of these rows need 64 bits.
            conn = sqlite3.connect(self.native.removeprefix("sqlite://"))
        else:
            conn = pyodbc_connect(self.odbc)
        row = conn.execute(sql).fetchone()
        conn.close()
        return tuple(int(v or 0) for v in row)


def expected(path: Path, limit: int | None = None) -> tuple:
    count, sums = 0, [0, 0, 0]
    with path.open(newline="") as f:
        for i, r in enumerate(csv.reader(f)):
            if limit is not None and i >= limit:
                break
            count += 1
            for k in range(3):
                sums[k] += int(r[k]) if r[k] else 0
    return (count, *sums)


def write_parquet(source: Path, out: Path) -> None:
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    names = [n for n, _ in COLUMNS]
    types = {n: (pa.int32() if t == "int" else pa.string()) for n, t in COLUMNS}
    table = pcsv.read_csv(source, read_options=pcsv.ReadOptions(column_names=names),
                          convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=True))
    pq.write_table(table, out)


class Bench:
    def __init__(self, args, inrush: Path, scratch: Path, odbc2parquet: str | None):
        self.args, self.inrush, self.scratch, self.odbc2parquet = args, inrush, scratch, odbc2parquet
        self.csv = scratch / "rows.csv"
        self.parquet = scratch / "rows.parquet"

    def prepare(self) -> None:
        run.run([str(self.inrush), "gen", "-o", str(self.csv), "--rows", str(self.args.rows), "--seed", "42"])
        if self.odbc2parquet:
            write_parquet(self.csv, self.parquet)
        self.all_rows = expected(self.csv)
        self.row_by_row_rows = min(self.args.row_by_row_rows, self.args.rows)
        self.some_rows = expected(self.csv, self.row_by_row_rows)

    def command(self, method: str, target: Target) -> list[str]:
        if method in ("row_by_row_autocommit", "pyodbc_fast_executemany"):
            limit = self.row_by_row_rows if method == "row_by_row_autocommit" else self.args.rows
            return [sys.executable, "-c", PYODBC_SCRIPT, method, target.odbc, TABLE, str(self.csv), str(limit)]
        if method == "odbc2parquet":
            return [self.odbc2parquet, "insert", "--connection-string", target.odbc, str(self.parquet), TABLE]
        to = f"odbc:{target.odbc}" if method == "inrush_odbc" else target.native
        return [str(self.inrush), "load", str(self.csv), "--to", to, "--table", TABLE, "--json", "--no-progress"]

    def measure(self, method: str, target: Target) -> dict:
        target.recreate()
        fin, seconds = mariadb.timed([self.command(method, target)])
        result = {"driver": target.name, "method": method, "seconds": seconds,
                  "peak_rss_kib": fin[0].maxrss_kib}
        if fin[0].returncode != 0:
            lines = (fin[0].stderr or fin[0].stdout).strip().splitlines()
            # The driver's message if there is one, else the first error line, else the last.
            said = ([l for l in lines if "Message:" in l] + [l for l in lines if "rror" in l] + lines[-1:])
            result["failed"] = said[0].strip()[:300] if said else f"exit {fin[0].returncode}"
            return result
        want = self.some_rows if method == "row_by_row_autocommit" else self.all_rows
        got = target.fingerprint()
        if got != want:
            raise run.BenchError(f"{target.name} {method}: the table holds {got} (count, sums); the CSV {want}")
        result["rows"] = want[0]
        if want[0] != self.all_rows[0]:
            result["seconds_measured"] = seconds
            result["seconds"] = seconds * self.all_rows[0] / want[0]
        return result


def targets(args, pg: run.Server, maria: mariadb.Server, scratch: Path) -> list[Target]:
    out = []
    if "postgresql" in args.drivers:
        odbc = f"Driver={{PostgreSQL Unicode}};Server={pg.sock};Port={run.PORT};Uid=postgres;Database=postgres;"
        out.append(Target("postgresql", odbc, pg.conninfo, {}))
    if "mariadb" in args.drivers:
        odbc = (f"Driver={{MariaDB Unicode}};Server=127.0.0.1;Port={maria.port};Uid=inrush;Pwd=inrush;"
                "Database=inrush;")
        out.append(Target("mariadb", odbc, maria.url, {}))
    if "sqlite" in args.drivers:
        db = scratch / "bench.db"
        out.append(Target("sqlite", f"Driver={{SQLite3}};Database={db};", f"sqlite://{db}",
                          {"int": "INTEGER", "varchar(100)": "TEXT"}))
    return out


def summarize(results: list[dict]) -> dict:
    best: dict[str, dict[str, float | str]] = {}
    for r in results:
        cell = best.setdefault(r["driver"], {})
        if "failed" in r:
            cell.setdefault(r["method"], "failed")
        elif not isinstance(cell.get(r["method"]), float) or r["seconds"] < cell[r["method"]]:
            cell[r["method"]] = r["seconds"]
    return best


def print_summary(best: dict, rows: int) -> None:
    print(f"\n{rows:,} rows, best of the rounds, seconds (rows/s):")
    print(f"{'driver':<11} " + " ".join(f"{m:>24}" for m in METHODS))
    for driver, cells in best.items():
        line = []
        for m in METHODS:
            v = cells.get(m)
            line.append(f"{'-' if v is None else v:>24}" if not isinstance(v, float)
                        else f"{v:>10.2f} ({rows / v:>9,.0f}/s)")
        print(f"{driver:<11} " + " ".join(line))
    print("\nratios (above 1: inrush over ODBC is faster):")
    for driver, cells in best.items():
        ours = cells.get("inrush_odbc")
        if not isinstance(ours, float):
            continue
        parts = [f"{m} / inrush_odbc = {cells[m] / ours:.1f}x" for m in METHODS[:3]
                 if isinstance(cells.get(m), float)]
        native = cells.get("inrush_native")
        if isinstance(native, float):
            parts.append(f"inrush_odbc / inrush_native = {ours / native:.2f}")
        print(f"  {driver}: " + "; ".join(parts))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--row-by-row-rows", type=int, default=10_000,
                   help="rows the row-by-row method loads; its time is scaled to --rows")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--drivers", default=",".join(DRIVERS), type=lambda s: s.split(","))
    p.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    p.add_argument("--odbc2parquet", default=None, help="the odbc2parquet binary (default: on PATH or in ~/.cargo/bin)")
    p.add_argument("--pg-bin", default=None)
    p.add_argument("--keep", action="store_true")
    return p.parse_args()


def in_venv() -> None:
    """Runs this script under .venv's Python, with pyodbc (installed there if missing) and
    pyarrow (scripts/setup.sh)."""
    python = sqlite.VENV_BIN / "python"
    if Path(sys.executable).absolute() != python.absolute() and python.exists():
        os.execv(python, [str(python), __file__, *sys.argv[1:]])
    try:
        import pyodbc  # noqa: F401
    except ImportError:
        sqlite.venv_pip_install("pyodbc")


def main() -> int:
    args = parse_args()
    in_venv()
    inrush = run.inrush_binary(args.inrush)
    odbc2parquet = args.odbc2parquet or shutil.which("odbc2parquet") or next(
        (str(p) for p in [Path.home() / ".cargo/bin/odbc2parquet"] if p.exists()), None)
    if not odbc2parquet:
        run.log("odbc2parquet not found (cargo install odbc2parquet); its method is left out")
    signal.signal(signal.SIGTERM, run.interrupt)
    scratch = Path(tempfile.mkdtemp(prefix="inrush-odbc-bench-", dir="/tmp"))
    scratch.chmod(0o755)
    pg = run.Server(run.find_pg_bin(args.pg_bin))
    maria = mariadb.Server(scratch, None, [])
    try:
        pg.start()
        maria.start()
        bench = Bench(args, inrush, scratch, odbc2parquet)
        bench.prepare()
        methods = [m for m in METHODS if m != "odbc2parquet" or odbc2parquet]
        results = []
        for target in targets(args, pg, maria, scratch):
            for m in methods:  # warm-up: caches, the drivers' libraries
                bench.measure(m, target)
            for rnd in range(args.repeat):
                k = rnd % len(methods)
                for m in methods[k:] + methods[:k]:
                    r = bench.measure(m, target)
                    r["round"] = rnd + 1
                    results.append(r)
                    what = f"failed: {r['failed']}" if "failed" in r else f"{r['seconds']:8.2f} s"
                    run.log(f"{target.name:<10} round {rnd + 1}  {m:<24} {what}")
        best = summarize(results)
        print_summary(best, args.rows)
        run.OUT_DIR.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now()
        out = run.OUT_DIR / f"odbc-{now:%Y%m%d-%H%M%S}.json"
        out.write_text(json.dumps({"rows": args.rows, "row_by_row_rows": bench.row_by_row_rows,
                                   "when": now.isoformat(timespec="seconds"), "machine": run.machine(),
                                   "odbc2parquet": odbc2parquet, "best": best, "runs": results},
                                  indent=2) + "\n")
        print(f"\nraw results: {out}")
        return 0
    finally:
        maria.stop()
        pg.close(args.keep)
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    run.entry(main)
