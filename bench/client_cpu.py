#!/usr/bin/env python3
"""The client's own CPU per row: two inrush binaries side by side, in interleaved rounds, each
doing a real load into an empty table without indexes on one private PostgreSQL (see run.py),
and optionally a --check of the same rows (parse, check and encode; nothing sent).

On a machine where the loader and the server share cores, every client core-second costs about
half a second of wall time (issue 16), so this measures user + system CPU of the inrush process
(os.wait4), which other work on the machine disturbs far less than wall time.

  sbc        SqlBulkCopy, 1M rows of `inrush gen` (3 int + 3 varchar(100))
  li_csv     TPC-H lineitem SF1 from tpchgen-cli's CSV
  li_pq      the same rows from tpchgen-cli's Parquet

Usage: python3 bench/client_cpu.py --baseline OLD_BINARY [--inrush NEW_BINARY]
                                   [--cases sbc,li_csv,li_pq] [--rounds 5] [--check]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import parquet  # noqa: E402  (lineitem as Parquet and CSV from tpchgen-cli)
import run  # noqa: E402  (the harness: private server, children)

CASES = ("sbc", "li_csv", "li_pq")


def tables(server: run.Server) -> None:
    for name, columns in (("sqlbulkcopy", run.SQLBULKCOPY_COLUMNS), ("lineitem", run.LINEITEM_COLUMNS)):
        ddl = ", ".join(f"{n} {t} NOT NULL" for n, t in columns)
        server.sql(f"DROP TABLE IF EXISTS {name}", f"CREATE TABLE {name} ({ddl})")


def load(server: run.Server, binary: Path, source: tuple, check: bool) -> dict:
    path, table, extra = source
    if not check:
        server.sql(f"TRUNCATE {table}", "CHECKPOINT")
    cmd = [str(binary), "load", str(path), "--to", server.conninfo, "--table", table, "--json",
           "--no-progress", "--no-analyze", *extra, *(["--check"] if check else [])]
    t = time.perf_counter()
    fin = run.Child(cmd).wait().check()
    return {"cpu": fin.cpu_seconds, "user": fin.user_seconds, "sys": fin.sys_seconds,
            "wall": time.perf_counter() - t, "rows": int(json.loads(fin.stdout.splitlines()[-1])["rows"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, required=True, help="the binary to compare against")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="also --check of each case")
    ap.add_argument("--pg-bin", help="directory with initdb, pg_ctl, psql, postgres")
    args = ap.parse_args()
    cases = args.cases.split(",")
    if not set(cases) <= set(CASES) or args.rounds < 1:
        ap.error(f"--cases is a list of {', '.join(CASES)}; --rounds at least 1")
    binaries = {"baseline": run.inrush_binary(args.baseline), "new": run.inrush_binary(args.inrush)}
    server = run.Server(run.find_pg_bin(args.pg_bin))
    try:
        server.start()
        tables(server)
        sources = {}
        if "sbc" in cases:
            ds = run.prepare_sqlbulkcopy(argparse.Namespace(rows=1_000_000), binaries["new"], server.scratch)
            sources["sbc"] = (ds.csv, "sqlbulkcopy", [])
        if {"li_csv", "li_pq"} & set(cases):
            pq, csv = parquet.generate(1.0, server.scratch)
            sources["li_csv"] = (csv, "lineitem", ["--header"])
            sources["li_pq"] = (pq, "lineitem", [])
        runs = [(c, False) for c in cases] + ([(c, True) for c in cases] if args.check else [])
        results: dict = {}
        for r in range(args.rounds + 1):  # round 0 is an untimed warm-up
            for case, check in runs:
                order = list(binaries) if r % 2 else list(reversed(binaries))
                for name in order:
                    m = load(server, binaries[name], sources[case], check)
                    if r > 0:
                        results.setdefault((case, check, name), []).append(m)
                        run.log(f"round {r} {case}{' --check' if check else ''} {name}: "
                                f"{m['user']:.3f} user + {m['sys']:.3f} sys, {m['wall']:.2f} s wall")
        print(f"{'case':16} {'binary':9} {'user s':>7} {'sys s':>7} {'cpu s':>7} {'ns/row':>7} {'wall s':>7}")
        for case, check in runs:
            med = {}
            for name in binaries:
                ms = results[(case, check, name)]
                med[name] = {k: statistics.median(m[k] for m in ms) for k in ("user", "sys", "cpu", "wall")}
                d, rows = med[name], ms[0]["rows"]
                print(f"{case + (' check' if check else ''):16} {name:9} {d['user']:7.3f} {d['sys']:7.3f} "
                      f"{d['cpu']:7.3f} {d['cpu'] / rows * 1e9:7.0f} {d['wall']:7.2f}")
            print(f"{'':16} new/baseline: cpu {med['new']['cpu'] / med['baseline']['cpu']:.2f}, "
                  f"wall {med['new']['wall'] / med['baseline']['wall']:.2f} (medians of {args.rounds})")
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
