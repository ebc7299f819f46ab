#!/usr/bin/env python3
"""Benchmark inrush's SQLite target against the usual ways of loading a CSV into SQLite.

Every timed load goes into a NEW database file holding only the pre-created, typed STRICT table
(INTEGER for integer columns, REAL for numeric, TEXT for char/varchar/date; NOT NULL as in the
source DDL), made in the scratch directory next to the input files.  Methods are interleaved
within a round and the order rotates from round to round:

  sqlite3_import   the sqlite3 shell: .import --csv [--skip 1] FILE t (one transaction; it checks
                   nothing beyond what STRICT itself refuses)
  inrush_csv       inrush load FILE --to sqlite:///DB --table t (default options, so its time
                   includes the ANALYZE it runs before committing)
  inrush_parquet   inrush load FILE.parquet ... (lineitem only: the same rows as Parquet)
  executemany      Python's sqlite3 module: executemany over csv.reader rows, one transaction
                   (a typical hand-written loader)
  sqlite_utils     sqlite-utils insert DB t FILE --csv, on the first --sqlite-utils-rows rows
                   only (it is slow); its time is extrapolated linearly to the full row count

After every load the script checks the row count and a fingerprint of the table (sums of every
INTEGER column, of every REAL column in hundredths, lengths, min and max of every TEXT column,
count(DISTINCT) of the first and last TEXT column) against an untimed .import of the same rows,
and stops with an error when one differs.  Peak RSS is the loading process's own (wait4).
Raw numbers go to bench/out/sqlite-<dataset>-<date>.json.  See bench/README.md.

Standard library only (sqlite-utils, and tpchgen-cli when not on PATH, go into .venv).
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
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.dont_write_bytecode = True  # no bench/__pycache__ from the two imports below
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (children with wait4 rusage, datasets, column lists, machine facts)
import parquet  # noqa: E402  (lineitem as Parquet and CSV from tpchgen-cli)

VENV_BIN = run.REPO / ".venv" / "bin"
ALL_METHODS = ("sqlite3_import", "inrush_csv", "inrush_parquet", "executemany", "sqlite_utils")
LABELS = {"sqlite3_import": "sqlite3 .import", "inrush_csv": "inrush (csv)",
          "inrush_parquet": "inrush (parquet)", "executemany": "python executemany",
          "sqlite_utils": "sqlite-utils *"}

# The hand-written loader, run as its own process like every other method.
EXECUTEMANY_SCRIPT = r"""
import csv, sqlite3, sys
path, db, table, ncols, skip = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
conn = sqlite3.connect(db)
with open(path, newline="") as f:
    rows = csv.reader(f)
    for _ in range(skip):
        next(rows)
    with conn:  # one transaction: BEGIN before the first INSERT, COMMIT at the end
        conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * ncols)})", rows)
