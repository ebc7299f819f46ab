#!/usr/bin/env python3
"""Benchmark inrush's MariaDB target against LOAD DATA [LOCAL] INFILE.

Starts a private MariaDB 10.11 (scripts/mariadb.sh) in a scratch directory under /tmp on a free
port, generates the rows of --dataset and loads them in interleaved rounds (the order rotates
from round to round).  sqlbulkcopy (the default: `inrush gen --header`, 3 INT + 3 VARCHAR(100))
runs two scenarios:

  plain    InnoDB table of the six columns, no key:
             one_local_stream   mariadb client: LOAD DATA LOCAL INFILE of the whole CSV
             two_local_streams  the CSV cut in two at a line boundary beforehand (untimed), two
                                clients in parallel, each loading its half
             server_ceiling     two server-side LOAD DATA INFILE (not LOCAL) of the halves in
                                parallel: no client sends anything, the server parses the text
             inrush             inrush load (default options)
             inrush_c2          inrush load --connections 2
  indexed  the same columns plus id INT AUTO_INCREMENT PRIMARY KEY and KEY (fieldint2),
           KEY (fieldchar1), empty at the start:
             load_data_indexed  one LOAD DATA LOCAL stream into the indexed table
             load_then_alter    one LOAD DATA LOCAL stream into the table without the two
                                secondary keys, then ALTER TABLE ... ADD INDEX, ADD INDEX (one
                                client process, timed together)
             inrush             inrush load (default: drops the secondary keys, adds them back
                                in one ALTER TABLE)

lineitem (--dataset lineitem [--scale 1]: TPC-H lineitem from tpchgen-cli, as CSV and as
Parquet; BIGINT keys, DECIMAL(15,2), CHAR(n), DATE, VARCHAR(44)) runs the plain scenario only:
one_local_stream, two_local_streams, server_ceiling and inrush from the CSV as above, and
             inrush_parquet     inrush load of the Parquet file of the same rows (default options)

Each load goes into a table dropped and created again just before it, after InnoDB has flushed
every dirty page (both untimed).  The time is the wall time of the loading process(es), start to
exit; the mariadb client runs in autocommit mode, so each LOAD DATA commits before it exits, and
inrush commits before it exits; both are in the time.  inrush's default ANALYZE TABLE is in its
time too (LOAD DATA runs none).  Every method runs once untimed first (warm-up).

After every load the table's COUNT(*), SUM of each INT, BIGINT and DECIMAL column and
SUM(CRC32(CONCAT(the other columns: CHAR, VARCHAR, DATE))) must equal the same computed from the
CSV in Python, streamed (so equal across methods, and the Parquet rows equal the CSV's), and in
the indexed scenario SHOW CREATE TABLE must read as the freshly created indexed table's (both
secondary keys and the primary key there; AUTO_INCREMENT=n aside); otherwise the script stops
with an error.  Peak RSS is the loading process's own, from GNU time when the machine has it
(see timed(); for two processes the larger).  CPU: the server's (mariadbd's user + system time,
all threads, across the load) and the loading processes' (wait4), steadier than wall time when
other work shares the cores; the ratios are also given in CPU (server + client).
Raw numbers go to bench/out/mariadb-<dataset>-<date>.json.  See bench/README.md.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (children with wait4 rusage, column list, machine facts)
import parquet  # noqa: E402  (lineitem as Parquet and CSV from tpchgen-cli)

MARIADB_SH = run.REPO / "scripts" / "mariadb.sh"
MARIADB_ROOT = run.REPO / ".mariadb"

SECONDARY = [("k_fieldint2", "fieldint2"), ("k_fieldchar1", "fieldchar1")]  # sqlbulkcopy's
INDEXED_TABLE = "sqlbulkcopy_indexed"

# Per dataset: its columns (PostgreSQL's types in run.py, mapped by mariadb_type) and its
# scenarios' methods.  lineitem has no indexed scenario (the issue asks for SqlBulkCopy's).
DATASETS = {"sqlbulkcopy": run.SQLBULKCOPY_COLUMNS, "lineitem": run.LINEITEM_COLUMNS}
SCENARIOS = {
    "sqlbulkcopy": {
        "plain": ("one_local_stream", "two_local_streams", "server_ceiling", "inrush", "inrush_c2"),
        "indexed": ("load_data_indexed", "load_then_alter", "inrush"),
    },
    "lineitem": {
        "plain": ("one_local_stream", "two_local_streams", "server_ceiling", "inrush", "inrush_parquet"),
    },
}
LABELS = {"one_local_stream": "one LOCAL stream", "two_local_streams": "two LOCAL streams",
          "server_ceiling": "server ceiling (x2)", "inrush": "inrush",
          "inrush_c2": "inrush --connections 2", "inrush_parquet": "inrush from Parquet",
          "inrush_before": "inrush, --before build", "inrush_c2_before": "inrush --connections 2, --before build",
          "load_data_indexed": "LOAD DATA, indexed", "load_then_alter": "LOAD DATA + ALTER"}


def mariadb_type(pg_type: str) -> str:
    """run.py's PostgreSQL column type as MariaDB spells it (numeric(p,s) is DECIMAL(p,s))."""
    return re.sub(r"^numeric", "decimal", pg_type).upper()


