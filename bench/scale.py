#!/usr/bin/env python3
"""Does an inrush load scale linearly, in bounded memory?

TPC-H lineitem (tpchgen-cli's CSV, as bench/run.py makes it) at two scale factors (--scales,
default 1,10: ~6M and ~60M rows, ~0.75 and ~7.5 GB of CSV) is loaded by `inrush load` with its
default plan into a table with lineitem's 16 columns and their TPC-H types, PRIMARY KEY
(l_orderkey, l_linenumber), an index on l_shipdate and one on (l_partkey, l_suppkey), on each
engine (--engines, default pg,mariadb,sqlite):

  pg        a private PostgreSQL 18 (bench/run.py's Server: default durability, Unix socket)
  mariadb   a private MariaDB 10.11 (scripts/mariadb.sh through bench/mariadb.py's Server), with
            innodb_flush_log_at_trx_commit=1, the server's own default (mariadb.sh sets 2)
  sqlite    a database file made for each load (inrush's defaults: synchronous=FULL)

Each load goes into a table created empty just before it (untimed; PostgreSQL then takes a
CHECKPOINT and MariaDB flushes its dirty pages). The time is the wall time of the inrush process,
start to exit (so its commit, index builds and ANALYZE are in it); its peak RSS is from os.wait4
(as bench/run.py measures it). After each load the table must hold every row of the CSV: the
same count(*), sum(l_orderkey), sum(l_quantity) and sum(l_extendedprice) (exact decimals) as the
CSV, summed once per scale in one streaming pass split over the cores, and the three indexes it
was created with. --copy also times `inrush copy --tables lineitem` of the big scale's table from
the MariaDB database into a fresh PostgreSQL database, checked the same way.

Per engine the summary gives time(big) / (time(small) * rows(big)/rows(small)) (goal: at most
1.05) and inrush's peak RSS (goal: at most 200 MB). A table that misses a row, a checksum or an
index makes the script exit 1 after printing everything. Raw numbers (with inrush's --json
summaries: seconds, phases, the plan's index actions) go to --json PATH, by default
bench/out/scale-<date>.json. See bench/README.md.

Standard library only (Python 3.11; tpchgen-cli goes into .venv when it is missing).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import os
import resource
import shutil
import signal
import tempfile
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.dont_write_bytecode = True  # no bench/__pycache__ from the imports below
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (private PostgreSQL, children with wait4 rusage, lineitem, machine facts)
import mariadb  # noqa: E402  (private MariaDB, DECIMAL text to cents)
import sqlite as sqlite_bench  # noqa: E402  (tpchgen-cli into .venv, timed children)
import dbcopy  # noqa: E402  (a copied table's schema and keys, read from the catalog)
import parquet as parquet_bench  # noqa: E402  (tpchgen-cli's lineitem as Parquet)

ENGINES = ("pg", "mariadb", "sqlite")
# MariaDB last: with --copy its big table is the copy's source, and by then no load needs the CSVs.
RUN_ORDER = ("pg", "sqlite", "mariadb")
TABLE = "lineitem"
PRIMARY_KEY = ("l_orderkey", "l_linenumber")
INDEXES = (("lineitem_shipdate", ("l_shipdate",)), ("lineitem_part_supp", ("l_partkey", "l_suppkey")))
# The names of the table's indexes after a correct load: its primary key's and the two above.
INDEX_NAMES = {"pg": "lineitem_pkey", "mariadb": "PRIMARY", "sqlite": "sqlite_autoindex_lineitem_1"}
RATIO_GOAL = 1.05
RSS_GOAL_MB = 200
COPY = "copy mariadb->pg"


# --------------------------------------------------------------------------------------------
# The input and its checksums
# --------------------------------------------------------------------------------------------

def _cents(text: bytes) -> int:
    """A decimal field in hundredths, exactly: b'24386.67' -> 2438667, b'17' -> 1700."""
    if text[-3:-2] == b".":  # the usual case: two decimals
        return int(text.replace(b".", b""))
    return mariadb.cents(text.decode())


def _sums_of_range(path: str, start: int, end: int) -> tuple[int, int, int, int]:
    """Count, sum of l_orderkey, of l_quantity and of l_extendedprice (in hundredths) of the
    records that start at a byte in [start, end). The first six fields are numbers, never
    quoted, so splitting at the first six commas finds them (the comment may hold commas)."""
    n = orderkey = quantity = price = 0
    with open(path, "rb") as f:
        pos = 0
        if start > 0:  # the first record starting at or after `start`
            f.seek(start - 1)
            pos = start - 1 + len(f.readline())
        for line in f:
            if pos >= end:
                break
            pos += len(line)
            fields = line.split(b",", 6)
            if len(fields) < 7:
                if line.strip():
                    raise ValueError(f"{path}: not a lineitem record at byte {pos - len(line)}: {line[:200]!r}")
                continue
            n += 1
            orderkey += int(fields[0])
            quantity += _cents(fields[4])
            price += _cents(fields[5])
    return n, orderkey, quantity, price


def csv_sums(csv: Path, header: bool) -> tuple[tuple[int, int, int, int], float]:
    """The CSV's checksums (see _sums_of_range) and the seconds they took: one pass over the
    file, cut into byte ranges that the cores read in parallel."""
    t = time.perf_counter()
    size = csv.stat().st_size
    with csv.open("rb") as f:
        first = len(f.readline()) if header else 0
    workers = os.cpu_count() or 1
    pieces = workers * 4
    bounds = [first + (size - first) * k // pieces for k in range(pieces + 1)]
    ranges = [(str(csv), a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        parts = list(pool.map(_sums_of_range, *zip(*ranges)))
    return tuple(sum(p[i] for p in parts) for i in range(4)), time.perf_counter() - t


class Input:
    """One scale's CSV (from run.prepare_lineitem) and its checksums; with `parquet`, the same
    rows as tpchgen-cli's Parquet too, which the loads then read (checked by the CSV's sums)."""

    def __init__(self, scale: float, scratch: Path, parquet: bool = False):
        self.scale = scale
        self.dir = scratch / f"sf{scale:g}"
        self.dir.mkdir()
        ds = run.prepare_lineitem(SimpleNamespace(scale=scale), self.dir)
        self.csv, self.header, self.describe = ds.csv, ds.header, ds.describe
        self.csv.chmod(0o644)
        self.bytes = self.csv.stat().st_size
        self.sums, self.sum_seconds = csv_sums(self.csv, self.header)
        self.rows = self.sums[0]
        self.parquet = parquet_bench.tpchgen(scale, "parquet", self.dir / "parquet") if parquet else None
        if self.parquet:
            self.parquet.chmod(0o644)
            run.log(f"SF {scale:g}: Parquet of {self.parquet.stat().st_size / 1e6:.0f} MB")
        run.log(f"SF {scale:g}: checksums of {self.rows:,} records ({self.bytes / 1e6:.0f} MB) in "
                f"{self.sum_seconds:.1f} s ({self.bytes / 1e6 / self.sum_seconds:.0f} MB/s)")

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Engines: the table, how to empty it, and what it holds after a load
# --------------------------------------------------------------------------------------------

def columns(engine: str) -> list[tuple[str, str]]:
    """lineitem's columns with their TPC-H types as the engine spells them (run.py's are
    PostgreSQL's; MariaDB's spelling is also what SQLite reads for its affinities, and inrush
    checks DATE columns' values there)."""
    if engine == "pg":
        return run.LINEITEM_COLUMNS
    return [(n, mariadb.mariadb_type(t)) for n, t in run.LINEITEM_COLUMNS]


