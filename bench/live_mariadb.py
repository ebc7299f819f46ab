#!/usr/bin/env python3
"""An inrush load into MariaDB beside a live OLTP workload: bench/live.py's measurement, with a
workload of its own in place of pgbench (which speaks only PostgreSQL).

Starts a private MariaDB 10.11 (scripts/mariadb.sh through bench/mariadb.py's Server, with the
server's own default durability, innodb_flush_log_at_trx_commit=1), creates pgbench's four
tables at scale 10 (branches, tellers, accounts with 1,000,000 rows, history) and live.py's
loaded table

    orders(id BIGINT PRIMARY KEY, customer INT NOT NULL, amount DECIMAL(12,2), note TEXT,
           KEY orders_customer_idx (customer))

prefilled with 200,000 rows, and writes live.py's CSV of --rows new rows. --clients threads
(PyMySQL, each its own connection, autocommit) run, chosen at random half and half, live.py's
two scripts: oltp (pgbench's TPC-B-like transaction: three UPDATEs, a SELECT and an INSERT into
history, in one transaction) and reads (orders by primary key, then a count by customer, which
needs the secondary index). Phases, as in live.py: the workload alone for --seconds; for each
plan of --plans, the load alone, then the load beside the workload (started LEAD_IN seconds
into it, the workload running on for TAIL seconds after inrush exits).

Every statement's failure is counted (a deadlock, a lock wait timeout, a lost connection) and
makes the script exit 1. Latencies are per transaction, cut to the same windows as live.py's.
Lock waits are sampled every 100 ms from information_schema: sessions in a "Waiting for ...
lock" state (metadata locks; their holders from the metadata_lock_info plugin) and InnoDB row
lock waits (innodb_lock_waits), each named as workload or inrush.

--loads N [--own-tables] runs N loads at once in each load phase, as live.py's do.

Usage: python3 bench/live_mariadb.py [--rows N] [--seconds S] [--clients C]
                                     [--plans default,keep-indexes] [--loads N [--own-tables]]
                                     [--inrush PATH] [--json PATH] [--keep]
PyMySQL is installed into .venv when missing; run the script with .venv/bin/python or any
Python that has it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (children, machine facts, results)
import mariadb  # noqa: E402  (the private MariaDB)
import live  # noqa: E402  (the CSV, the windows and their percentiles, the report's cells)

SCALE = 10
SAMPLE_EVERY = live.SAMPLE_EVERY


def pymysql():
    try:
        import pymysql as module
    except ImportError:
        subprocess.run([str(run.REPO / ".venv/bin/pip"), "install", "--quiet", "pymysql"], check=True)
        sys.path.extend(str(p) for p in (run.REPO / ".venv/lib").glob("python3*/site-packages"))
        import pymysql as module
    return module


def connect(url: str):
    u = urlsplit(url)
    return pymysql().connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                             password=u.password or "", database=u.path.lstrip("/"), autocommit=True)


def setup_sql() -> list[str]:
    """pgbench -i -s SCALE, in MariaDB's words (its sequence engine makes the rows)."""
    return [
        "DROP TABLE IF EXISTS branches, tellers, accounts, history",
        "CREATE TABLE branches (bid INT PRIMARY KEY, bbalance INT, filler CHAR(88)) ENGINE=InnoDB",
        "CREATE TABLE tellers (tid INT PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84)) ENGINE=InnoDB",
        "CREATE TABLE accounts (aid INT PRIMARY KEY, bid INT, abalance INT, filler CHAR(84)) ENGINE=InnoDB",
        "CREATE TABLE history (tid INT, bid INT, aid INT, delta INT, mtime DATETIME, filler CHAR(22)) ENGINE=InnoDB",
        f"INSERT INTO branches SELECT seq, 0, '' FROM seq_1_to_{SCALE}",
        f"INSERT INTO tellers SELECT seq, 1 + (seq - 1) DIV 10, 0, '' FROM seq_1_to_{10 * SCALE}",
        f"INSERT INTO accounts SELECT seq, 1 + (seq - 1) DIV 100000, 0, '' FROM seq_1_to_{100000 * SCALE}",
    ]


def orders_sql(tables: list[str]) -> list[str]:
    """Each of `tables` as every load finds it (live.py's, in MariaDB's words)."""
    sql = []
    for t in tables:
        sql += [
            f"DROP TABLE IF EXISTS {t}",
            f"CREATE TABLE {t} (id BIGINT PRIMARY KEY, customer INT NOT NULL, amount DECIMAL(12,2), "
            f"note TEXT, KEY {t}_customer_idx (customer)) ENGINE=InnoDB",
            f"INSERT INTO {t} SELECT seq, 1 + (seq * 7919) % {live.CUSTOMERS}, (seq % 100000) / 100.0, "
            f"CONCAT('order ', seq) FROM seq_1_to_{live.PREFILL}",
            f"ANALYZE TABLE {t}",
        ]
    return sql


