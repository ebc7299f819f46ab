#!/usr/bin/env python3
"""An inrush load into PostgreSQL beside a live OLTP workload (pgbench): what the load costs the
workload (throughput, latency, lock waits) and what the workload costs the load.

Starts a private PostgreSQL 18 (bench/run.py's, default durability), creates pgbench's tables
(`pgbench -i -s 10`) and the loaded table

    orders(id bigint PRIMARY KEY, customer int NOT NULL, amount numeric(12,2), note text)
    + CREATE INDEX orders_customer_idx ON orders (customer)

prefilled with 200,000 rows (vacuumed and analyzed), and writes a CSV of --rows new rows (ids
above the prefill).
pgbench runs two scripts, weighted 5 and 5: oltp.sql (the built-in TPC-B-like transaction,
written out) and reads.sql (a lookup of orders by primary key, then a count by customer, which
needs the secondary index). Phases:

  baseline        pgbench alone for --seconds
  <plan> alone    the load with nothing else running (inrush's time without the workload)
  <plan> live     pgbench starts; ~3 s later the same load starts; pgbench runs on for 3 s
                  after inrush exits

for each plan of --plans: `default` (inrush decides: here it drops the index on customer for
the load and rebuilds it after) and `keep-indexes` (`--keep-indexes`). orders is dropped and
made again before every load, and every load is checked (row count, both indexes valid).

--loads N runs N inrush processes at once in each load phase, each loading its Nth of the rows
(a CSV of its own, ids apart): all into orders, or with --own-tables each into a table of its
own (orders, orders_2, ... orders_N, each made like orders; pgbench reads orders only). The
load's time is then the first start to the last exit.

Latencies come from pgbench's per-transaction logs (-l), cut to exact windows: the baseline's
--seconds, the whole load (inrush's start to its exit), and each of inrush's own phases (from
its --json summary). Lock waits come from pg_stat_activity / pg_locks, sampled every 100 ms
during each pgbench run: who waited (application, statement), on whom, for which lock, and
for how long (pg_locks.waitstart). pgbench ends each run through its own -T timer signal
(SIGALRM), so its report and logs are complete.

Exit status 1 when pgbench reports a failed transaction or an aborted client, inrush fails, or
a load leaves the wrong row count; the table is printed first.

Usage: python3 bench/live.py [--rows N] [--seconds S] [--clients C] [--plans default,keep-indexes]
                             [--loads N [--own-tables]] [--inrush PATH] [--json PATH] [--keep]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the harness: private server, children, machine facts)

SCALE = 10              # pgbench -i -s
PREFILL = 200_000       # rows in orders before each load
CUSTOMERS = 1000
SCRIPTS = ("oltp", "reads")  # pgbench's script_no 0 and 1, in -f order
PLANS = {"default": [], "keep-indexes": ["--keep-indexes"]}
LEAD_IN = 2.0           # seconds after pgbench's first progress line (1 s into the run) before the load
TAIL = 3.0              # seconds pgbench runs on after inrush exits
SAMPLE_EVERY = 0.1      # lock-wait sampling interval, seconds

# The built-in tpcb-like transaction (`pgbench --show-script=tpcb-like`), written out.
OLTP_SQL = """\
\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"""

READS_SQL = f"""\
\\set id random(1, {PREFILL})
SELECT amount FROM orders WHERE id = :id;
\\set c random(1, {CUSTOMERS})
SELECT count(*) FROM orders WHERE customer = :c;
"""

# One line per sample: the time and every session waiting on a heavyweight lock, with the
# sessions blocking it and the lock it wants (waitstart: when that wait began). jsonb, whose text
# form has no line breaks (json_agg's has).
SAMPLER_SQL = r"""SELECT jsonb_build_object('t', extract(epoch FROM clock_timestamp()),
                          'w', coalesce(jsonb_agg(w), '[]'))
FROM (SELECT a.pid, a.application_name AS app, a.query,
        (SELECT json_agg(json_build_object('app', b.application_name, 'query', b.query))
           FROM pg_stat_activity b WHERE b.pid = ANY (pg_blocking_pids(a.pid))) AS blockers,
        (SELECT json_agg(json_build_object('locktype', l.locktype, 'relation', l.relation::regclass::text,
                                           'mode', l.mode, 'since', extract(epoch FROM l.waitstart)))
           FROM pg_locks l WHERE l.pid = a.pid AND NOT l.granted) AS wants
      FROM pg_stat_activity a
      WHERE a.wait_event_type = 'Lock' AND a.pid <> pg_backend_pid()) w
