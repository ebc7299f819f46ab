#!/usr/bin/env python3
"""Query-ready time: from a fresh empty table to the answers of the first queries a user runs.

A load is not done when COPY returns: the table needs statistics for the planner, and its pages
need hint bits and a visibility map, set either now (VACUUM) or by whoever reads them first. So
each method here is timed from the start of the load through its after-steps and then three
first queries, each phase timed on its own:

  scan    a full scan with an aggregate (it sets hint bits on every page nobody has vacuumed)
  index   an index-only scan over a range of the first indexed column (it reads the heap for
          every page the visibility map does not mark all-visible); indexed shape only
  join    a join whose plan needs statistics (a selective filter on one side)

Shapes:
  bare     the table has no index (issue 16: lineitem SF1, where VACUUM (ANALYZE) made the
           default run slower than timescaledb-parallel-copy's plain load)
  indexed  a primary key and two secondary indexes (3 ints; 3 varchar(100)) on SqlBulkCopy

Methods (each where it applies):
  psql_copy       psql \\copy, then VACUUM (ANALYZE): the careful hand-made way
  psql_copy_bare  psql \\copy and nothing after: the first queries pay
  copy_indexed    psql \\copy into the indexed table, then VACUUM (ANALYZE)
  manual_recipe   \\copy into the bare table, ADD PRIMARY KEY, CREATE INDEX x2, VACUUM (ANALYZE)
  inrush:MODE     inrush load with its after-step MODE (`--after MODE`): vacuum-analyze,
                  analyze, freeze (`--truncate` of the empty table: one connection, COPY FREEZE,
                  ANALYZE), none; `inrush` alone is its default

Methods are interleaved within a round and the order rotates from round to round; every load is
checked (row count, valid indexes). Usage:
  python3 bench/query_ready.py [--shape bare|indexed] [--dataset sqlbulkcopy|lineitem]
                               [--rows N] [--scale SF] [--repeat R] [--methods a,b,...]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the harness: private server, children, datasets, machine facts)

INRUSH_MODES = ("vacuum-analyze", "analyze", "freeze", "none")

# The first queries, per dataset: (phase, SQL); `index` needs the indexed shape.
QUERIES = {
    "sqlbulkcopy": [
        ("scan", "SELECT count(*), sum(fieldint3) FROM {t}"),
        ("index", "SELECT count(*) FROM {t} WHERE fieldint1 BETWEEN 0 AND 100000000"),
        ("join", "SELECT count(*) FROM {t} a JOIN {t} b ON a.fieldint2 = b.fieldint1 WHERE b.fieldint3 < 1000000"),
    ],
    "lineitem": [
        ("scan", "SELECT l_returnflag, l_linestatus, sum(l_quantity), count(*) FROM {t} GROUP BY 1, 2"),
        ("join", "SELECT count(*) FROM {t} a JOIN {t} b ON a.l_orderkey = b.l_orderkey "
                 "WHERE b.l_shipdate = date '1995-03-15' AND b.l_quantity = 1"),
    ],
}

# After-steps the bench can run itself after `inrush --after none`, to try one before inrush has it.
AFTER_SQL = {
    "vacuum-unbuffered": "VACUUM (ANALYZE, BUFFER_USAGE_LIMIT 0) {t}",
    "analyze": "ANALYZE {t}",
}

INDEXES = {
    "sqlbulkcopy": [
        "ALTER TABLE {t} ADD PRIMARY KEY (fieldint1, fieldint2)",
        "CREATE INDEX {t}_ints ON {t} (fieldint1, fieldint2, fieldint3)",
        "CREATE INDEX {t}_chars ON {t} (fieldchar1, fieldchar2, fieldchar3)",
    ],
}


class QueryReady:
    def __init__(self, server: run.Server, ds: run.Dataset, inrush: Path, shape: str):
        self.server, self.ds, self.inrush, self.shape = server, ds, inrush, shape
        self.t = ds.table
        self.indexes = [s.format(t=self.t) for s in INDEXES.get(ds.name, [])] if shape == "indexed" else []
        self.queries = [(p, q.format(t=self.t)) for p, q in QUERIES[ds.name]
                        if p != "index" or self.indexes]

    def fresh(self, indexed: bool) -> None:
        ddl = ", ".join(f"{name} {type_} NOT NULL" for name, type_ in self.ds.columns)
        self.server.sql(f"DROP TABLE IF EXISTS {self.t}", f"CREATE TABLE {self.t} ({ddl})",
                        *(self.indexes if indexed else []), "CHECKPOINT")

    def copy_cmd(self) -> list[str]:
        opts = "FORMAT csv, HEADER true" if self.ds.header else "FORMAT csv"
        return self.server.psql_cmd("-c", f"\\copy {self.t} FROM '{self.ds.csv}' ({opts})")

    def timed(self, phases: dict, phase: str, cmd: list[str]) -> dict | None:
        t = time.perf_counter()
        fin = run.Child(cmd).wait()
        phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - t
        fin.check()
        return fin

    def inrush_cmd(self, mode: str | None) -> list[str]:
        cmd = [str(self.inrush), "load", str(self.ds.csv), "--to", self.server.conninfo,
               "--table", self.t, "--json", "--no-progress"]
        if self.ds.header:
            cmd.append("--header")
        if mode == "freeze":
            cmd += ["--truncate"]
        elif mode is not None:
            cmd += ["--after", mode]
        return cmd

    def measure(self, method: str) -> dict:
        phases: dict = {}
        extra: dict = {}
        psql = lambda sql: self.server.psql_cmd("-c", sql)  # noqa: E731
        if method in ("psql_copy", "psql_copy_bare", "copy_indexed"):
            self.fresh(indexed=method == "copy_indexed")
            self.timed(phases, "load", self.copy_cmd())
            if method != "psql_copy_bare":
                self.timed(phases, "after", psql(f"VACUUM (ANALYZE) {self.t}"))
        elif method == "manual_recipe":
            self.fresh(indexed=False)
            self.timed(phases, "load", self.copy_cmd())
            for s in self.indexes:
                self.timed(phases, "indexes", psql(s))
            self.timed(phases, "after", psql(f"VACUUM (ANALYZE) {self.t}"))
        else:
            # inrush[:MODE][+STEP]: STEP, an after-step from AFTER_SQL, run by psql after it.
            method_mode, _, step = method.partition("+")
            mode = method_mode.split(":", 1)[1] if ":" in method_mode else None
            self.fresh(indexed=bool(self.indexes))
            fin = self.timed(phases, "load", self.inrush_cmd(mode))
            if step:
                self.timed(phases, "after", psql(AFTER_SQL[step].format(t=self.t)))
            summary = json.loads(fin.stdout.strip().splitlines()[-1])
            extra = {"inrush_phases": summary.get("phases"), "after": summary.get("plan", {}).get("after")}
        for phase, sql in self.queries:
            self.timed(phases, phase, self.server.psql_cmd("-At", "-c", sql))
        self.check(method)
        return {"method": method, "seconds": sum(phases.values()), "phases": phases, **extra}

    def check(self, method: str) -> None:
        n = int(self.server.sql(f"SELECT count(*) FROM {self.t}"))
        valid = int(self.server.sql(
            f"SELECT count(*) FROM pg_index WHERE indrelid = '{self.t}'::regclass AND indisvalid"))
        if n != self.ds.expected_rows or valid != len(self.indexes):
            raise run.BenchError(f"{method}: {n} rows and {valid} valid indexes, expected "
                                 f"{self.ds.expected_rows} and {len(self.indexes)}")


def default_methods(shape: str) -> list[str]:
    if shape == "indexed":
        base = ["copy_indexed", "manual_recipe"]
    else:
        base = ["psql_copy", "psql_copy_bare"]
    return base + [f"inrush:{m}" for m in INRUSH_MODES]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=("bare", "indexed"), default="indexed")
    ap.add_argument("--dataset", choices=("sqlbulkcopy", "lineitem"), default="sqlbulkcopy")
    ap.add_argument("--rows", type=int, default=1_000_000, help="SqlBulkCopy rows")
    ap.add_argument("--scale", type=float, default=1.0, help="lineitem scale factor")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--methods", help="comma-separated; default: every method the shape has")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin")
    args = ap.parse_args()
    if args.shape == "indexed" and args.dataset != "sqlbulkcopy":
        ap.error("--shape indexed is defined for the sqlbulkcopy dataset")
    inrush = run.inrush_binary(args.inrush)
    methods = args.methods.split(",") if args.methods else default_methods(args.shape)
    signal.signal(signal.SIGTERM, run.interrupt)
    server = run.Server(run.find_pg_bin(args.pg_bin))
    results = []
    try:
        server.start()
        if args.dataset == "sqlbulkcopy":
            ds = run.prepare_sqlbulkcopy(args, inrush, server.scratch)
        else:
            ds = run.prepare_lineitem(args, server.scratch)
        server.give_to_server(ds.csv)
        bench = QueryReady(server, ds, inrush, args.shape)
        if ds.expected_rows is None:
            bench.fresh(indexed=False)
            run.Child(bench.copy_cmd()).wait().check()
            ds.expected_rows = int(server.sql(f"SELECT count(*) FROM {ds.table}"))
        run.log("warm-up (untimed)")
        for m in methods:
            bench.measure(m)
        for r in range(args.repeat):
            order = methods[r % len(methods):] + methods[:r % len(methods)]
            for m in order:
                res = bench.measure(m)
                res["round"] = r + 1
                results.append(res)
                shown = "  ".join(f"{p} {s:.2f}" for p, s in res["phases"].items())
                run.log(f"round {r + 1}/{args.repeat}  {m:<20} {res['seconds']:7.3f} s  ({shown})")
    finally:
        server.close()
    print_summary(results, methods, args, ds.expected_rows)
    out = run.REPO / "bench/out"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"query-ready-{args.shape}-{args.dataset}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"machine": run.machine(), "shape": args.shape, "dataset": args.dataset,
                                "rows": ds.expected_rows, "results": results}, indent=2))
    print(f"raw results: {path}")
    return 0


def print_summary(results: list[dict], methods: list[str], args, rows: int) -> None:
    """Each method's best run, with that run's phases, and the ratio to inrush's default."""
    best = {m: min((r for r in results if r["method"] == m), key=lambda r: r["seconds"]) for m in methods}
    phases = list(dict.fromkeys(p for r in best.values() for p in r["phases"]))
    print(f"\n{args.dataset}, {rows:,} rows, {args.shape} table: seconds from the load's start to the "
          f"first queries' answers (best of {args.repeat}, that run's phases)")
    print(f"  {'method':<22}{'total':>8}" + "".join(f"{p:>9}" for p in phases))
    for m in methods:
        r = best[m]
        print(f"  {m:<22}{r['seconds']:8.3f}" + "".join(f"{r['phases'].get(p, 0):9.3f}" for p in phases))
    ref = next((m for m in ("inrush", "inrush:vacuum-analyze") if m in best), None)
    if ref:
        for m in methods:
            if m != ref:
                print(f"  {m} / {ref}: {best[m]['seconds'] / best[ref]['seconds']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