class Workload:
    """--clients threads, each on its own connection, until stop(): every transaction as
    (completion epoch, script number, latency ms or None when it failed), as live.window reads
    pgbench's log."""

    def __init__(self, url: str, clients: int):
        self.url, self.clients = url, clients
        self.txs: list[tuple[float, int, float | None]] = []
        self.errors: list[str] = []
        self.thread_ids: set[int] = set()
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(clients)]

    def start(self) -> "Workload":
        for t in self.threads:
            t.start()
        return self

    def stop(self) -> None:
        self.done.set()
        for t in self.threads:
            t.join(timeout=120)

    def client(self, n: int) -> None:
        rng = random.Random(n)
        conn = connect(self.url)
        with conn.cursor() as c:
            c.execute("SELECT CONNECTION_ID()")
            with self.lock:
                self.thread_ids.add(c.fetchone()[0])
        while not self.done.is_set():
            script = rng.randrange(2)
            t0 = time.perf_counter()
            try:
                with conn.cursor() as c:
                    (self.oltp if script == 0 else self.reads)(c, rng)
                latency = (time.perf_counter() - t0) * 1000
            except Exception as e:  # noqa: BLE001  (every failure is counted and reported)
                latency = None
                with self.lock:
                    self.errors.append(f"{type(e).__name__}: {e}")
                try:
                    conn.rollback()
                except Exception:  # noqa: BLE001
                    conn = connect(self.url)
            with self.lock:
                self.txs.append((time.time(), script, latency))
        conn.close()

    @staticmethod
    def oltp(c, rng: random.Random) -> None:
        aid, bid, tid = rng.randint(1, 100000 * SCALE), rng.randint(1, SCALE), rng.randint(1, 10 * SCALE)
        delta = rng.randint(-5000, 5000)
        c.execute("BEGIN")
        c.execute("UPDATE accounts SET abalance = abalance + %s WHERE aid = %s", (delta, aid))
        c.execute("SELECT abalance FROM accounts WHERE aid = %s", (aid,))
        c.execute("UPDATE tellers SET tbalance = tbalance + %s WHERE tid = %s", (delta, tid))
        c.execute("UPDATE branches SET bbalance = bbalance + %s WHERE bid = %s", (delta, bid))
        c.execute("INSERT INTO history (tid, bid, aid, delta, mtime) VALUES (%s, %s, %s, %s, NOW())",
                  (tid, bid, aid, delta))
        c.execute("COMMIT")

    @staticmethod
    def reads(c, rng: random.Random) -> None:
        c.execute("SELECT amount FROM orders WHERE id = %s", (rng.randint(1, live.PREFILL),))
        c.fetchall()
        c.execute("SELECT count(*) FROM orders WHERE customer = %s", (rng.randint(1, live.CUSTOMERS),))
        c.fetchall()


# Sessions waiting for a lock, and InnoDB's row lock waits with their blockers.
WAITING_SQL = """SELECT id, state, LEFT(info, 200), time_ms FROM information_schema.processlist
WHERE state LIKE 'Waiting for%lock%' AND id <> CONNECTION_ID()"""
ROW_WAITS_SQL = """SELECT r.trx_mysql_thread_id, LEFT(r.trx_query, 200), b.trx_mysql_thread_id,
  LEFT(b.trx_query, 200), TIMESTAMPDIFF(MICROSECOND, r.trx_wait_started, NOW(6)) / 1e6
FROM information_schema.innodb_lock_waits w
JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id"""
MDL_HOLDERS_SQL = """SELECT DISTINCT thread_id FROM information_schema.metadata_lock_info
WHERE table_name = 'orders' AND thread_id <> CONNECTION_ID()"""


class Sampler:
    """Lock waits every SAMPLE_EVERY seconds, on a connection of its own, until stop()."""

    def __init__(self, url: str):
        self.conn = connect(url)
        self.samples: list[dict] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def start(self) -> "Sampler":
        self.thread.start()
        return self

    def stop(self) -> list[dict]:
        self.done.set()
        self.thread.join(timeout=60)
        self.conn.close()
        return self.samples

    def loop(self) -> None:
        while not self.done.wait(SAMPLE_EVERY):
            with self.conn.cursor() as c:
                c.execute(WAITING_SQL)
                waiting = c.fetchall()
                c.execute(ROW_WAITS_SQL)
                rows = c.fetchall()
                holders = []
                if waiting:
                    c.execute(MDL_HOLDERS_SQL)
                    holders = [r[0] for r in c.fetchall()]
            if waiting or rows:
                self.samples.append({"t": time.time(), "waiting": waiting, "row_waits": rows,
                                     "mdl_holders": holders})


