#!/usr/bin/env python3
"""Connections chosen during the load against every fixed number, with the server on one core
and then on two (issue 16, item 3: the adaptive choice within 10% of the best fixed setting).

Starts a private PostgreSQL (bench/run.py's, default durability), writes the SqlBulkCopy rows
(`inrush gen`, seed 42), and for each CPU setting of the server pins the postmaster and every
process it has started with `taskset` (backends forked later inherit it; the client is left on
every core). Then it loads the rows with `--connections 1` up to `--max-fixed` and with the
default (chosen during the load), each after a TRUNCATE and a CHECKPOINT, checked by count, in
interleaved rounds whose order rotates after an untimed warm-up. Per setting it prints each
method's best and median wall time, what the default chose and why, and the ratio of its
median to the best fixed median.

Usage: python3 bench/adapt.py [--rows N] [--repeat R] [--cpus 0 0,1] [--max-fixed 4]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import partition  # noqa: E402  (timed runs, rotating rounds, stats, the output file)
import run  # noqa: E402  (the private server, children, datasets)

ADAPTIVE = "adaptive"
GOAL = 1.10


class Bench:
    def __init__(self, server: run.Server, inrush: Path, csv: Path, rows: int):
        self.server, self.inrush, self.csv, self.rows = server, inrush, csv, rows

    def pin(self, cpus: str) -> None:
        """The server's processes, present and future, on `cpus` only."""
        postmaster = (self.server.data / "postmaster.pid").read_text().split()[0]
        children = run.run(["pgrep", "-P", postmaster], check=False).stdout.split()
        for pid in [postmaster, *children]:
            run.run(["taskset", "-a", "-p", "-c", cpus, pid])

    def measure(self, method: str) -> dict:
        self.server.sql("TRUNCATE t", "CHECKPOINT")
        cmd = [str(self.inrush), "load", str(self.csv), "--to", self.server.conninfo, "--table", "t",
               "--no-analyze", "--no-progress", "--json"]
        if method != ADAPTIVE:
            cmd += ["--connections", method.removeprefix("fixed_")]
        seconds, fin = partition.timed(cmd)
        n = int(self.server.sql("SELECT count(*) FROM t"))
        if n != self.rows:
            raise run.BenchError(f"{method}: {n} rows in the table, expected {self.rows}")
        summary = json.loads(fin.stdout.strip().splitlines()[-1])
        r = partition.result(method, seconds, fin, "")
        r["parallelism"] = summary["parallelism"]
        return r


def summarize(results: list[dict], methods: tuple[str, ...]) -> dict:
    s = partition.stats(results, methods)
    fixed = {m: v for m, v in s["median_seconds"].items() if m != ADAPTIVE}
    best = min(fixed, key=fixed.get)
    chose = [r["parallelism"]["chosen"] for r in results if r["method"] == ADAPTIVE]
    return {**s, "best_fixed": best, "adaptive_over_best_fixed_median": s["median_seconds"][ADAPTIVE] / fixed[best],
            "adaptive_over_best_fixed_best": s["best_seconds"][ADAPTIVE] / min(s["best_seconds"][m] for m in fixed),
            "adaptive_chose": chose}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4_000_000, help="SqlBulkCopy rows (default 4,000,000)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds per CPU setting (default 3)")
    ap.add_argument("--cpus", nargs="+", default=["0", "0,1"], help="taskset CPU lists for the server")
    ap.add_argument("--max-fixed", type=int, default=4, help="fixed settings 1..N (default 4)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin", help="directory with initdb, pg_ctl, psql, postgres")
    args = ap.parse_args()
    inrush = run.inrush_binary(args.inrush)
    methods = tuple(f"fixed_{n}" for n in range(1, args.max_fixed + 1)) + (ADAPTIVE,)
    signal.signal(signal.SIGTERM, run.interrupt)
    server = run.Server(run.find_pg_bin(args.pg_bin))
    try:
        server.start()
        csv = server.scratch / "sqlbulkcopy.csv"
        run.run([str(inrush), "gen", "-o", str(csv), "--rows", str(args.rows), "--seed", "42"])
        columns = ", ".join(f"{name} {type_}" for name, type_ in run.SQLBULKCOPY_COLUMNS)
        server.sql(f"CREATE TABLE t ({columns})")
        bench = Bench(server, inrush, csv, args.rows)
        record: dict = {"rows": args.rows, "repeat": args.repeat, "settings": {}}
        for cpus in args.cpus:
            run.log(f"server on CPUs {cpus}")
            bench.pin(cpus)
            results = partition.rounds(bench.measure, methods, args.repeat)
            record["settings"][cpus] = {"summary": summarize(results, methods), "runs": results}
        print(f"\n{args.rows:,} SqlBulkCopy rows; wall seconds of the load, commit included")
        for cpus, got in record["settings"].items():
            s = got["summary"]
            print(f"\nserver on CPUs {cpus}:")
            partition.print_stats(s, methods)
            reasons = [r["parallelism"]["reason"] for r in got["runs"] if r["method"] == ADAPTIVE]
            print(f"  adaptive chose {s['adaptive_chose']}; last reason: {reasons[-1]}")
            print(f"  adaptive / best fixed ({s['best_fixed']}): {s['adaptive_over_best_fixed_median']:.3f} median, "
                  f"{s['adaptive_over_best_fixed_best']:.3f} best (goal at most {GOAL:.2f})")
        partition.write_out("adapt", {**record, "server": run.server_facts(server)})
        return 0
    finally:
        server.close()


if __name__ == "__main__":
    run.entry(main)