"""


def create_orders_sql(tables: list[str]) -> list[str]:
    """Each of `tables` (orders, and with --own-tables its likes) as every load finds it: prefilled, indexed, vacuumed and
    analyzed (as autovacuum would soon leave it: counts by customer are index-only scans), then
    a checkpoint so no load pays for flushing the previous one's pages."""
    sql = []
    for t in tables:
        sql += [
            f"DROP TABLE IF EXISTS {t}",
            f"CREATE TABLE {t} (id bigint PRIMARY KEY, customer int NOT NULL, amount numeric(12,2), note text)",
            f"CREATE INDEX {t}_customer_idx ON {t} (customer)",
            f"INSERT INTO {t} SELECT g, 1 + (g * 7919) % {CUSTOMERS}, (g % 100000) / 100.0, 'order ' || g "
            f"FROM generate_series(1, {PREFILL}) g",
            f"VACUUM (ANALYZE) {t}",
        ]
    return sql + ["CHECKPOINT"]


def load_parts(directory: Path, args) -> list[tuple[str, Path, int, int]]:
    """(table, CSV in `directory`, first id, rows) of each of the --loads that run at once: the
    ids apart and above the prefill, the --rows shared out as evenly as they go."""
    out, first = [], PREFILL + 1
    for k in range(args.loads):
        n = args.rows // args.loads + (1 if k < args.rows % args.loads else 0)
        table = f"orders_{k + 1}" if k > 0 and args.own_tables else "orders"
        out.append((table, directory / f"orders_{k + 1}.csv", first, n))
        first += n
    return out


def write_parts(shares: list[tuple[str, Path, int, int]]) -> None:
    t = time.perf_counter()
    for _, csv, first, n in shares:
        write_csv(csv, n, first)
    size = sum(share[1].stat().st_size for share in shares)
    run.log(f"wrote {sum(share[3] for share in shares):,} rows in {len(shares)} file(s) ({size / 1e6:.1f} MB) "
            f"in {time.perf_counter() - t:.1f} s")


def expected_rows(shares: list[tuple[str, Path, int, int]]) -> dict[str, int]:
    """Each loaded table's rows after its loads: the prefill and theirs."""
    out: dict[str, int] = {}
    for table, _, _, n in shares:
        out[table] = out.get(table, PREFILL) + n
    return out


def into_words(args) -> str:
    """Where the report's title says the rows went."""
    if args.loads == 1:
        return "orders"
    if args.own_tables:
        return f"{args.loads} tables made like orders by {args.loads} loads at once"
    return f"orders by {args.loads} loads at once"