def lock_waits(samples: list[dict], workload_ids: set[int], t0: float, t1: float) -> list[dict]:
    """Per (waiter, statement, lock, blocker): samples seen and the longest wait seen. A session
    of the workload is `workload`, any other `inrush`."""
    who = lambda tid: "workload" if tid in workload_ids else "inrush"  # noqa: E731
    groups: dict = {}
    for s in samples:
        if not t0 <= s["t"] < t1:
            continue
        found = [(tid, query, state, {who(h) for h in s["mdl_holders"] if h != tid}, ms / 1000)
                 for tid, state, query, ms in s["waiting"]]
        found += [(tid, query, "row lock", {who(b)}, secs) for tid, query, b, _, secs in s["row_waits"]]
        for tid, query, lock, blockers, secs in found:
            key = (who(tid), live.kind(query), lock, ", ".join(sorted(blockers)) or "?")
            g = groups.setdefault(key, {"samples": 0, "longest_s": 0.0})
            g["samples"] += 1
            g["longest_s"] = max(g["longest_s"], float(secs or 0))
    return [{"waiter": k[0], "statement": k[1], "lock": k[2], "blocker": k[3], **g}
            for k, g in sorted(groups.items(), key=lambda kv: -kv[1]["longest_s"])]


class Live:
    def __init__(self, server: mariadb.Server, args, inrush: Path):
        self.server, self.args, self.inrush = server, args, inrush
        self.parts = live.load_parts(server.files, args)
        self.problems: list[str] = []

    def setup(self) -> None:
        t = time.perf_counter()
        self.server.sql("; ".join(setup_sql()))
        run.log(f"workload tables (scale {SCALE}) in {time.perf_counter() - t:.1f} s")
        live.write_parts(self.parts)

    def fresh_orders(self) -> None:
        """The loaded tables made again, their pages flushed after."""
        self.server.sql("; ".join(orders_sql(sorted(live.expected_rows(self.parts)))))
        self.server.quiesce()

    def load(self, plan: str, label: str) -> dict:
        """The phase's loads, started together, then each table checked: its rows, its 2 indexes."""
        res = live.run_loads(self.inrush, self.server.url, self.parts, plan, label, self.problems)
        res["count"], res["indexes"] = {}, {}
        for table, expected in live.expected_rows(self.parts).items():
            n = int(self.server.value(f"SELECT count(*) FROM {table}"))
            indexes = int(self.server.value("SELECT count(DISTINCT index_name) FROM information_schema.statistics "
                                            f"WHERE table_schema = DATABASE() AND table_name = '{table}'"))
            res["count"][table], res["indexes"][table] = n, indexes
            if n != expected or indexes != 2:
                self.problems.append(f"{label}: {table} holds {n:,} rows and {indexes} indexes after the load, "
                                     f"expected {expected:,} and 2")
        return res

    def phase(self, name: str, plan: str | None) -> dict:
        """The workload with the sampler; with a plan, the load in its middle."""
        self.fresh_orders()
        sampler = Sampler(self.server.url).start()
        work = Workload(self.server.url, self.args.clients).start()
        try:
            time.sleep(live.LEAD_IN)
            if plan is None:
                t0 = time.time()
                time.sleep(self.args.seconds)
                t1, load = time.time(), None
            else:
                run.log(f"  {name}: inrush starts")
                load = self.load(plan, name)
                t0, t1 = load["t0"], load["t1"]
                time.sleep(live.TAIL)
        finally:
            work.stop()
            samples = sampler.stop()
        txs = sorted(work.txs)
        if work.errors:
            self.problems.append(f"{name}: {len(work.errors)} workload transactions failed, the first: "
                                 f"{work.errors[0]}")
        res = {"phase": name, "plan": plan, "load": load, "errors": work.errors[:20],
               "failed": len(work.errors), "window": live.window(txs, t0, t1),
               "before": live.window(txs, txs[0][0], t0) if plan and txs else None,
               "lock_waits": lock_waits(samples, work.thread_ids, t0, t1), "inrush_phases": []}
        if load and load.get("summary"):
            at = t1 - load["summary"]["seconds"]
            for ph, secs in (load["summary"].get("phases") or {}).items():
                res["inrush_phases"].append({"phase": ph, **live.window(txs, at, at + secs)})
                at += secs
        return res


