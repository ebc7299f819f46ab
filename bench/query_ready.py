#!/usr/bin/env python3
"""Query-ready time: from nothing to a loaded, indexed, analysed table.

1M rows of the SqlBulkCopy table with a primary key and two secondary indexes (3 ints; 3
varchar(100)), three ways, interleaved over rounds on one private PostgreSQL (see run.py):

  copy_indexed   psql \\copy into the indexed table, then VACUUM (ANALYZE)
  manual_recipe  psql \\copy into the bare table, then ADD PRIMARY KEY, CREATE INDEX x2 one by
                 one, VACUUM (ANALYZE): the classic hand-made recipe
  inrush         inrush load into the indexed table (it keeps the primary key, rebuilds the
                 secondary indexes after the load in parallel, then VACUUM (ANALYZE))

Each starts from a freshly created table after a CHECKPOINT; the time runs until the table is
ready to query. Usage: python3 bench/query_ready.py [--rows N] [--repeat R]
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the harness: private server, children, machine facts)

TABLE = "qr"
COLUMNS = ", ".join(f"{n} {t} NOT NULL" for n, t in run.SQLBULKCOPY_COLUMNS)
PRIMARY_KEY = "ALTER TABLE qr ADD PRIMARY KEY (fieldint1, fieldint2)"
INDEXES = [
    "CREATE INDEX qr_ints ON qr (fieldint1, fieldint2, fieldint3)",
    "CREATE INDEX qr_chars ON qr (fieldchar1, fieldchar2, fieldchar3)",
]


def fresh(server: run.Server, indexed: bool) -> None:
    server.sql("DROP TABLE IF EXISTS qr", f"CREATE TABLE qr ({COLUMNS})")
    if indexed:
        server.sql(PRIMARY_KEY, *INDEXES)
    server.sql("CHECKPOINT")


def timed(cmds: list[list[str]]) -> float:
    t = time.perf_counter()
    for cmd in cmds:
        run.Child(cmd).wait().check()
    return time.perf_counter() - t


def measure(method: str, server: run.Server, csv: Path, inrush: Path, rows: int) -> dict:
    copy = server.psql_cmd("-c", f"\\copy qr FROM '{csv}' (FORMAT csv)")
    extra: dict = {}
    if method == "copy_indexed":
        fresh(server, indexed=True)
        seconds = timed([copy, server.psql_cmd("-c", "VACUUM (ANALYZE) qr")])
    elif method == "manual_recipe":
        fresh(server, indexed=False)
        steps = [PRIMARY_KEY, *INDEXES, "VACUUM (ANALYZE) qr"]
        seconds = timed([copy, *[server.psql_cmd("-c", s) for s in steps]])
    else:
        fresh(server, indexed=True)
        cmd = [str(inrush), "load", str(csv), "--to", server.conninfo, "--table", "qr", "--json", "--no-progress"]
        t = time.perf_counter()
        fin = run.Child(cmd).wait()
        seconds = time.perf_counter() - t
        fin.check()
        summary = json.loads(fin.stdout.strip().splitlines()[-1])
        extra = {"phases": summary.get("phases"), "plan": summary.get("plan", {}).get("rule")}
    n = int(server.sql("SELECT count(*) FROM qr"))
    indexes = int(server.sql("SELECT count(*) FROM pg_index WHERE indrelid = 'qr'::regclass AND indisvalid"))
    analysed = server.sql("SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'qr'")
    if n != rows or indexes != 3:
        raise run.BenchError(f"{method}: {n} rows and {indexes} valid indexes, expected {rows} and 3")
    return {"method": method, "seconds": seconds, "analysed": analysed == "t", **extra}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin")
    args = ap.parse_args()
    server = run.Server(run.find_pg_bin(args.pg_bin))
    methods = ["copy_indexed", "manual_recipe", "inrush"]
    results = []
    try:
        server.start()
        csv = server.scratch / "sqlbulkcopy.csv"
        run.run([str(args.inrush), "gen", "-o", str(csv), "--rows", str(args.rows), "--seed", "42"])
        server.give_to_server(csv)
        run.log("warm-up (untimed)")
        for m in methods:
            measure(m, server, csv, args.inrush, args.rows)
        for r in range(args.repeat):
            order = methods[r % 3:] + methods[:r % 3]
            for m in order:
                res = measure(m, server, csv, args.inrush, args.rows)
                run.log(f"round {r + 1}/{args.repeat}  {m:<14} {res['seconds']:7.3f} s  {res.get('phases') or ''}")
                results.append(res)
    finally:
        server.stop()
        import shutil
        shutil.rmtree(server.root, ignore_errors=True)
    best = {m: min(r["seconds"] for r in results if r["method"] == m) for m in methods}
    print(f"\n{args.rows:,} rows, primary key + 2 secondary indexes; seconds until ready to query (best of {args.repeat})")
    for m in methods:
        print(f"  {m:<14} {best[m]:7.3f} s")
    print(f"  copy_indexed / inrush   {best['copy_indexed'] / best['inrush']:.2f}x")
    print(f"  manual_recipe / inrush  {best['manual_recipe'] / best['inrush']:.2f}x")
    out = run.REPO / "bench/out"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"query-ready-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"machine": run.machine(), "rows": args.rows, "results": results, "best": best}, indent=2))
    print(f"raw results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