def table_ddl(engine: str) -> list[str]:
    cols = ", ".join(f"{n} {t} NOT NULL" for n, t in columns(engine))
    create = f"CREATE TABLE {TABLE} ({cols}, PRIMARY KEY ({', '.join(PRIMARY_KEY)}))"
    if engine == "mariadb":
        create += " ENGINE=InnoDB"
    return [create] + [f"CREATE INDEX {name} ON {TABLE} ({', '.join(cols_)})" for name, cols_ in INDEXES]


def sums_sql(engine: str, table: str = TABLE) -> str:
    if engine == "sqlite":  # DECIMAL affinity is NUMERIC: 17 is stored as an integer, 24386.67 as a double
        dec = "sum(CAST(round({} * 100) AS INTEGER))"
    else:
        dec = "sum({})"
    return (f"SELECT count(*), sum(l_orderkey), {dec.format('l_quantity')}, {dec.format('l_extendedprice')} "
            f"FROM {table}")


def parse_sums(engine: str, row: list[str]) -> tuple[int, ...]:
    def number(text: str) -> int:
        return 0 if text in ("", "NULL") else int(text)
    n, orderkey, quantity, price = row
    if engine == "sqlite":
        return number(n), number(orderkey), number(quantity), number(price)
    return number(n), number(orderkey), mariadb.cents(quantity or "0"), mariadb.cents(price or "0")