def print_report(args, results: dict) -> None:
    print()
    print(f"{args.rows:,} rows loaded into {live.into_words(args)} ({live.PREFILL:,} rows before; primary key + index on "
          f"customer) beside {args.clients} clients (oltp and reads, half and half; scale {SCALE})")
    print("  load s: inrush alone / beside the workload.  tps, latency (ms: p50 / p99 / max, per script):")
    print("  transactions completed in the baseline's seconds, or between inrush's start and exit.")
    print(f"  lock waits: sampled every {SAMPLE_EVERY * 1000:.0f} ms, workload <-> inrush")
    print(f"{'phase':<22}{'load s':>14}{'tps':>8}{'oltp p50/p99/max':>22}{'reads p50/p99/max':>22}"
          f"{'failed':>8}  lock waits")
    for name, r in results.items():
        if name.endswith("_alone"):
            continue
        plan = r["plan"]
        alone = results.get(f"{plan}_alone")
        load_s = f"{alone['seconds']:.1f} / {r['load']['seconds']:.1f}" if plan and r["load"] else "-"
        w = r["window"]
        cross = [x for x in r["lock_waits"]
                 if "inrush" in (x["waiter"], *x["blocker"].split(", ")) and "workload" in
                 (x["waiter"], *x["blocker"].split(", ")) and x["blocker"] != x["waiter"]]
        waits = f"{sum(x['samples'] for x in cross)} samples, longest {max(x['longest_s'] for x in cross):.2f} s" \
            if cross else "none"
        print(f"{name:<22}{load_s:>14}{w['tps']:>8.0f}{live.lat(w, 'oltp'):>22}{live.lat(w, 'reads'):>22}"
              f"{r['failed']:>8}  {waits}")
        for x in r["lock_waits"]:
            print(f"    {x['waiter']} waited ({x['lock']}, longest {x['longest_s']:.2f} s, {x['samples']} "
                  f"samples) on {x['blocker']}: {x['statement']}")
        for ph in r["inrush_phases"]:
            print(f"    during inrush's {ph['phase']:<14} {ph['seconds']:6.1f} s  {ph['tps']:6.0f} tps  "
                  f"reads {live.lat(ph, 'reads')}")
        for k, s in enumerate(((r.get("load") or {}).get("summaries") or []) if args.loads > 1 else []):
            plan = ", ".join(f"{i['name']} {i['action']}" for i in (s.get("plan") or {}).get("indexes") or [])
            phases = ", ".join(f"{p} {v:.2f}" for p, v in (s.get("phases") or {}).items())
            print(f"    load {k + 1} ({s.get('table')}): {s['seconds']:.2f} s; indexes: {plan}; phases: {phases}")


def parse_args() -> argparse.Namespace:
    return live.workload_args(__doc__, "live-mariadb", "the server's directory (its data, the CSV)", several=True)


def main() -> int:
    args = parse_args()
    inrush = run.inrush_binary(args.inrush)
    pymysql()
    signal.signal(signal.SIGTERM, run.interrupt)
    server = mariadb.Server(Path("/tmp"), None, ["--innodb-flush-log-at-trx-commit=1"])
    results: dict = {}
    try:
        run.log(f"starting MariaDB in {server.data} on port {server.port}")
        server.start()
        server.sql("INSTALL SONAME 'metadata_lock_info'")
        bench = Live(server, args, inrush)
        bench.setup()
        run.log(f"baseline: the workload alone, {args.seconds:g} s")
        results["baseline"] = bench.phase("baseline", None)
        for plan in args.plans:
            run.log(f"{plan}: load alone")
            bench.fresh_orders()
            results[f"{plan}_alone"] = bench.load(plan, f"{plan} alone")
            run.log(f"  {results[f'{plan}_alone']['seconds']:.1f} s")
            run.log(f"{plan}: load beside the workload")
            results[f"{plan}_live"] = r = bench.phase(f"{plan}_live", plan)
            if r["load"]:
                run.log(f"  {r['load']['seconds']:.1f} s")
        print_report(args, results)
        now = dt.datetime.now()
        run.save_results(args.json or run.OUT_DIR / f"live-mariadb-{now:%Y%m%d-%H%M%S}.json", {
            "when": now.isoformat(timespec="seconds"),
            "settings": {"rows": args.rows, "prefill": live.PREFILL, "seconds": args.seconds,
                         "clients": args.clients, "scale": SCALE, "plans": args.plans,
                         "loads": args.loads, "own_tables": args.own_tables, "inrush": str(inrush),
                         "inrush_version": run.run([str(inrush), "--version"], check=False).stdout.strip(),
                         "lead_in_s": live.LEAD_IN, "tail_s": live.TAIL, "sample_every_s": SAMPLE_EVERY},
            "machine": run.machine(), "server": server.facts(), "results": results,
            "problems": bench.problems,
        })
        for p in bench.problems:
            run.log(f"problem: {p}")
        return 1 if bench.problems else 0
    finally:
        server.stop()
        run.leave_scratch(server.root, args.keep)


if __name__ == "__main__":
    run.entry(main, "server stopped")