conn.close()
"""


def sqlite_type(pg_type: str) -> str:
    t = pg_type.lower()
    if t in ("int", "integer", "bigint", "smallint"):
        return "INTEGER"
    if t.startswith(("numeric", "decimal", "real", "double")):
        return "REAL"
    return "TEXT"  # char(n), varchar(n), date


@dataclass
class Dataset:
    name: str
    table: str
    columns: list[tuple[str, str]]  # (name, SQLite type)
    csv: Path
    header: bool
    parquet: Path | None
    subset: Path | None = None   # header + the first --sqlite-utils-rows rows, for sqlite-utils
    subset_rows: int = 0
    rows: int = 0                # learnt from the reference load
    describe: dict | None = None

    def ddl(self) -> str:
        cols = ", ".join(f"{n} {t} NOT NULL" for n, t in self.columns)
        return f"CREATE TABLE {self.table} ({cols}) STRICT"

    def fingerprint_sql(self) -> str:
        parts = ["count(*)"]
        text = [n for n, t in self.columns if t == "TEXT"]
        for n, t in self.columns:
            if t == "INTEGER":
                parts.append(f"sum({n})")
            elif t == "REAL":
                parts.append(f"sum(CAST(round({n} * 100) AS INTEGER))")
            else:
                parts += [f"sum(length({n}))", f"min({n})", f"max({n})"]
        if text:
            parts += [f"count(DISTINCT {text[0]})", f"count(DISTINCT {text[-1]})"]
        return f"SELECT {', '.join(parts)} FROM {self.table}"


# --------------------------------------------------------------------------------------------
# Tools and data
# --------------------------------------------------------------------------------------------

def venv_pip_install(package: str) -> None:
    if not (VENV_BIN / "pip").exists():
        run.run([sys.executable, "-m", "venv", str(run.REPO / ".venv")])
    run.log(f"installing {package} into .venv")
    run.run([str(VENV_BIN / "pip"), "install", "--quiet", package])


def ensure_sqlite_utils() -> str:
    exe = VENV_BIN / "sqlite-utils"
    if not exe.exists():
        venv_pip_install("sqlite-utils")
    return str(exe)


def ensure_tpchgen() -> None:
    """run.find_tpchgen looks on PATH and in ~/.cargo/bin, else builds it with cargo; the PyPI
    wheel in .venv is the same program without a build, so put .venv/bin at the end of PATH."""
    if shutil.which("tpchgen-cli") or (Path.home() / ".cargo/bin/tpchgen-cli").exists():
        return
    if not (VENV_BIN / "tpchgen-cli").exists():
        venv_pip_install("tpchgen-cli")
    os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + str(VENV_BIN)


def prepare(args, inrush: Path, scratch: Path) -> Dataset:
    if args.dataset == "sqlbulkcopy":
        ds = run.prepare_sqlbulkcopy(args, inrush, scratch)
        return Dataset(ds.name, ds.table, [(n, sqlite_type(t)) for n, t in ds.columns], ds.csv,
                       ds.header, None, describe=ds.describe)
    ensure_tpchgen()
    t = time.perf_counter()
    pq_file, csv_file = parquet.generate(args.scale, scratch)
    with csv_file.open() as f:
        header = f.readline().startswith("l_orderkey")
    run.log(f"generated lineitem SF {args.scale}: csv {csv_file.stat().st_size / 1e6:.1f} MB, "
            f"parquet {pq_file.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t:.1f} s")
    exe = shutil.which("tpchgen-cli") or str(Path.home() / ".cargo/bin/tpchgen-cli")
    return Dataset("lineitem", "lineitem", [(n, sqlite_type(t)) for n, t in run.LINEITEM_COLUMNS],
                   csv_file, header, pq_file,
                   describe={"generator": "tpchgen-cli", "scale_factor": args.scale,
                             "tpchgen_version": run.run([exe, "--version"], check=False).stdout.strip()})


def write_subset(ds: Dataset, rows: int, scratch: Path) -> None:
    """The first `rows` records with a header line (sqlite-utils takes column names from it)."""
    ds.subset = scratch / f"{ds.name}-first-{rows}.csv"
    n = 0
    with ds.csv.open(newline="") as src, ds.subset.open("w", newline="") as dst:
        reader, writer = csv.reader(src), csv.writer(dst, lineterminator="\n")
        if ds.header:
            next(reader)
        writer.writerow([name for name, _ in ds.columns])
        for record in reader:
            if n == rows:
                break
            writer.writerow(record)
            n += 1
    ds.subset_rows = n


# --------------------------------------------------------------------------------------------
# Loads
# --------------------------------------------------------------------------------------------

def timed(cmd: list[str]) -> tuple[run.Finished, float]:
    """Runs one loading process to its exit: what it did and its wall time. Interrupted (Ctrl-C,
    SIGTERM), it kills the process first, so no load goes on writing into the scratch."""
    t = time.perf_counter()
    child = run.Child(cmd)
    try:
        fin = child.wait()
    except BaseException:
        child.proc.kill()
        child.proc.wait()
        raise
    return fin, time.perf_counter() - t


class Bench:
    def __init__(self, ds: Dataset, inrush: Path, sqlite_utils: str | None, scratch: Path):
        self.ds, self.inrush, self.sqlite_utils, self.scratch = ds, inrush, sqlite_utils, scratch
        self.reference: tuple | None = None         # fingerprint of all rows
        self.subset_reference: tuple | None = None  # fingerprint of the sqlite-utils rows
        self.seq = 0

    def new_db(self, label: str) -> Path:
        """A new database file holding only the empty STRICT table."""
        self.seq += 1
        db = self.scratch / f"{self.seq:03d}-{label}.db"
        conn = sqlite3.connect(db)
        conn.execute(self.ds.ddl())
        conn.commit()
        conn.close()
        return db

    def fingerprint(self, db: Path) -> tuple:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return tuple(conn.execute(self.ds.fingerprint_sql()).fetchone())
        finally:
            conn.close()

    @staticmethod
    def remove(db: Path) -> None:
        for p in (db, Path(f"{db}-journal"), Path(f"{db}-wal"), Path(f"{db}-shm")):
            p.unlink(missing_ok=True)

    def import_cmd(self, db: Path, source: Path, skip: bool) -> list[str]:
        # -init /dev/null: no ~/.sqliterc; -bail: stop at the first error.
        skip_opt = "--skip 1 " if skip else ""
        return ["sqlite3", "-init", "/dev/null", "-batch", "-bail", str(db),
                f".import --csv {skip_opt}'{source}' {self.ds.table}"]

    def command(self, method: str, db: Path) -> list[str]:
        ds = self.ds
        if method == "sqlite3_import":
            return self.import_cmd(db, ds.csv, ds.header)
        if method in ("inrush_csv", "inrush_parquet"):
            source = ds.parquet if method == "inrush_parquet" else ds.csv
            cmd = [str(self.inrush), "load", str(source), "--to", f"sqlite://{db}", "--table", ds.table,
                   "--json", "--no-progress"]
            if method == "inrush_csv" and ds.header:
                cmd.append("--header")
            return cmd
        if method == "executemany":
            return [sys.executable, "-c", EXECUTEMANY_SCRIPT, str(ds.csv), str(db), ds.table,
                    str(len(ds.columns)), "1" if ds.header else "0"]
        if method == "sqlite_utils":
            return [self.sqlite_utils, "insert", str(db), ds.table, str(ds.subset), "--csv"]
        raise ValueError(method)

    def reference_loads(self) -> None:
        """Untimed .import of all rows (the row count and the fingerprint every load must match;
        it also brings the CSV into the page cache) and of the sqlite-utils rows."""
        db = self.new_db("reference")
        fin, seconds = timed(self.import_cmd(db, self.ds.csv, self.ds.header))
        self.check_quiet("reference .import", fin)
        self.reference = self.fingerprint(db)
        self.ds.rows = self.reference[0]
        run.log(f"reference .import: {self.ds.rows:,} rows in {seconds:.1f} s, "
                f"{db.stat().st_size / 1e6:.0f} MB database")
        self.remove(db)
        if self.ds.subset:
            db = self.new_db("reference-subset")
            self.check_quiet("reference .import (subset)", timed(self.import_cmd(db, self.ds.subset, True))[0])
            self.subset_reference = self.fingerprint(db)
            if self.subset_reference[0] != self.ds.subset_rows:
                raise run.BenchError(f"subset: {self.subset_reference[0]} rows imported, wrote {self.ds.subset_rows}")
            self.remove(db)
            run.run([self.sqlite_utils, "--version"])  # first start compiles its .pyc files
        if self.ds.parquet:
            with self.ds.parquet.open("rb") as f:  # into the page cache, as the CSV is
                while f.read(1 << 20):
                    pass

    @staticmethod
    def check_quiet(what: str, fin: run.Finished) -> None:
        """The shell reports a refused row on stderr and may still exit 0."""
        fin.check()
        if fin.stderr.strip():
            raise run.BenchError(f"{what}: {' '.join(fin.cmd)}\n{fin.stderr.strip()[:2000]}")

    def measure(self, method: str) -> dict:
        db = self.new_db(method)
        fin, seconds = timed(self.command(method, db))
        if method == "sqlite3_import":
            self.check_quiet(method, fin)
        else:
            fin.check()
        result = {"method": method, "seconds": seconds, "peak_rss_kib": fin.maxrss_kib,
                  "db_bytes": db.stat().st_size}

        expected, rows = self.reference, self.ds.rows
        if method == "sqlite_utils":
            expected, rows = self.subset_reference, self.ds.subset_rows
            factor = self.ds.rows / rows
            result.update(rows=rows, extrapolation_factor=factor, seconds_extrapolated=seconds * factor)
        else:
            result["rows"] = rows
        got = self.fingerprint(db)
        if got[0] != rows:
            raise run.BenchError(f"{method}: table holds {got[0]} rows after the load, expected {rows}")
        if got != expected:
            cols = self.ds.fingerprint_sql()
            raise run.BenchError(f"{method}: the table differs from .import's load of the same rows\n"
                                 f"  {cols}\n  .import: {expected}\n  {method}: {got}")
        if method.startswith("inrush"):
            try:
                summary = json.loads(fin.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError) as e:
                raise run.BenchError(f"inrush --json printed no JSON object: {fin.stdout!r} {fin.stderr!r}") from e
            if summary.get("rows") != rows:
                raise run.BenchError(f"{method}: inrush reports {summary.get('rows')} rows, expected {rows}")
            result.update(json_seconds=summary.get("seconds"), phases=summary.get("phases"),
                          sqlite_version=summary.get("server_version"))
        self.remove(db)
        return result


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def summarize(results: list[dict], methods: list[str], rows: int) -> dict:
    out = {}
    for m in methods:
        runs = [r for r in results if r["method"] == m]
        secs = [r["seconds"] for r in runs]
        s = {"runs": len(runs), "rows": runs[0]["rows"], "best": min(secs), "median": statistics.median(secs),
             "rows_per_second_best": runs[0]["rows"] / min(secs),
             "rows_per_second_median": runs[0]["rows"] / statistics.median(secs),
             "peak_rss_kib_max": max(r["peak_rss_kib"] for r in runs),
             "db_bytes": runs[0]["db_bytes"]}
        if m == "sqlite_utils":
            ext = [r["seconds_extrapolated"] for r in runs]
            s.update(extrapolated_to_rows=rows, best_extrapolated=min(ext), median_extrapolated=statistics.median(ext))
        out[m] = s

    def full(m: str, stat: str) -> float:
        return out[m][f"{stat}_extrapolated"] if m == "sqlite_utils" else out[m][stat]

    # How many times faster inrush is: the other method's seconds / inrush's.
    ratios = {}
    for other, name in (("sqlite3_import", ".import"), ("sqlite_utils", "sqlite-utils (extrapolated)"),
                        ("executemany", "executemany")):
        for mine in ("inrush_csv", "inrush_parquet"):
            if other in out and mine in out:
                label = "inrush" if mine == "inrush_csv" else "inrush parquet"
                ratios[f"{label} vs {name}"] = {stat: full(other, stat) / out[mine][stat] for stat in ("median", "best")}
    return {"methods": out, "ratios": ratios}


def print_summary(summary: dict, ds: Dataset, repeat: int) -> None:
    methods = summary["methods"]
    print()
    print(f"{ds.name}: {ds.rows:,} rows, {repeat} round(s); each load into a new database file with an empty "
          f"STRICT table;\nseconds are the wall time of the loading process, commit included")
    hdr = f"{'method':<22}{'best s':>10}{'median s':>10}{'rows/s (median)':>17}{'peak RSS MB':>13}{'db MB':>8}"
    print(hdr)
    print("-" * len(hdr))
    for m, s in methods.items():
        best, median = (s["best_extrapolated"], s["median_extrapolated"]) if m == "sqlite_utils" else (s["best"], s["median"])
        print(f"{LABELS[m]:<22}{best:>10.3f}{median:>10.3f}{s['rows_per_second_median']:>17,.0f}"
              f"{s['peak_rss_kib_max'] / 1024:>13.0f}{s['db_bytes'] / 1e6:>8.0f}")
    if "sqlite_utils" in methods:
        s = methods["sqlite_utils"]
        if s["rows"] < ds.rows:
            print(f"* sqlite-utils loaded only the first {s['rows']:,} rows (in {s['best']:.3f} s best, "
                  f"{s['median']:.3f} s median, which rows/s, RSS and db MB are of);\n"
                  f"  its seconds above are EXTRAPOLATED linearly to {ds.rows:,} rows")
        else:
            print(f"* sqlite-utils loaded all {s['rows']:,} rows (--sqlite-utils-rows covers them): nothing extrapolated")
    print()
    for name, r in summary["ratios"].items():
        print(f"{name:<44}{r['median']:>7.2f}x median, {r['best']:.2f}x best")
    print("(the other method's seconds / inrush's: above 1, inrush is faster)")


def versions(sqlite_utils: str | None) -> dict:
    v = {"sqlite3_shell": run.run(["sqlite3", "--version"], check=False).stdout.strip(),
         "python_sqlite3": sqlite3.sqlite_version, "python": sys.version.split()[0]}
    if sqlite_utils:
        v["sqlite_utils"] = run.run([sqlite_utils, "--version"], check=False).stdout.strip()
    return v


# --------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=("sqlbulkcopy", "lineitem"), default="sqlbulkcopy")
    ap.add_argument("--rows", type=int, default=500_000, help="rows of sqlbulkcopy (default 500,000)")
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor for lineitem (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--sqlite-utils-rows", type=int, default=100_000,
                    help="rows sqlite-utils loads, extrapolated to all (default 100,000; 0 leaves it out)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()),
                    help="where the scratch directory (inputs and databases) goes (default: /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (the input files)")
    args = ap.parse_args()
    if args.rows < 1 or args.repeat < 1 or args.sqlite_utils_rows < 0:
        ap.error("--rows and --repeat must be at least 1, --sqlite-utils-rows at least 0")
    return args


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    if not shutil.which("sqlite3"):
        raise run.BenchError("no sqlite3 shell on PATH (apt-get install sqlite3)")
    sqlite_utils = ensure_sqlite_utils() if args.sqlite_utils_rows else None
    signal.signal(signal.SIGTERM, run.interrupt)  # the same way out as Ctrl-C: the scratch goes

    scratch = Path(tempfile.mkdtemp(prefix="inrush-sqlite-bench-", dir=args.scratch))
    try:
        ds = prepare(args, inrush, scratch)
        if sqlite_utils:
            write_subset(ds, args.sqlite_utils_rows, scratch)
        bench = Bench(ds, inrush, sqlite_utils, scratch)
        bench.reference_loads()

        methods = [m for m in ALL_METHODS
                   if (m != "inrush_parquet" or ds.parquet) and (m != "sqlite_utils" or sqlite_utils)]
        results = []
        for rnd in range(args.repeat):
            k = rnd % len(methods)  # rotate, so no method is always first or always after another
            for m in methods[k:] + methods[:k]:
                r = bench.measure(m)
                r["round"] = rnd + 1
                results.append(r)
                extra = f"  ({r['rows']:,} rows)" if m == "sqlite_utils" else ""
                run.log(f"round {rnd + 1}/{args.repeat}  {m:<16} {r['seconds']:8.3f} s  "
                        f"{r['peak_rss_kib'] / 1024:6.0f} MB RSS{extra}")

        summary = summarize(results, methods, ds.rows)
        print_summary(summary, ds, args.repeat)

        now = dt.datetime.now()
        out = run.OUT_DIR / f"sqlite-{ds.name}-{now:%Y%m%d-%H%M%S}.json"
        inrush_sqlite = next((r["sqlite_version"] for r in results if r.get("sqlite_version")), None)
        run.save_results(out, {
            "dataset": {"name": ds.name, "table": ds.table, "rows": ds.rows, "ddl": ds.ddl(),
                        "csv_bytes": ds.csv.stat().st_size,
                        "parquet_bytes": ds.parquet.stat().st_size if ds.parquet else None,
                        "sqlite_utils_rows": ds.subset_rows or None, **(ds.describe or {})},
            "when": now.isoformat(timespec="seconds"),
            "settings": {"repeat": args.repeat, "sqlite_utils_rows": args.sqlite_utils_rows,
                         "inrush": str(inrush), "scratch": str(scratch)},
            "versions": {**versions(sqlite_utils), "inrush_sqlite": inrush_sqlite},
            "machine": run.machine(),
            "fingerprint": {"sql": ds.fingerprint_sql(), "all_rows": list(bench.reference),
                            "sqlite_utils_rows": list(bench.subset_reference) if bench.subset_reference else None},
            "summary": summary,
            "runs": results,
        })
        return 0
    finally:
        run.leave_scratch(scratch, args.keep)


if __name__ == "__main__":
    run.entry(main, "scratch removed")