def cents(text: str) -> int:
    """A DECIMAL(p,2) value in hundredths, exactly (no float): '24710.35', '17', '-0.5'."""
    neg = text.startswith("-")
    whole, _, frac = text.lstrip("+-").partition(".")
    if len(frac) > 2:
        raise ValueError(f"more than 2 decimals: {text!r}")
    v = int(whole or "0") * 100 + int((frac + "00")[:2])
    return -v if neg else v


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------------
# The private server
# --------------------------------------------------------------------------------------------

class Server:
    """A throwaway MariaDB from scripts/mariadb.sh in a fresh directory:
         ROOT/db     its data directory (socket, error.log, client.cnf; owned by the server user)
         ROOT/files  the CSV and its halves (755, files 644: the server, running as another user
                     when we are root, reads the halves itself for LOAD DATA INFILE)
    The path stays short: the socket lives in ROOT/db."""

    def __init__(self, parent: Path, port: int | None, options: list[str]):
        self.root = Path(tempfile.mkdtemp(prefix="inrush-mbench-", dir=parent))
        self.data, self.files = self.root / "db", self.root / "files"
        self.files.mkdir()
        for d in (self.root, self.files):
            d.chmod(0o755)
        self.port = port or free_port()
        self.options = options
        self.url = ""
        self.started = False

    def start(self) -> None:
        self.started = True  # from here on, always try to stop it (stop is idempotent)
        p = run.run(["bash", str(MARIADB_SH), "start", str(self.data), str(self.port), *self.options])
        self.url = p.stdout.strip().splitlines()[-1]
        lib = (MARIADB_ROOT / ".ld_library_path").read_text().strip()
        # The client binary itself (what `mariadb.sh client` execs), without the wrapper's bash.
        self.client = ["env", f"LD_LIBRARY_PATH={lib}", str(MARIADB_ROOT / "usr/bin/mariadb"),
                       f"--defaults-file={self.data / 'client.cnf'}"]

    def stop(self) -> None:
        if self.started:
            p = run.run(["bash", str(MARIADB_SH), "stop", str(self.data)], check=False)
            if p.returncode != 0:
                run.log(f"warning: mariadb.sh stop failed: {p.stderr.strip()}")
            self.started = False

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far (user + system, every thread): a load's share is
        the difference across it, steadier than wall time when other work shares the cores."""
        pid = (self.data / "mariadbd.pid").read_text().strip()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def client_cmd(self, sql: str) -> list[str]:
        """A client that runs `sql` and prints the warnings of each statement (there should be
        none: the loads check that it printed nothing)."""
        return [*self.client, "--batch", "--show-warnings", "-e", sql]

    def sql(self, sql: str) -> list[list[str]]:
        out = run.run([*self.client, "--batch", "--skip-column-names", "-e", sql]).stdout
        return [line.split("\t") for line in out.splitlines()]

    def value(self, sql: str) -> str:
        return self.sql(sql)[0][0]

    def quiesce(self, timeout: float = 120.0) -> None:
        """Flush every dirty page of the buffer pool, so no load pays for writing out the pages of
        the one before (PostgreSQL's CHECKPOINT in run.py): innodb_max_dirty_pages_pct = 0 until
        none is left, then back to what it was."""
        pct = self.value("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
        self.sql("SET GLOBAL innodb_max_dirty_pages_pct = 0")
        try:
            deadline = time.monotonic() + timeout
            while True:
                dirty = int(self.sql("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")[0][1])
                if dirty == 0:
                    return
                if time.monotonic() > deadline:
                    run.log(f"warning: {dirty} dirty pages left after {timeout:.0f} s of flushing")
                    return
                time.sleep(0.1)
        finally:
            self.sql(f"SET GLOBAL innodb_max_dirty_pages_pct = {pct}")

    def facts(self) -> dict:
        names = ("version", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit",
                 "innodb_log_file_size", "innodb_doublewrite", "innodb_autoinc_lock_mode", "innodb_sort_buffer_size",
                 "innodb_max_dirty_pages_pct", "log_bin", "local_infile", "secure_file_priv",
                 "sql_mode", "character_set_server", "max_allowed_packet")
        row = self.sql("SELECT " + ", ".join(f"@@GLOBAL.{n}" for n in names))[0]
        return dict(zip(names, row))


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

class Data:
    """The rows every method loads: a CSV with a header line (sqlbulkcopy from `inrush gen`,
    lineitem from tpchgen-cli, which also writes the same rows as Parquet), its two halves, and
    the fingerprint of its records."""

    def __init__(self, args, inrush: Path, files: Path):
        self.name = args.dataset
        self.table = args.dataset
        self.columns = [(n, mariadb_type(t)) for n, t in DATASETS[args.dataset]]
        self.parquet: Path | None = None
        t = time.perf_counter()
        if args.dataset == "sqlbulkcopy":
            # The header names the columns, so inrush leaves the indexed table's id to the server.
            self.csv = files / "sqlbulkcopy.csv"
            run.run([str(inrush), "gen", "sqlbulkcopy", "-o", str(self.csv), "--rows", str(args.rows),
                     "--seed", "42", "--header"])
            self.describe = {"generator": "inrush gen --header", "seed": 42}
        else:
            self.parquet, self.csv = parquet.generate(args.scale, files)
            exe = run.find_tpchgen()
            self.describe = {"generator": "tpchgen-cli", "scale_factor": args.scale,
                             "tpchgen_version": run.run([exe, "--version"], check=False).stdout.strip(),
                             "parquet_bytes": self.parquet.stat().st_size}
        self.csv.chmod(0o644)
        made = f"{self.csv.stat().st_size / 1e6:.1f} MB CSV"
        if self.parquet:
            made += f", {self.parquet.stat().st_size / 1e6:.1f} MB Parquet"
        run.log(f"generated {self.name} ({made}) in {time.perf_counter() - t:.1f} s")
        self.halves = self.split(files)
        t = time.perf_counter()
        self.fingerprint = self.csv_fingerprint()
        self.rows = self.fingerprint[0]
        run.log(f"fingerprint of the CSV's {self.rows:,} records in {time.perf_counter() - t:.1f} s")
        if args.dataset == "sqlbulkcopy" and self.rows != args.rows:
            raise run.BenchError(f"the CSV holds {self.rows} records, expected {args.rows}")

    def names(self, kind: str) -> list[str]:
        """The columns summed as integers ("int"), summed in hundredths ("decimal"), or part of
        the text whose CRC32 is summed ("text": CHAR, VARCHAR, and DATE as 'YYYY-MM-DD')."""
        def kind_of(t: str) -> str:
            return "int" if t in ("INT", "BIGINT") else "decimal" if t.startswith("DECIMAL") else "text"
        return [n for n, t in self.columns if kind_of(t) == kind]

    def column_list(self) -> str:
        return "(" + ", ".join(n for n, _ in self.columns) + ")"

    def fingerprint_sql(self, table: str) -> str:
        sums = [f"SUM({c})" for c in self.names("int") + self.names("decimal")]
        return (f"SELECT COUNT(*), {', '.join(sums)}, "
                f"SUM(CRC32(CONCAT({', '.join(self.names('text'))}))) FROM {table}")

    def parse_fingerprint(self, row: list[str]) -> tuple[int, ...]:
        """fingerprint_sql's row as numbers (the DECIMAL sums in hundredths)."""
        n_int = 1 + len(self.names("int"))
        n_dec = len(self.names("decimal"))
        return (*(int(v) for v in row[:n_int]), *(cents(v) for v in row[n_int:n_int + n_dec]),
                int(row[-1]))

    def split(self, files: Path) -> list[Path]:
        """The records without the header, cut at the first line end after the middle byte (no
        field of these rows holds a line break, so a line is a record).  Streamed line by line:
        this process's own peak RSS must stay small (see timed())."""
        halves = [files / "half_0.csv", files / "half_1.csv"]
        self.half_rows = [0, 0]
        with self.csv.open("rb") as src:
            pos = len(src.readline())  # where the line read next starts
            middle = pos + (self.csv.stat().st_size - pos) // 2
            with halves[0].open("wb") as a, halves[1].open("wb") as b:
                for line in src:
                    k = 0 if pos <= middle else 1
                    (a, b)[k].write(line)
                    self.half_rows[k] += 1
                    pos += len(line)
        for h in halves:
            h.chmod(0o644)
        return halves

    def csv_fingerprint(self) -> tuple[int, ...]:
        """fingerprint_sql's numbers computed from the CSV itself, streamed (CRC32 of the UTF-8
        bytes; CHAR values without trailing spaces, as MariaDB returns them)."""
        names = [name for name, _ in self.columns]
        ints = [names.index(c) for c in self.names("int")]
        decimals = [names.index(c) for c in self.names("decimal")]
        texts = [names.index(c) for c in self.names("text")]
        chars = {names.index(n) for n, t in self.columns if t.startswith("CHAR")}
        n, crc = 0, 0
        sums = [0] * (len(ints) + len(decimals))
        with self.csv.open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            if next(reader) != names:
                raise run.BenchError(f"{self.csv}: the header is not {','.join(names)}")
            for rec in reader:
                n += 1
                for k, i in enumerate(ints):
                    sums[k] += int(rec[i])
                for k, i in enumerate(decimals, len(ints)):
                    sums[k] += cents(rec[i])
                crc += zlib.crc32("".join(rec[i].rstrip(" ") if i in chars else rec[i]
                                          for i in texts).encode())
        return (n, *sums, crc)


# --------------------------------------------------------------------------------------------
# Loads
# --------------------------------------------------------------------------------------------

def load_sql(data: Data, path: Path, table: str, *, local: bool, header: bool) -> str:
    return (f"LOAD DATA {'LOCAL ' if local else ''}INFILE '{path}' INTO TABLE {table} "
            f"CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' "
            f"LINES TERMINATED BY '\\n' {'IGNORE 1 LINES ' if header else ''}{data.column_list()}")


def gnu_time() -> str | None:
    """GNU time, when the machine has it (Debian's package `time`)."""
    exe = shutil.which("time", path="/usr/bin:/bin")
    if exe and "GNU" in run.run([exe, "--version"], check=False).stdout:
        return exe
    return None


GNU_TIME = gnu_time()


def kill_tree(pid: int) -> None:
    """SIGKILL to a process and, first, to its children (GNU time does not pass signals on)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for c in children:
        kill_tree(int(c))
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def timed(cmds: list[list[str]]) -> tuple[list[run.Finished], float]:
    """Runs the loading processes side by side to the exit of the last: what each did, and the
    wall time from starting the first.  Interrupted (Ctrl-C, SIGTERM), it kills them first.

    Peak RSS: a child's wait4 ru_maxrss is at least the peak RSS of the process that spawned it
    (exec folds the old address space's high-water mark into it, and Python's subprocess spawns
    with vfork, whose old address space is ours), so run.Child's figure has this script's own
    peak as a floor.  Each command therefore runs under GNU time (-f %M), which forks it from a
    1-2 MB process; without GNU time the wait4 figure is kept (and marked in the output)."""
    rss_files: list[Path] = []
    wrapped = []
    for c in cmds:
        if GNU_TIME:
            fd, name = tempfile.mkstemp(prefix="inrush-mbench-rss-")
            os.close(fd)
            rss_files.append(Path(name))
            c = [GNU_TIME, "-f", "%M", "-o", name, *c]
        wrapped.append(c)
    children: list[run.Child] = []
    try:
        t = time.perf_counter()
        for c in wrapped:
            children.append(run.Child(c))
        finished = [c.wait() for c in children]  # all of them, before looking at any failure
        seconds = time.perf_counter() - t
        for k, f in enumerate(finished):
            f.cmd = cmds[k]
            if rss_files:
                # The last line; a failed command's report starts with "Command exited with ...".
                lines = rss_files[k].read_text().split()
                f.maxrss_kib = int(lines[-1]) if lines and lines[-1].isdigit() else 0
    except BaseException:
        for c in children:
            if c.proc.returncode is None:
                kill_tree(c.proc.pid)
                try:
                    os.waitpid(c.proc.pid, 0)
                except ChildProcessError:
                    pass
        raise
    finally:
        for r in rss_files:
            r.unlink(missing_ok=True)
    return finished, seconds


def columns_ddl(data: Data) -> str:
    return ", ".join(f"{n} {t} NOT NULL" for n, t in data.columns)


def plain_ddl(data: Data) -> str:
    return f"CREATE TABLE {data.table} ({columns_ddl(data)}) ENGINE=InnoDB"


def indexed_ddl(data: Data, table: str, secondary: bool) -> str:
    cols = columns_ddl(data)
    keys = "".join(f", KEY {k} ({c})" for k, c in SECONDARY) if secondary else ""
    return f"CREATE TABLE {table} (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, {cols}{keys}) ENGINE=InnoDB"


def add_indexes_sql(table: str) -> str:
    return f"ALTER TABLE {table} " + ", ".join(f"ADD INDEX {k} ({c})" for k, c in SECONDARY)


class Bench:
    def __init__(self, server: Server, data: Data, inrush: Path, before: Path | None = None):
        self.server, self.data, self.inrush, self.before = server, data, inrush, before
        self.indexed_reference = ""  # SHOW CREATE TABLE of the indexed table as created

    def show_create(self, table: str) -> str:
        return re.sub(r" AUTO_INCREMENT=\d+", "", self.server.sql(f"SHOW CREATE TABLE {table}")[0][1])

    def reset(self, scenario: str, method: str) -> tuple[str, float]:
        """The method's table, dropped and made again (empty), then every dirty page flushed;
        returns the table and the seconds the flush took."""
        d = self.data
        if scenario == "plain":
            table, ddl = d.table, plain_ddl(d)
        else:
            table = INDEXED_TABLE
            ddl = indexed_ddl(d, table, secondary=method != "load_then_alter")
        if scenario == "indexed" and not self.indexed_reference:
            self.server.sql(f"DROP TABLE IF EXISTS {table}; {indexed_ddl(d, table, secondary=True)}")
            self.indexed_reference = self.show_create(table)
        self.server.sql(f"DROP TABLE IF EXISTS {table}; {ddl}")
        t = time.perf_counter()
        self.server.quiesce()
        return table, time.perf_counter() - t

    def commands(self, scenario: str, method: str, table: str) -> list[list[str]]:
        s, d = self.server, self.data
        if method in ("one_local_stream", "load_data_indexed"):
            return [s.client_cmd(load_sql(d, d.csv, table, local=True, header=True))]
        if method == "load_then_alter":
            return [s.client_cmd(load_sql(d, d.csv, table, local=True, header=True) + "; "
                                 + add_indexes_sql(table))]
        if method == "two_local_streams":
            return [s.client_cmd(load_sql(d, h, table, local=True, header=False)) for h in d.halves]
        if method == "server_ceiling":
            return [s.client_cmd(load_sql(d, h, table, local=False, header=False)) for h in d.halves]
        if method == "inrush_parquet":
            return [[str(self.inrush), "load", str(d.parquet), "--to", s.url, "--table", table,
                     "--json", "--no-progress"]]
        if method in ("inrush", "inrush_c2", "inrush_before", "inrush_c2_before"):
            binary = self.before if method.endswith("_before") else self.inrush
            cmd = [str(binary), "load", str(d.csv), "--header", "--to", s.url, "--table", table,
                   "--json", "--no-progress"]
            return [cmd + (["--connections", "2"] if method.startswith("inrush_c2") else [])]
        raise ValueError(method)

    def measure(self, scenario: str, method: str) -> dict:
        table, flush_seconds = self.reset(scenario, method)
        server_cpu = self.server.cpu_seconds()
        finished, seconds = timed(self.commands(scenario, method, table))
        server_cpu = self.server.cpu_seconds() - server_cpu
        for f in finished:
            f.check()
        result = {"scenario": scenario, "method": method, "seconds": seconds,
                  "server_cpu_seconds": server_cpu,
                  "client_cpu_seconds": sum(f.cpu_seconds for f in finished),
                  "peak_rss_kib": max(f.maxrss_kib for f in finished),
                  "peak_rss_kib_each": [f.maxrss_kib for f in finished],
                  "flush_before_seconds": flush_seconds}
        if method.startswith("inrush"):
            result.update(self.inrush_summary(method, finished[0]))
        else:
            for f in finished:  # --show-warnings: a clean load prints nothing at all
                if f.stdout.strip() or f.stderr.strip():
                    raise run.BenchError(f"{scenario}/{method}: the client printed\n"
                                         f"{(f.stdout + f.stderr).strip()[:2000]}")
        self.verify(scenario, method, table)
        return result

    def inrush_summary(self, method: str, fin: run.Finished) -> dict:
        try:
            summary = json.loads(fin.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as e:
            raise run.BenchError(f"inrush --json printed no JSON object: {fin.stdout!r} {fin.stderr!r}") from e
        if summary.get("rows") != self.data.rows or summary.get("rows_rejected"):
            raise run.BenchError(f"{method}: inrush reports {summary.get('rows')} rows "
                                 f"({summary.get('rows_rejected')} rejected), expected {self.data.rows}")
        return {"json_seconds": summary.get("seconds"), "connections": summary.get("connections"),
                "workers": summary.get("workers"), "phases": summary.get("phases"),
                "notes": summary.get("notes"), "server_version": summary.get("server_version")}

    def verify(self, scenario: str, method: str, table: str) -> None:
        sql = self.data.fingerprint_sql(table)
        got = self.data.parse_fingerprint(self.server.sql(sql)[0])
        want = self.data.fingerprint
        if got[0] != want[0]:
            raise run.BenchError(f"{scenario}/{method}: table holds {got[0]} rows after the load, expected {want[0]}")
        if got != want:
            raise run.BenchError(f"{scenario}/{method}: the table's fingerprint differs from the CSV's\n"
                                 f"  {sql}\n  CSV:   {want}\n  table: {got}")
        if scenario == "indexed":
            shown = self.show_create(table)
            if shown != self.indexed_reference:
                raise run.BenchError(f"{scenario}/{method}: SHOW CREATE TABLE after the load differs from "
                                     f"the table as created\n  created: {self.indexed_reference}\n  now:     {shown}")


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

RATIOS = {"plain": (("one_local_stream", "one stream"), ("two_local_streams", "two streams"),
                    ("server_ceiling", "server ceiling")),
          "indexed": (("load_data_indexed", "LOAD DATA indexed"), ("load_then_alter", "LOAD DATA + ALTER"))}


def summarize(results: list[dict], scenarios: dict[str, tuple[str, ...]], rows: int) -> dict:
    out: dict = {}
    for sc, names in scenarios.items():
        methods = {}
        for m in names:
            runs = [r for r in results if r["scenario"] == sc and r["method"] == m]
            secs = [r["seconds"] for r in runs]
            s = {"runs": len(runs), "best": min(secs), "median": statistics.median(secs),
                 "rows_per_second_best": rows / min(secs),
                 "rows_per_second_median": rows / statistics.median(secs),
                 "peak_rss_kib_max": max(r["peak_rss_kib"] for r in runs),
                 "server_cpu_median": statistics.median(r["server_cpu_seconds"] for r in runs),
                 "client_cpu_median": statistics.median(r["client_cpu_seconds"] for r in runs),
                 "cpu_median": statistics.median(r["server_cpu_seconds"] + r["client_cpu_seconds"]
                                                 for r in runs)}
            if runs[0].get("phases"):
                s["phases_median"] = {k: statistics.median(r["phases"][k] for r in runs)
                                      for k in runs[0]["phases"]}
                s["connections"], s["workers"] = runs[0]["connections"], runs[0]["workers"]
            methods[m] = s
        # How many times faster inrush is: the other method's seconds / inrush's.
        ratios = {}
        for mine in (m for m in names if m.startswith("inrush")):
            for other, name in RATIOS[sc]:
                ratios[f"{LABELS[mine]} vs {name}"] = {
                    stat: methods[other][stat] / methods[mine][stat] for stat in ("median", "best", "cpu_median")}
        out[sc] = {"methods": methods, "ratios": ratios}
    return out


def print_summary(summary: dict, data: Data, repeat: int) -> None:
    print()
    files = f"{data.csv.stat().st_size / 1e6:.0f} MB CSV"
    if data.parquet:
        files += f", {data.parquet.stat().st_size / 1e6:.0f} MB Parquet"
    print(f"{data.name}: {data.rows:,} rows ({files}), {repeat} round(s); "
          f"seconds are the wall time of the loading\nprocess(es), commit included (the mariadb client "
          f"autocommits each LOAD DATA; inrush's time includes its ANALYZE TABLE)")
    titles = {"plain": "plain InnoDB table, no key",
              "indexed": "indexed: id AUTO_INCREMENT PRIMARY KEY, KEY (fieldint2), KEY (fieldchar1)"}
    for sc, s in summary.items():
        print()
        print(titles[sc])
        hdr = (f"{'method':<26}{'best s':>9}{'median s':>10}{'rows/s (median)':>17}{'peak RSS MB':>13}"
               f"{'server CPU s':>14}{'client CPU s':>14}")
        print(hdr)
        print("-" * len(hdr))
        for m, r in s["methods"].items():
            print(f"{LABELS[m]:<26}{r['best']:>9.3f}{r['median']:>10.3f}{r['rows_per_second_median']:>17,.0f}"
                  f"{r['peak_rss_kib_max'] / 1024:>13.0f}{r['server_cpu_median']:>14.2f}"
                  f"{r['client_cpu_median']:>14.2f}")
        for m, r in s["methods"].items():
            if "phases_median" in r:
                p = r["phases_median"]
                print(f"  {LABELS[m]}: {r['connections']} connections, {r['workers']} workers; median phases: "
                      f"load {p.get('load', 0):.3f} s, drop indexes {p.get('drop_indexes', 0):.3f} s, "
                      f"rebuild {p.get('rebuild_indexes', 0):.3f} s, analyze {p.get('maintain', 0):.3f} s")
        for name, r in s["ratios"].items():
            print(f"{name:<50}{r['median']:>7.2f}x median, {r['best']:.2f}x best, "
                  f"{r['cpu_median']:.2f}x CPU (median)")
    if not GNU_TIME:
        print("(no GNU time here: peak RSS is wait4's, which is never below this script's own peak)")
    print("(the other method's seconds / inrush's: above 1, inrush is faster; against the server "
          "ceiling, 1.0 means at it;\n CPU: server + client CPU seconds of the load, medians; "
          "server CPU counts all of mariadbd's threads)")


def versions(server: Server, inrush: Path) -> dict:
    return {"server": server.value("SELECT VERSION()"),
            "client": run.run([*server.client, "--version"], check=False).stdout.strip(),
            "inrush": run.run([str(inrush), "--version"], check=False).stdout.strip()}


# --------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=tuple(DATASETS), default="sqlbulkcopy",
                    help="sqlbulkcopy (inrush gen; default) or TPC-H lineitem (tpchgen-cli, CSV and Parquet)")
    ap.add_argument("--rows", type=int, default=500_000, help="rows of sqlbulkcopy (default 500,000)")
    ap.add_argument("--scale", type=float, default=1.0, help="lineitem's TPC-H scale factor (default 1: 6M rows)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--scenario", choices=("both", "plain", "indexed"), default="both")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--before", type=Path,
                    help="another inrush binary (an earlier build) measured in the same rounds (plain scenario)")
    ap.add_argument("--port", type=int, help="the server's TCP port (default: a free one)")
    ap.add_argument("--server-option", action="append", default=[], metavar="OPT",
                    help="a mariadbd option for the private server, e.g. --innodb-autoinc-lock-mode=2 "
                         "(repeatable; the settings each load ran with are printed)")
    ap.add_argument("--scratch", type=Path, default=Path("/tmp"),
                    help="where the scratch directory goes (default /tmp; keep the path short, the "
                         "server's socket lives in it, and the server user must be able to enter it)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (data, CSV, error log)")
    args = ap.parse_args()
    if args.rows < 2 or args.repeat < 1 or args.scale <= 0:
        ap.error("--rows must be at least 2, --repeat at least 1 and --scale above 0")
    if args.scenario not in ("both", *SCENARIOS[args.dataset]):
        ap.error(f"--dataset {args.dataset} has no {args.scenario} scenario")
    return args


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    scenarios = {sc: methods for sc, methods in SCENARIOS[args.dataset].items()
                 if args.scenario in ("both", sc)}
    before = run.inrush_binary(args.before) if args.before else None
    if before and "plain" in scenarios:
        scenarios["plain"] += ("inrush_before", "inrush_c2_before")
    signal.signal(signal.SIGTERM, run.interrupt)  # the same way out as Ctrl-C: the server stops

    server = Server(args.scratch, args.port, args.server_option)
    try:
        run.log(f"starting MariaDB in {server.data} on port {server.port}")
        server.start()
        facts = server.facts()
        run.log(f"{server.url}  ({facts['version']}, innodb_autoinc_lock_mode="
                f"{facts['innodb_autoinc_lock_mode']})")
        data = Data(args, inrush, server.files)
        run.log(f"halves for two streams: {data.half_rows[0]:,} + {data.half_rows[1]:,} rows")
        bench = Bench(server, data, inrush, before)

        # Untimed warm-up of every method (each verified like the timed loads): the first loads
        # of a new server grow its files and fill its caches, which would favour whatever ran later.
        run.log("warm-up (untimed)")
        for sc in scenarios:
            for m in scenarios[sc]:
                bench.measure(sc, m)

        results = []
        for rnd in range(args.repeat):
            for sc in scenarios:
                methods = scenarios[sc]
                k = rnd % len(methods)  # rotate, so no method is always first or always after another
                for m in methods[k:] + methods[:k]:
                    r = bench.measure(sc, m)
                    r["round"] = rnd + 1
                    results.append(r)
                    run.log(f"round {rnd + 1}/{args.repeat}  {sc:<8} {m:<18} {r['seconds']:8.3f} s  "
                            f"{r['peak_rss_kib'] / 1024:6.0f} MB RSS")

        summary = summarize(results, scenarios, data.rows)
        print_summary(summary, data, args.repeat)

        run.OUT_DIR.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now()
        out = run.OUT_DIR / f"mariadb-{data.name}-{now:%Y%m%d-%H%M%S}.json"
        tables = {"plain": plain_ddl(data)}
        if "indexed" in scenarios:
            tables.update(indexed=indexed_ddl(data, INDEXED_TABLE, True),
                          indexed_without_secondary=indexed_ddl(data, INDEXED_TABLE, False),
                          alter=add_indexes_sql(INDEXED_TABLE))
        out.write_text(json.dumps({
            "dataset": {"name": data.name, "rows": data.rows, "csv_bytes": data.csv.stat().st_size,
                        **data.describe, "half_rows": data.half_rows},
            "tables": tables,
            "statements": {"local": load_sql(data, data.csv, "T", local=True, header=True),
                           "server_side": load_sql(data, data.halves[0], "T", local=False, header=False)},
            "when": now.isoformat(timespec="seconds"),
            "settings": {"repeat": args.repeat, "scenarios": list(scenarios), "inrush": str(inrush),
                         "peak_rss_from": "GNU time %M" if GNU_TIME else "wait4 (floor: this script's peak)"},
            "versions": versions(server, inrush),
            "machine": run.machine(),
            "server": facts,
            "fingerprint": {"sql": data.fingerprint_sql("T"), "csv": list(data.fingerprint)},
            "summary": summary,
            "runs": results,
        }, indent=2) + "\n")
        print(f"\nraw results: {out}")
        return 0
    finally:
        server.stop()
        if args.keep:
            run.log(f"kept {server.root}")
        else:
            shutil.rmtree(server.root, ignore_errors=True)


if __name__ == "__main__":
    run.entry(main)