def relocated(server: run.Server, where: Path) -> run.Server:
    """run.Server makes its directory as /tmp/inrush-bench-*; move it (not started yet) into
    this run's scratch, so one rmtree removes everything this script made."""
    old = server.root
    os.rename(old, where)
    server.root = where
    server.data, server.sock, server.scratch = (where / d for d in ("data", "sock", "scratch"))
    server.logfile = where / "server.log"
    server.conninfo = server.conninfo.replace(str(old), str(where))
    return server


class Engine:
    """What the run asks of each engine: rows of a query, its table's index names (INDEX_SQL)."""
    INDEX_SQL = ""

    def rows(self, sql: str) -> list[list[str]]:
        raise NotImplementedError

    def index_names(self) -> list[str]:
        return [r[0] for r in self.rows(self.INDEX_SQL)]


class Pg(Engine):
    name = "pg"
    INDEX_SQL = (f"SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                 f"WHERE i.indrelid = '{TABLE}'::regclass AND i.indisvalid AND i.indisready ORDER BY 1")

    def __init__(self, pg_bin: Path, scratch: Path, dirname: str = "pg", settings: list[str] = ()):
        self.server = relocated(run.Server(pg_bin), scratch / dirname)
        self.settings = [s.split("=", 1) for s in settings]

    def start(self) -> None:
        run.log(f"starting PostgreSQL in {self.server.root}")
        self.server.start()
        if self.settings:
            self.server.sql(*(f"ALTER SYSTEM SET {k} = '{v}'" for k, v in self.settings), "SELECT pg_reload_conf()")

    @property
    def url(self) -> str:
        return self.server.conninfo

    def reset(self) -> None:
        self.server.sql(f"DROP TABLE IF EXISTS {TABLE}", *table_ddl("pg"), "CHECKPOINT")

    def rows(self, sql: str) -> list[list[str]]:
        return [line.split("|") for line in self.server.sql(sql).splitlines()]

    def table_bytes(self) -> int:
        return int(self.server.sql(f"SELECT pg_total_relation_size('{TABLE}')"))

    def facts(self) -> dict:
        facts = run.server_facts(self.server)
        for k, _ in self.settings:
            facts[k] = self.server.sql(f"SHOW {k}")
        return facts

    def close(self, keep: bool) -> None:
        self.server.close(keep)


class Maria(Engine):
    name = "mariadb"
    INDEX_SQL = (f"SELECT DISTINCT index_name FROM information_schema.statistics "
                 f"WHERE table_schema = DATABASE() AND table_name = '{TABLE}' ORDER BY 1")

    def __init__(self, scratch: Path, options: list[str] = ()):
        # The server's own default durability: mariadb.sh sets innodb_flush_log_at_trx_commit=2
        # for its throwaway test servers; a later option wins.
        self.server = mariadb.Server(scratch, None, ["--innodb-flush-log-at-trx-commit=1", *options])

    def start(self) -> None:
        run.log(f"starting MariaDB in {self.server.data} on port {self.server.port}")
        self.server.start()

    @property
    def url(self) -> str:
        return self.server.url

    def reset(self) -> None:
        self.server.sql(f"DROP TABLE IF EXISTS {TABLE}; " + "; ".join(table_ddl("mariadb")))
        self.server.quiesce()

    def rows(self, sql: str) -> list[list[str]]:
        return self.server.sql(sql)

    def table_bytes(self) -> int:
        database = self.server.url.rsplit("/", 1)[1]
        ibd = self.server.data / database / f"{TABLE}.ibd"
        return ibd.stat().st_size if ibd.exists() else 0

    def facts(self) -> dict:
        return self.server.facts()

    def close(self, keep: bool) -> None:
        self.server.stop()
        run.leave_scratch(self.server.root, keep)


class Sqlite(Engine):
    name = "sqlite"
    INDEX_SQL = f"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '{TABLE}' ORDER BY 1"

    def __init__(self, scratch: Path):
        self.dir = scratch / "sqlite"
        self.db = self.dir / f"{TABLE}.db"

    def start(self) -> None:
        if not shutil.which("sqlite3"):
            raise run.BenchError("no sqlite3 shell on PATH (apt-get install sqlite3)")
        self.dir.mkdir()

    @property
    def url(self) -> str:
        return f"sqlite://{self.db}"

    def shell(self, sql: str, *opts: str) -> str:
        return run.run(["sqlite3", "-init", "/dev/null", "-batch", "-bail", *opts, str(self.db), sql]).stdout

    def reset(self) -> None:
        for p in (self.db, Path(f"{self.db}-journal"), Path(f"{self.db}-wal"), Path(f"{self.db}-shm")):
            p.unlink(missing_ok=True)
        self.shell("; ".join(table_ddl("sqlite")) + ";")

    def rows(self, sql: str) -> list[list[str]]:
        return [line.split("|") for line in self.shell(sql, "-readonly", "-separator", "|").splitlines()]

    def table_bytes(self) -> int:
        return self.db.stat().st_size

    def facts(self) -> dict:
        return {"sqlite3_shell": run.run(["sqlite3", "--version"], check=False).stdout.strip()}

    def close(self, keep: bool) -> None:
        run.leave_scratch(self.dir, keep)


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------

def inrush_json(fin: run.Finished, what: str) -> dict:
    try:
        return json.loads(fin.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        raise run.BenchError(f"{what}: inrush --json printed no JSON object: "
                             f"{fin.stdout[-2000:]!r} {fin.stderr[-2000:]!r}") from e


def index_actions(summary: dict) -> list[list[str]]:
    """The plan's [index, action] pairs (keep, rebuild, ...), from a load's summary."""
    return [[i.get("name"), i.get("action")] for i in (summary.get("plan") or {}).get("indexes") or []]


def timed_run(cmd: list[str], what: str) -> tuple[run.Finished, float, dict]:
    run.log(f"{what}: {' '.join(cmd)}")
    fin, seconds = sqlite_bench.timed(cmd)
    if fin.returncode != 0:
        raise run.BenchError(f"{what}: inrush failed ({fin.returncode})\n{fin.stdout[-3000:]}{fin.stderr[-5000:]}")
    return fin, seconds, inrush_json(fin, what)


def measure_load(engine, inp: Input, inrush: Path) -> dict:
    engine.reset()
    source = inp.parquet or inp.csv
    cmd = [str(inrush), "load", str(source), "--to", engine.url, "--table", TABLE, "--json", "--no-progress"]
    if inp.header and not inp.parquet:
        cmd.append("--header")  # tpchgen-cli's CSV: comma-delimited (inrush's default), a header line
    fin, seconds, summary = timed_run(cmd, f"{engine.name} SF {inp.scale:g}")
    got = parse_sums(engine.name, engine.rows(sums_sql(engine.name))[0])
    indexes = sorted(engine.index_names())  # in Python: MariaDB's ORDER BY ignores case
    want_indexes = sorted([INDEX_NAMES[engine.name], *(n for n, _ in INDEXES)])
    problems = []
    if summary.get("rows") != inp.rows or summary.get("rows_rejected"):
        problems.append(f"inrush reports {summary.get('rows')} rows ({summary.get('rows_rejected')} rejected), "
                        f"the CSV has {inp.rows}")
    if got != inp.sums:
        problems.append(f"[count, sum(l_orderkey), sum(l_quantity), sum(l_extendedprice) in cents]: "
                        f"table {list(got)}, CSV {list(inp.sums)}")
    if indexes != want_indexes:
        problems.append(f"indexes after the load {indexes}, created with {want_indexes}")
    result = result_of(engine.name, inp, fin, seconds, summary, got, problems)
    result.update(indexes=indexes, index_actions=index_actions(summary),
                  after=(summary.get("plan") or {}).get("after"), table_bytes=engine.table_bytes())
    report(result)
    return result


def result_of(engine: str, inp: Input, fin: run.Finished, seconds: float, summary: dict,
              got: tuple, problems: list[str]) -> dict:
    return {"engine": engine, "scale": inp.scale, "rows": inp.rows, "csv_bytes": inp.bytes,
            "source": "parquet" if inp.parquet else "csv",
            "seconds": seconds, "rows_per_second": inp.rows / seconds,
            "peak_rss_kib": fin.maxrss_kib, "client_cpu_seconds": fin.cpu_seconds,
            "json_seconds": summary.get("seconds"), "phases": summary.get("phases"),
            "connections": summary.get("connections"), "workers": summary.get("workers"),
            "table_sums": list(got), "csv_sums": list(inp.sums),
            "complete": not problems, "problems": problems, "command": fin.cmd, "summary": summary}


def report(r: dict) -> None:
    run.log(f"{r['engine']} SF {r['scale']:g}: {r['seconds']:.2f} s, {r['rows_per_second']:,.0f} rows/s, "
            f"peak RSS {r['peak_rss_kib'] / 1024:.0f} MB, "
            + ("every row there" if r["complete"] else "INCOMPLETE: " + "; ".join(r["problems"])))


def measure_copy(maria: Maria, pg_bin: Path, scratch: Path, inp: Input, inrush: Path, keep: bool) -> dict:
    """inrush copy of the big scale's lineitem (MariaDB's, just loaded and checked) into a new
    database on a new private PostgreSQL."""
    target = Pg(pg_bin, scratch, "pg-copy")
    try:
        target.start()
        target.server.sql("CREATE DATABASE copy_target", "CHECKPOINT")
        maria.server.quiesce()
        psql = run.Psql(target.server.bin, target.url.replace("dbname=postgres", "dbname=copy_target"))
        cmd = [str(inrush), "copy", "--from", maria.url, "--to", psql.conninfo, "--tables", TABLE,
               "--json", "--no-progress"]
        fin, seconds, summary = timed_run(cmd, f"{COPY} SF {inp.scale:g}")
        schema = dbcopy.find_schemas(psql, [TABLE])[TABLE]
        got = parse_sums("pg", psql.sql(sums_sql("pg", f"{schema}.{TABLE}")).split("|"))
        structure = dbcopy.structure_pg(psql, schema, TABLE)
        want = {"primary_key": list(PRIMARY_KEY),
                "indexes": sorted([list(PRIMARY_KEY)] + [list(c) for _, c in INDEXES])}
        problems = []
        if summary.get("rows") != inp.rows or summary.get("rows_rejected"):
            problems.append(f"inrush reports {summary.get('rows')} rows ({summary.get('rows_rejected')} "
                            f"rejected), the CSV has {inp.rows}")
        if got != inp.sums:
            problems.append(f"[count, sum(l_orderkey), sum(l_quantity), sum(l_extendedprice) in cents]: "
                            f"table {list(got)}, CSV {list(inp.sums)}")
        if {k: structure[k] for k in want} != want:
            problems.append(f"keys after the copy {structure}, the source's {want}")
        result = result_of(COPY, inp, fin, seconds, summary, got, problems)
        table = next((t for t in summary.get("tables") or [] if t.get("table") == TABLE), {})
        result["phases"] = {"load": table.get("load_seconds", 0),  # the load summary's names
                            "rebuild_indexes": table.get("build_seconds", 0) + table.get("keys_seconds", 0),
                            "maintain": summary.get("tail_seconds", 0)}
        result.update(structure=structure, schema=schema,
                      table_bytes=int(psql.sql(f"SELECT pg_total_relation_size('{schema}.{TABLE}')")),
                      target_server=target.facts())
        report(result)
        return result
    finally:
        target.close(keep)


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def plan_text(r: dict) -> str:
    counts: dict[str, int] = {}
    for _, action in r.get("index_actions") or []:
        counts[action] = counts.get(action, 0) + 1
    return ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) or "-"


def summarize(results: list[dict], scales: list[float]) -> dict:
    small, big = scales
    out = {}
    for engine in dict.fromkeys(r["engine"] for r in results if r["engine"] != COPY):
        by = {r["scale"]: r for r in results if r["engine"] == engine}
        if small not in by or big not in by:
            continue
        s, b = by[small], by[big]
        factor = b["rows"] / s["rows"]
        ratio = b["seconds"] / (s["seconds"] * factor)
        rss_mb = max(s["peak_rss_kib"], b["peak_rss_kib"]) / 1024
        out[engine] = {"ratio": ratio, "rows_factor": factor, "ratio_goal_at_most": RATIO_GOAL,
                       "ratio_met": ratio <= RATIO_GOAL, "peak_rss_mb": rss_mb,
                       "peak_rss_mb_each": {f"{small:g}": s["peak_rss_kib"] / 1024, f"{big:g}": b["peak_rss_kib"] / 1024},
                       "rss_goal_at_most_mb": RSS_GOAL_MB, "rss_met": rss_mb <= RSS_GOAL_MB}
    return out


def print_summary(results: list[dict], summary: dict, inputs: dict[float, Input], scales: list[float],
                  machine: dict, own_rss_kib: int) -> None:
    print()
    print("TPC-H lineitem: " + ", ".join(f"SF {s:g} ({inputs[s].rows:,} rows, {inputs[s].bytes / 1e6:,.0f} MB CSV)"
                                         for s in scales))
    print(f"inrush load with its default plan into lineitem with PRIMARY KEY ({', '.join(PRIMARY_KEY)}) and "
          f"indexes on\n(l_shipdate) and (l_partkey, l_suppkey), created empty before each load; seconds: "
          f"wall time of inrush, start to exit")
    hdr = (f"{'engine':<18}{'SF':>6}{'rows':>13}{'seconds':>10}{'rows/s':>12}{'peak RSS MB':>13}"
           f"{'all rows':>10}  {'load s':>8}{'index s':>9}{'after s':>9}  indexes (plan)")
    print()
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        p = r.get("phases") or {}
        index_s = p.get("drop_indexes", 0) + p.get("rebuild_indexes", 0)
        plan = plan_text(r) if r["engine"] != COPY else "copy: keys and indexes after the rows"
        print(f"{r['engine']:<18}{r['scale']:>6g}{r['rows']:>13,}{r['seconds']:>10.2f}{r['rows_per_second']:>12,.0f}"
              f"{r['peak_rss_kib'] / 1024:>13.0f}{'yes' if r['complete'] else 'NO':>10}  "
              + (f"{p.get('load', 0):>8.2f}{index_s:>9.2f}{p.get('maintain', 0):>9.2f}" if p else f"{'-':>8}{'-':>9}{'-':>9}")
              + f"  {plan}")
    small, big = scales
    print()
    for engine, s in summary.items():
        print(f"{engine:<8} time(SF {big:g}) / (time(SF {small:g}) x {s['rows_factor']:.3f}) = {s['ratio']:.3f}"
              f"  (goal: at most {RATIO_GOAL}: {'met' if s['ratio_met'] else 'NOT met'});  peak RSS "
              f"{s['peak_rss_mb']:.0f} MB  (goal: at most {RSS_GOAL_MB} MB: {'met' if s['rss_met'] else 'NOT met'})")
    print(f"(x {small:g}->{big:g}: the ratio of the row counts; peak RSS: the larger of the two loads'. "
          f"wait4's peak RSS of a child\n cannot fall below this script's own, {own_rss_kib / 1024:.0f} MB)")
    for r in results:
        if not r["complete"]:
            print(f"INCOMPLETE {r['engine']} SF {r['scale']:g}: " + "; ".join(r["problems"]))
    print()
    print(f"machine: {json.dumps(machine)}")


# --------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="1,10", help="two TPC-H scale factors, small,big (default 1,10)")
    ap.add_argument("--engines", default=",".join(ENGINES), help="any of pg,mariadb,sqlite (default all three)")
    ap.add_argument("--copy", action="store_true",
                    help="also time inrush copy --tables lineitem of the big scale from MariaDB into a fresh "
                         "PostgreSQL database (needs mariadb in --engines)")
    ap.add_argument("--parquet", action="store_true",
                    help="load tpchgen-cli's Parquet of the same rows instead of the CSV")
    ap.add_argument("--json", type=Path, metavar="PATH",
                    help="where the raw results go (default bench/out/scale-<date>.json)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin", help="directory with initdb, pg_ctl, psql, postgres (default: the wheel in .venv)")
    ap.add_argument("--pg-set", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of the loads' PostgreSQL server (ALTER SYSTEM; a reloadable one), "
                         "e.g. max_wal_size=64GB; repeatable")
    ap.add_argument("--mariadb-set", action="append", default=[], metavar="--OPTION=VALUE",
                    help="a startup option of the loads' MariaDB server, after the defaults, "
                         "e.g. --mariadb-set=--innodb-sort-buffer-size=64M; repeatable")
    ap.add_argument("--keep", action="store_true",
                    help="keep the scratch directory /tmp/inrush-scale-* (CSVs, databases, logs)")
    args = ap.parse_args()
    if any("=" not in s for s in args.pg_set):
        ap.error("--pg-set takes NAME=VALUE")
    if any(not s.startswith("--") for s in args.mariadb_set):
        ap.error("--mariadb-set takes a server option as mariadbd reads it: --name=value")
    try:
        args.scales = sorted(float(s) for s in args.scales.split(","))
    except ValueError:
        ap.error(f"--scales: not numbers: {args.scales}")
    if len(args.scales) != 2 or args.scales[0] <= 0 or args.scales[0] == args.scales[1]:
        ap.error("--scales takes two different scale factors above 0, e.g. 1,10")
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown or not args.engines:
        ap.error(f"--engines: unknown {unknown}; choose from {','.join(ENGINES)}")
    if args.copy and "mariadb" not in args.engines:
        ap.error("--copy copies MariaDB's table: put mariadb in --engines")
    return args


def disk_estimate(scales: list[float], copy: bool, keep: bool) -> float:
    """Bytes this run needs at its peak, roughly: the CSVs (~0.75 GB per SF) and one engine's
    table of the big scale (1.1 to 1.5 GB per SF with its indexes) with room for PostgreSQL's
    WAL; for the copy, MariaDB's table and PostgreSQL's copy of it (the CSVs are gone by then,
    unless --keep)."""
    small, big = scales
    csvs = 0.75e9 * (small + big)
    loads = csvs + 1.5e9 * big + 3e9
    return max(loads, 2 * 1.5e9 * big + 3e9 + (csvs if keep else 0)) if copy else loads


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    dbcopy.warn_if_stale(inrush)
    pg_bin = run.find_pg_bin(args.pg_bin) if ("pg" in args.engines or args.copy) else None
    sqlite_bench.ensure_tpchgen()
    signal.signal(signal.SIGTERM, run.interrupt)  # the same way out as Ctrl-C: servers stop, scratch goes

    need, free = disk_estimate(args.scales, args.copy, args.keep), shutil.disk_usage("/tmp").free
    run.log(f"disk: about {need / 1e9:.1f} GB needed at the peak, {free / 1e9:.1f} GB free in /tmp")
    if need > free:
        run.log("warning: that may not fit")

    t_start = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="inrush-scale-", dir="/tmp"))
    scratch.chmod(0o755)  # the servers' user enters it to reach their own directories
    engines = []
    inputs: dict[float, Input] = {}
    try:
        for s in args.scales:
            inputs[s] = Input(s, scratch, args.parquet)
        results, facts = [], {}
        order = [e for e in RUN_ORDER if e in args.engines]
        for k, name in enumerate(order):
            engine = {"pg": lambda: Pg(pg_bin, scratch, settings=args.pg_set), "mariadb": lambda: Maria(scratch, args.mariadb_set),
                      "sqlite": lambda: Sqlite(scratch)}[name]()
            engines.append(engine)
            engine.start()
            facts[name] = engine.facts()
            for s in args.scales:
                results.append(measure_load(engine, inputs[s], inrush))
            if k == len(order) - 1 and not args.keep:  # no load needs the CSVs any more
                for inp in inputs.values():
                    inp.remove()
            if args.copy and name == "mariadb":
                results.append(measure_copy(engine, pg_bin, scratch, inputs[args.scales[1]], inrush, args.keep))
            engine.close(args.keep)
            engines.remove(engine)

        summary = summarize(results, args.scales)
        own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        machine = run.machine()
        print_summary(results, summary, inputs, args.scales, machine, own_rss)

        now = dt.datetime.now()
        out = args.json or run.OUT_DIR / f"scale-{now:%Y%m%d-%H%M%S}.json"
        run.save_results(out, {
            "dataset": {"name": "lineitem", "scales": {
                f"{s:g}": {"rows": i.rows, "csv_bytes": i.bytes, "header": i.header, **i.describe,
                           "csv_sums": list(i.sums), "csv_sums_seconds": i.sum_seconds}
                for s, i in inputs.items()}},
            "table": {e: table_ddl(e) for e in ENGINES},
            "checksum_sql": {e: sums_sql(e) for e in ENGINES},
            "when": now.isoformat(timespec="seconds"),
            "settings": {"scales": args.scales, "engines": args.engines, "copy": args.copy,
                         "parquet": args.parquet,
                         "inrush": str(inrush), "inrush_version": run.run([str(inrush), "--version"],
                                                                          check=False).stdout.strip(),
                         "pg_bin": str(pg_bin) if pg_bin else None, "scratch": str(scratch)},
            "machine": machine,
            "servers": facts,
            "script_peak_rss_kib": own_rss,
            "total_seconds": time.perf_counter() - t_start,
            "summary": summary,
            "runs": results,
        })
        return 0 if all(r["complete"] for r in results) else 1
    finally:
        for e in engines:
            e.close(args.keep)
        run.leave_scratch(scratch, args.keep)


if __name__ == "__main__":
    run.entry(main, "servers stopped and scratch removed")