def run_loads(inrush: Path, to: str, shares: list, plan: str, label: str, problems: list[str]) -> dict:
    """The inrush loads of `shares` (load_parts') into `to`, started together: the first start and last
    exit (epoch), and each one's --json summary (`summary` too when there is one load); each
    load that fails is one of `problems`."""
    t0 = time.time()
    children = [run.Child([str(inrush), "load", str(csv), "--to", to, "--table", table,
                           "--json", "--no-progress", *PLANS[plan]])
                for table, csv, _, _ in shares]
    finished = [c.wait() for c in children]
    t1 = time.time()
    res = {"plan": plan, "t0": t0, "t1": t1, "seconds": t1 - t0,
           "returncode": max((f.returncode for f in finished), key=abs),
           "cpu_seconds": sum(f.cpu_seconds for f in finished),
           "peak_rss_kib": max(f.maxrss_kib for f in finished), "summary": None, "summaries": []}
    for k, fin in enumerate(finished):
        who = label if len(finished) == 1 else f"{label}, load {k + 1}"
        if fin.returncode != 0:
            problems.append(f"{who}: inrush exited {fin.returncode}: {fin.stderr.strip()[-2000:]}")
            continue
        try:
            res["summaries"].append(json.loads(fin.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            problems.append(f"{who}: inrush --json printed no JSON object: {fin.stdout!r}")
    if len(finished) == 1 and res["summaries"]:
        res["summary"] = res["summaries"][0]
    return res


def write_csv(path: Path, rows: int, first: int = PREFILL + 1) -> None:
    """ids first .. first+rows-1 (by default just above the prefill), laid out like the prefill
    (deterministic, no seed needed)."""
    with path.open("w") as f:
        chunk = []
        for i in range(first, first + rows):
            chunk.append(f"{i},{1 + (i * 7919) % CUSTOMERS},{i % 100000 // 100}.{i % 100:02d},order {i}\n")
            if len(chunk) == 100_000:
                f.writelines(chunk)
                chunk.clear()
        f.writelines(chunk)


# --------------------------------------------------------------------------------------------
# Statistics over pgbench's per-transaction log
# --------------------------------------------------------------------------------------------

def read_txlog(prefix: Path) -> list[tuple[float, int, float | None]]:
    """Every transaction of a run as (completion epoch, script_no, latency ms or None if failed).
    Line format: client_id transaction_no time script_no time_epoch time_us [schedule_lag]
    [retries]; `time` is microseconds, or skipped / failed (serialization, deadlock with
    --failures-detailed)."""
    txs = []
    for path in sorted(prefix.parent.glob(prefix.name + ".*")):
        for line in path.read_text().splitlines():
            f = line.split()
            if len(f) < 6:
                continue
            lat = int(f[2]) / 1000 if f[2].isdigit() else None
            txs.append((int(f[4]) + int(f[5]) / 1e6, int(f[3]), lat))
    txs.sort()
    return txs


def pct(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile."""
    if not sorted_values:
        return None
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


def window(txs, t0: float, t1: float) -> dict:
    """Transactions that completed in [t0, t1): throughput, and latency per script."""
    inside = [t for t in txs if t0 <= t[0] < t1]
    secs = max(t1 - t0, 1e-9)
    out = {"t0": t0, "t1": t1, "seconds": t1 - t0, "transactions": len(inside),
           "tps": len(inside) / secs,
           "failed": sum(1 for t in inside if t[2] is None), "scripts": {}}
    for no, name in enumerate(SCRIPTS):
        lat = sorted(t[2] for t in inside if t[1] == no and t[2] is not None)
        out["scripts"][name] = {"transactions": len(lat), "tps": len(lat) / secs,
                                "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "p99_ms": pct(lat, 99),
                                "max_ms": lat[-1] if lat else None}
    return out


def parse_report(text: str) -> dict:
    """pgbench's final report: failures, aborts, and per-script statement latencies (-r)."""
    rep: dict = {"statements": {}}
    m = re.search(r"number of failed transactions: (\d+)", text)
    rep["failed_transactions"] = int(m.group(1)) if m else None
    m = re.search(r"number of transactions actually processed: (\d+)", text)
    rep["transactions"] = int(m.group(1)) if m else None
    m = re.search(r"^tps = ([\d.]+)", text, re.M)
    rep["tps"] = float(m.group(1)) if m else None
    rep["aborted"] = "aborted" in text.lower()
    script = None
    for line in text.splitlines():
        m = re.match(r"SQL script (\d+):", line)
        if m:
            script = SCRIPTS[int(m.group(1)) - 1] if int(m.group(1)) <= len(SCRIPTS) else m.group(1)
            continue
        m = re.match(r"\s+([\d.]+)\s+(\d+)\s+(SELECT|UPDATE|INSERT|BEGIN|END)\b(.*)", line)
        if m and script:
            rep["statements"].setdefault(script, []).append(
                {"avg_ms": float(m.group(1)), "failures": int(m.group(2)),
                 "statement": (m.group(3) + m.group(4)).strip()})
    return rep


# --------------------------------------------------------------------------------------------
# Lock waits
# --------------------------------------------------------------------------------------------

def kind(query: str | None) -> str:
    q = " ".join((query or "").split())
    return q if len(q) <= 70 else q[:67] + "..."


def lock_waits(samples: list[dict], t0: float, t1: float) -> list[dict]:
    """Per (waiter, statement, blocker, blocker's statement, lock): samples seen, distinct waits
    (pid, waitstart), and the longest wait seen (sample time - waitstart). A session that had
    stopped waiting by the time pg_locks was read (it holds no ungranted lock) is left out."""
    groups: dict = {}
    for s in samples:
        if not t0 <= s["t"] < t1:
            continue
        for w in s["w"]:
            blockers = w.get("blockers") or []
            b_app = ", ".join(sorted({b["app"] or "?" for b in blockers})) or "(released)"
            b_query = (kind(blockers[0]["query"]) if len(blockers) == 1
                       else f"{len(blockers)} sessions" if blockers else "")
            for lock in w.get("wants") or []:
                what = lock.get("relation") or ""
                locktype = lock.get("locktype") or "?"
                desc = (f"{lock.get('mode')} on {what}" if locktype == "relation"
                        else f"{lock.get('mode')} ({locktype}{' of ' + what if what else ''})")
                key = (w["app"] or "?", kind(w["query"]), b_app, b_query, desc)
                g = groups.setdefault(key, {"samples": 0, "waits": set(), "longest_s": 0.0})
                g["samples"] += 1
                since = lock.get("since")
                g["waits"].add((w["pid"], round(since or 0, 3)))
                if since:
                    g["longest_s"] = max(g["longest_s"], s["t"] - since)
    out = []
    for (app, query, b_app, b_query, lock), g in sorted(groups.items(), key=lambda kv: -kv[1]["longest_s"]):
        out.append({"waiter": app, "statement": query, "blocker": b_app, "blocker_statement": b_query,
                    "lock": lock, "samples": g["samples"], "waits": len(g["waits"]),
                    "longest_s": g["longest_s"]})
    return out


def between(w: dict) -> str:
    """Who waited on whom: `cross` (pgbench and inrush, either way), `inrush` or `pgbench`
    (among itself), `other`."""
    sides = {w["waiter"], *w["blocker"].split(", ")} - {"(released)"}
    if sides <= {"pgbench"}:
        return "pgbench"
    if sides <= {"inrush"}:
        return "inrush"
    return "cross" if sides & {"pgbench", "inrush"} == {"pgbench", "inrush"} else "other"


def describe_wait(w: dict) -> str:
    on = f"{w['blocker']} (`{w['blocker_statement']}`)" if w["blocker_statement"] else w["blocker"]
    return (f"{w['waiter']} `{w['statement']}` waited on {on} for {w['lock']}: "
            f"{w['samples']} samples, {w['waits']} waits, longest {w['longest_s']:.2f} s")


def print_waits(waits: list[dict], indent: str = "    ") -> None:
    """Waits that involve inrush (or anything but pgbench) one by one; pgbench's among itself
    (the TPC-B updates' row locks, there in the baseline too) in one line."""
    for w in waits:
        if between(w) != "pgbench":
            print(indent + describe_wait(w))
    own = [w for w in waits if between(w) == "pgbench"]
    if own:
        print(f"{indent}pgbench among itself (row locks of its own updates): {sum(w['waits'] for w in own)} "
              f"waits caught, longest {max(w['longest_s'] for w in own):.2f} s")


CLK_TCK = os.sysconf("SC_CLK_TCK")


def busy_cpu() -> float:
    """CPU seconds the whole machine has been busy (all CPUs, interrupts included)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / CLK_TCK


def proc_cpu(stat: str, children: bool) -> float:
    """utime + stime (+ cutime + cstime) of one /proc/PID/stat line, in seconds."""
    f = stat.rsplit(")", 1)[1].split()  # f[0] is field 3 (state)
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if children else 0)
    return ticks / CLK_TCK


def ours_cpu(postmaster: int) -> float:
    """CPU seconds of this bench: the server (the postmaster with its reaped children, and its
    live ones) and this process with its reaped children (pgbench, inrush, psql)."""
    ours = sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime
               for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(d.name) == postmaster:
                ours += proc_cpu(stat, children=True)
            elif int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                ours += proc_cpu(stat, children=False)
    return ours


def cpu_snapshot(postmaster: int) -> dict[int, tuple[str, float]]:
    """CPU seconds (own + reaped children's) of every process on the machine that is neither
    the bench's (this process and its children: pgbench, inrush, psql) nor the server's (the
    postmaster and its children) nor a kernel thread. The growth between two snapshots is what
    other programs used meanwhile: a build on the same machine shows up there (a program that
    starts and ends in between counts through its parent's reaped children's time)."""
    me = os.getpid()
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        pid, ppid = int(d.name), int(stat.rsplit(")", 1)[1].split()[1])
        if pid in (me, postmaster, 2) or ppid in (me, postmaster, 2):
            continue
        out[pid] = (stat[stat.index("(") + 1:stat.rindex(")")], proc_cpu(stat, children=True))
    return out


def others_cpu(before: dict, after: dict) -> tuple[float, list]:
    """The CPU seconds other programs used between two snapshots, and the three that used most."""
    grown = {}
    for pid, (comm, cpu) in after.items():
        start = before.get(pid, (comm, 0.0))[1]
        grown[(pid, comm)] = cpu - start if cpu >= start else cpu  # a smaller figure: the pid was reused
    top = sorted(grown.items(), key=lambda kv: -kv[1])[:3]
    return sum(grown.values()), [{"pid": pid, "command": comm, "cpu_s": v} for (pid, comm), v in top if v > 0]


class CpuWatch:
    """What other programs on the machine used between start and stop (see cpu_snapshot)."""

    def __init__(self, server: run.Server):
        self.postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
        self.procs, self.wall = cpu_snapshot(self.postmaster), time.time()
        self.busy, self.ours = busy_cpu(), ours_cpu(self.postmaster)

    def stop(self) -> dict:
        procs, wall = cpu_snapshot(self.postmaster), time.time()
        busy, ours = busy_cpu() - self.busy, ours_cpu(self.postmaster) - self.ours
        grown, top = others_cpu(self.procs, procs)
        # Both are upper bounds: a parent's reaped children's time can include CPU used before
        # the start, and the machine's busy time less ours includes the kernel's own work (I/O).
        total = min(grown, max(0.0, busy - ours))
        return {"wall_s": wall - self.wall, "cpu_busy_s": busy, "cpu_ours_s": ours, "cpu_others_s": total,
                "cpu_others_top": [{**t, "cpu_s": min(t["cpu_s"], total)} for t in top]}


# --------------------------------------------------------------------------------------------
# The bench
# --------------------------------------------------------------------------------------------

class Live:
    def __init__(self, server: run.Server, args, inrush: Path):
        self.server, self.args, self.inrush = server, args, inrush
        self.pgbench = server.bin / "pgbench"
        if not self.pgbench.exists():
            raise run.BenchError(f"no pgbench in {server.bin}")
        self.dir = server.scratch
        self.parts = load_parts(self.dir, args)
        self.problems: list[str] = []

    def setup(self) -> None:
        t = time.perf_counter()
        run.run([str(self.pgbench), "-i", "-q", "-s", str(SCALE), self.server.conninfo])
        run.log(f"pgbench -i -s {SCALE} in {time.perf_counter() - t:.1f} s")
        (self.dir / "oltp.sql").write_text(OLTP_SQL)
        (self.dir / "reads.sql").write_text(READS_SQL)
        write_parts(self.parts)

    def fresh_tables(self) -> None:
        self.server.sql(*create_orders_sql(sorted(expected_rows(self.parts))))

    # -- the load -------------------------------------------------------------------------

    def load(self, plan: str, label: str, fresh: bool = True) -> dict:
        """The phase's inrush loads, started together (into fresh tables unless `fresh` is
        false): the first start and last exit (epoch), and each one's --json summary
        (`summary` too when there is one load)."""
        if fresh:
            self.fresh_tables()
        watch = CpuWatch(self.server) if fresh else None
        res = run_loads(self.inrush, self.server.conninfo, self.parts, plan, label, self.problems)
        return {**res, **(watch.stop() if watch else {})}

    def verify(self, label: str, res: dict) -> None:
        """After a phase's loads: each table holds its prefill and its loads' rows, and both its
        indexes are there and valid."""
        res["count"], res["valid_indexes"] = {}, {}
        for table, expected in expected_rows(self.parts).items():
            n = int(self.server.sql(f"SELECT count(*) FROM {table}"))
            valid = int(self.server.sql(
                f"SELECT count(*) FROM pg_index WHERE indrelid = '{table}'::regclass AND indisvalid"))
            res["count"][table], res["valid_indexes"][table] = n, valid
            if n != expected:
                self.problems.append(f"{label}: {table} holds {n:,} rows after the load, expected {expected:,}")
            if valid != 2:
                self.problems.append(f"{label}: {valid} valid indexes on {table} after the load, expected 2")

    # -- pgbench and the sampler ------------------------------------------------------------

    def start_pgbench(self, name: str) -> tuple[subprocess.Popen, Path, Path, Path]:
        prefix = self.dir / f"txlog_{name}"
        for old in self.dir.glob(prefix.name + ".*"):
            old.unlink()
        out, err = self.dir / f"pgbench_{name}.out", self.dir / f"pgbench_{name}.err"
        c = self.args.clients
        # -T only as a ceiling: the run is ended by SIGALRM, pgbench's own -T timer, which makes
        # it stop cleanly with its full report (SIGINT would kill it with neither report nor
        # the last buffered lines of its logs).
        cmd = [str(self.pgbench), "-f", f"{self.dir / 'oltp.sql'}@5", "-f", f"{self.dir / 'reads.sql'}@5",
               "-s", str(SCALE), "-c", str(c), "-j", str(min(2, c)), "-T", "86400",
               "--protocol=prepared", "-P", "1", "--failures-detailed", "-r",
               "-l", f"--log-prefix={prefix}", self.server.conninfo]
        with out.open("w") as o, err.open("w") as e:
            p = subprocess.Popen(cmd, env=run.client_env(), stdout=o, stderr=e, cwd=str(self.dir))
        deadline = time.time() + 60
        while "progress:" not in err.read_text():
            if p.poll() is not None:
                raise run.BenchError(f"pgbench exited {p.returncode} before running:\n{err.read_text()}")
            if time.time() > deadline:
                p.kill()
                raise run.BenchError(f"pgbench printed no progress in 60 s:\n{err.read_text()}")
            time.sleep(0.05)
        return p, prefix, out, err

    def start_sampler(self, name: str) -> tuple[subprocess.Popen, Path]:
        sql = self.dir / "sampler.sql"
        sql.write_text(SAMPLER_SQL + f"\\watch {SAMPLE_EVERY}\n")
        path = self.dir / f"locks_{name}.jsonl"
        conninfo = self.server.conninfo + " application_name=live_sampler"
        with sql.open() as i, path.open("w") as o:
            p = subprocess.Popen([str(self.server.bin / "psql"), "-X", "-q", "-At", "-d", conninfo],
                                 env=run.client_env(), stdin=i, stdout=o, stderr=subprocess.PIPE, text=True)
        return p, path

    @staticmethod
    def stop(p: subprocess.Popen, sig: int, what: str) -> int:
        if p.poll() is None:
            p.send_signal(sig)
        try:
            return p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise run.BenchError(f"{what} did not stop within 120 s")

    def phase(self, name: str, plan: str | None) -> dict:
        """pgbench with the sampler; with a plan, the load in the middle of the run."""
        watch = CpuWatch(self.server)
        sampler, locks_path = self.start_sampler(name)
        pgb = None
        try:
            pgb, prefix, out, err = self.start_pgbench(name)
            time.sleep(LEAD_IN)
            if plan is None:
                t0 = time.time()
                time.sleep(self.args.seconds)
                t1 = time.time()
                load = None
            else:
                run.log(f"  {name}: inrush starts")
                # orders was made again before pgbench started: its reads need the table.
                load = self.load(plan, name, fresh=False)
                t0, t1 = load["t0"], load["t1"]
                time.sleep(TAIL)
            t_end = time.time()
            rc = self.stop(pgb, signal.SIGALRM, "pgbench")
        finally:
            if pgb is not None and pgb.poll() is None:
                pgb.kill()
            self.stop(sampler, signal.SIGINT, "the lock sampler")
        time.sleep(0.2)  # the server reaps pgbench's backends
        # orders is made afresh before each run, so these count this run's.
        autovac = self.server.sql("SELECT autovacuum_count || ' ' || autoanalyze_count FROM pg_stat_user_tables "
                                  "WHERE relid = 'orders'::regclass").split()
        cpu = watch.stop()
        samples = [json.loads(line) for line in locks_path.read_text().splitlines() if line.startswith("{")]
        if not samples:
            self.problems.append(f"{name}: the lock sampler recorded nothing: {sampler.stderr.read()}")
        report = parse_report(out.read_text() + err.read_text())
        txs = read_txlog(prefix)
        res = {"phase": name, "plan": plan, **cpu,
               "orders_autovacuum": {"vacuums": int(autovac[0]), "analyzes": int(autovac[1])} if autovac else None,
               "pgbench_returncode": rc, "report": report,
               "window": window(txs, t0, t1), "lock_waits": lock_waits(samples, t0, t1),
               "lock_samples": sum(1 for s in samples if t0 <= s["t"] < t1),
               "before": window(txs, txs[0][0] if txs else t0, t0) if plan else None,
               "after": window(txs, t1, t_end) if plan else None, "load": load, "inrush_phases": []}
        if load and load.get("summary"):
            # inrush's phases back to back, ending at its exit.
            s = load["summary"]
            at = t1 - s["seconds"]
            for ph, secs in (s.get("phases") or {}).items():
                res["inrush_phases"].append({"phase": ph, **window(txs, at, at + secs)})
                at += secs
        failed_logged = sum(1 for t in txs if t[2] is None)
        if rc != 0 or report["aborted"] or report["failed_transactions"] != 0 or failed_logged:
            self.problems.append(f"{name}: pgbench exit {rc}, failed transactions "
                                 f"{report['failed_transactions']} (log: {failed_logged}), aborted "
                                 f"{report['aborted']}:\n{err.read_text()[-3000:]}")
        return res


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def lat(w: dict, script: str) -> str:
    s = w["scripts"][script]
    return f"{ms(s['p50_ms'])} / {ms(s['p99_ms'])} / {ms(s['max_ms'])}"


def waits_cell(waits: list[dict]) -> str:
    cross = [w for w in waits if between(w) in ("cross", "other")]
    if not cross:
        return "none"
    return f"{sum(w['waits'] for w in cross)} (longest {max(w['longest_s'] for w in cross):.2f} s)"


def index_actions(summary: dict) -> str:
    idx = (summary.get("plan") or {}).get("indexes") or []
    return ", ".join(f"{i['name']} {i['action']}" for i in idx) or "-"


def print_report(args, results: dict, machine: dict, server: dict) -> None:
    base = results["baseline"]
    print()
    print(f"{args.rows:,} rows loaded into {into_words(args)} ({PREFILL:,} rows before; primary key + index on customer) "
          f"beside pgbench: {args.clients} clients, scale {SCALE}, oltp.sql@5 + reads.sql@5, prepared")
    print("  load s: inrush's wall time, alone / beside pgbench.  tps, latency (ms: p50 / p99 / max, per "
          "script): pgbench's")
    print("  transactions completed in the baseline's seconds, or between inrush's start and exit.  failed: "
          "pgbench's whole run.")
    print("  lock waits: waits between pgbench and inrush, either way (sampled every "
          f"{SAMPLE_EVERY * 1000:.0f} ms; shorter ones can slip by)")
    hdr = (f"{'phase':<22}{'load s':>14}{'tps':>8}{'oltp p50/p99/max':>22}{'reads p50/p99/max':>22}"
           f"{'failed':>8}  lock waits")
    print(hdr)
    print("-" * len(hdr))

    def row(name: str, load_s: str, r: dict) -> None:
        w = r["window"]
        print(f"{name:<22}{load_s:>14}{w['tps']:>8.0f}{lat(w, 'oltp'):>22}{lat(w, 'reads'):>22}"
              f"{r['report']['failed_transactions'] if r['report']['failed_transactions'] is not None else '?':>8}"
              f"  {waits_cell(r['lock_waits'])}")

    row(f"baseline ({args.seconds:g} s)", "-", base)
    for plan in args.plans:
        live, alone = results.get(f"{plan}_live"), results.get(f"{plan}_alone")
        if not live:
            continue
        a = f"{alone['seconds']:.1f}" if alone else "?"
        row(f"during load: {plan}", f"{a} / {live['load']['seconds']:.1f}", live)
    print()
    bt = base["window"]["tps"]
    for plan in args.plans:
        live = results.get(f"{plan}_live")
        if not live:
            continue
        w = live["window"]
        after = live["after"]
        print(f"{plan}: pgbench ran at {w['tps'] / bt:.0%} of its baseline tps while inrush loaded "
              f"({w['transactions']:,} transactions in {w['seconds']:.1f} s); after the load: "
              f"{after['tps']:.0f} tps, reads p99 {ms(after['scripts']['reads']['p99_ms'])} ms")

    for plan in args.plans:
        live, alone = results.get(f"{plan}_live"), results.get(f"{plan}_alone")
        if not live:
            continue
        print(f"\n{plan} plan, during each of inrush's phases (beside pgbench):")
        print(f"  {'inrush phase':<18}{'s':>7}{'tps':>8}{'oltp p50/p99/max':>22}{'reads p50/p99/max':>22}")
        for ph in live["inrush_phases"]:
            if ph["seconds"] < 0.005:
                continue
            print(f"  {ph['phase']:<18}{ph['seconds']:>7.2f}{ph['tps']:>8.0f}{lat(ph, 'oltp'):>22}"
                  f"{lat(ph, 'reads'):>22}")
        stmts = live["report"]["statements"].get("reads") or []
        if stmts:
            print("  reads.sql statement averages over the whole pgbench run (-r): " +
                  "; ".join(f"{s['avg_ms']:.2f} ms `{kind(s['statement'])}`" for s in stmts))
        for label, r in (("alone", alone), ("beside pgbench", live["load"])):
            for k, s in enumerate((r or {}).get("summaries") or []):
                phases = ", ".join(f"{k} {v:.2f}" for k, v in (s.get("phases") or {}).items())
                par = s.get("parallelism") or {}
                who = f"inrush {label}" + (f", load {k + 1} ({s.get('table')})" if args.loads > 1 else "")
                print(f"  {who}: {s['rows']:,} rows in {s['seconds']:.2f} s ({s['rows_per_second']:,.0f} rows/s); "
                      f"{s.get('connections')} connections ({par.get('reason', '')}); phases: {phases}")
                if label != "alone":
                    print(f"    indexes: {index_actions(s)}; after the load: {(s.get('plan') or {}).get('after')}")
        av = live.get("orders_autovacuum") or {}
        print(f"  autovacuum on orders during the pgbench run: {av.get('vacuums')} VACUUM, "
              f"{av.get('analyzes')} ANALYZE")
        waits = live["lock_waits"]
        print(f"  lock waits during the load ({live['lock_samples']} samples, "
              f"every {SAMPLE_EVERY * 1000:.0f} ms):"
              + ("" if waits else " none"))
        print_waits(waits)
    bw = base["lock_waits"]
    print(f"\nbaseline lock waits ({base['lock_samples']} samples):" + ("" if bw else " none"))
    print_waits(bw, "  ")
    print("\nCPU seconds other programs used (at most) during each pgbench run and each load alone, the "
          "biggest users named")
    print("(above a second or two: that run had competition), and the machine's busy CPU seconds "
          f"({machine.get('usable_cpus')} CPUs):")
    runs = [("baseline", base)]
    for p in args.plans:
        runs += [(f"{p} alone", results.get(f"{p}_alone")), (f"{p} live", results.get(f"{p}_live"))]
    for n, r in runs:
        if not r or "cpu_others_s" not in r:
            continue
        top = ", ".join(f"{t['command']} {t['cpu_s']:.1f} s" for t in r["cpu_others_top"] if t["cpu_s"] >= 0.1)
        print(f"  {n:<20} others {r['cpu_others_s']:5.1f} s{' (' + top + ')' if top else ''}; "
              f"busy {r['cpu_busy_s']:.0f} s in {r['wall_s']:.0f} s")
    print(f"\nserver: {server['version'].split(' on ')[0]}; shared_buffers {server['shared_buffers']}, "
          f"max_wal_size {server['max_wal_size']}, synchronous_commit {server['synchronous_commit']}")
    print("machine: " + ", ".join(f"{k} {v}" for k, v in machine.items()))


# --------------------------------------------------------------------------------------------

def workload_args(doc: str, results: str, keep: str, *extra: tuple[str, str],
                  several: bool = False) -> argparse.Namespace:
    """The options of a load beside a workload (this script's and live_mariadb.py's): `results`
    names the default results file, `keep` what --keep keeps, `extra` more (option, help);
    `several`: --loads and --own-tables too."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000, help="rows loaded (default 2,000,000)")
    ap.add_argument("--seconds", type=float, default=20, help="baseline duration (default 20)")
    ap.add_argument("--clients", type=int, default=4, help="workload clients (default 4)")
    ap.add_argument("--plans", default="default,keep-indexes",
                    help="comma-separated, of: default, keep-indexes (default: both)")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    for option, help in extra:
        ap.add_argument(option, help=help)
    if several:
        ap.add_argument("--loads", type=int, default=1,
                        help="inrush processes at once in each load phase, each with its share of the rows (default 1)")
        ap.add_argument("--own-tables", action="store_true",
                        help="with --loads: each into a table of its own (orders, orders_2, ...) instead of all into orders")
    ap.add_argument("--json", type=Path, help=f"results file (default bench/out/{results}-<date>.json)")
    ap.add_argument("--keep", action="store_true", help=f"keep {keep}")
    args = ap.parse_args()
    args.plans = [p for p in args.plans.split(",") if p]
    if not args.plans or any(p not in PLANS for p in args.plans):
        ap.error(f"--plans takes a comma-separated list of: {', '.join(PLANS)}")
    if args.rows < 1 or args.seconds <= 0 or args.clients < 1:
        ap.error("--rows, --seconds and --clients must be positive")
    if several and not 1 <= args.loads <= args.rows:
        ap.error("--loads must be between 1 and --rows")
    return args


def parse_args() -> argparse.Namespace:
    return workload_args(__doc__, "live",
                         "the scratch directory (cluster, CSV, pgbench logs and reports, lock samples)",
                         ("--pg-bin", "directory with initdb, pg_ctl, psql, postgres, pgbench"), several=True)


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    pg_bin = run.find_pg_bin(args.pg_bin)
    signal.signal(signal.SIGTERM, run.interrupt)
    machine = run.machine()
    server = run.Server(pg_bin)
    results: dict = {}
    try:
        run.log(f"starting PostgreSQL from {pg_bin} in {server.root} (as {server.user or 'current user'})")
        server.start()
        bench = Live(server, args, inrush)
        bench.setup()
        facts = run.server_facts(server)

        # Untimed: a new cluster zero-fills each WAL segment the first time; without this the
        # first load would pay for it.
        run.log("warm-up load (untimed)")
        bench.verify("warm-up", bench.load(args.plans[0], "warm-up"))

        run.log(f"baseline: pgbench alone, {args.seconds:g} s")
        bench.fresh_tables()
        results["baseline"] = bench.phase("baseline", None)
        for plan in args.plans:
            run.log(f"{plan}: load alone")
            alone = bench.load(plan, f"{plan} alone")
            bench.verify(f"{plan} alone", alone)
            results[f"{plan}_alone"] = alone
            run.log(f"  {results[f'{plan}_alone']['seconds']:.1f} s")
            run.log(f"{plan}: load beside pgbench")
            bench.fresh_tables()
            r = bench.phase(f"{plan}_live", plan)
            if r["load"]:
                bench.verify(f"{plan} live", r["load"])
            results[f"{plan}_live"] = r
            run.log(f"  {r['load']['seconds']:.1f} s")

        print_report(args, results, machine, facts)
        now = dt.datetime.now()
        out = args.json or run.OUT_DIR / f"live-{now:%Y%m%d-%H%M%S}.json"
        run.save_results(out, {
            "when": now.isoformat(timespec="seconds"),
            "settings": {"rows": args.rows, "prefill": PREFILL, "seconds": args.seconds,
                         "clients": args.clients, "scale": SCALE, "plans": args.plans,
                         "loads": args.loads, "own_tables": args.own_tables,
                         "inrush": str(inrush),
                         "inrush_version": run.run([str(inrush), "--version"], check=False).stdout.strip(),
                         "inrush_mtime": dt.datetime.fromtimestamp(inrush.stat().st_mtime)
                                         .isoformat(timespec="seconds"),
                         "lead_in_s": LEAD_IN, "tail_s": TAIL,
                         "sample_every_s": SAMPLE_EVERY},
            "machine": machine, "server": facts, "results": results, "problems": bench.problems,
        })
        if bench.problems:
            for p in bench.problems:
                run.log(f"problem: {p}")
            return 1
        return 0
    finally:
        server.close(args.keep)


if __name__ == "__main__":
    run.entry(main)
