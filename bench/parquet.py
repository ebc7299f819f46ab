#!/usr/bin/env python3
"""TPC-H lineitem from Parquet: inrush, inrush from the same rows as CSV, and the ADBC
PostgreSQL driver (the Arrow-native loader), interleaved over rounds on one private PostgreSQL
(see run.py: default durability, Unix socket, CHECKPOINT before every load).

  inrush_parquet        inrush load lineitem.parquet into the standard lineitem table (dbgen's
                        types: integer keys, numeric(15,2), char(n), date): Arrow int64 keys are
                        range-checked into integer
  inrush_csv            inrush load lineitem.csv (tpchgen-cli's CSV of the same rows) into it
  adbc                  adbc_driver_postgresql's adbc_ingest, streaming the file's record batches,
                        into a table whose types match the Arrow types (bigint keys, text)
  inrush_parquet_arrow  inrush into that same Arrow-typed table, for a like-for-like pair

ADBC cannot load into the standard table at all (it never coerces to the target's types); the
script records its error once.  Usage: python3 bench/parquet.py [--scale 1] [--repeat 3]
"""

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (the harness: private server, children, machine facts)

STANDARD = "lineitem"
ARROW = "lineitem_arrow"
ARROW_TYPES = {"bigint": "bigint", "int": "int", "numeric(15,2)": "numeric(15,2)", "date": "date"}

# The ADBC load, run as its own process like every other client: stream the file's batches.
ADBC_SCRIPT = r"""
import sys, pyarrow as pa, pyarrow.parquet as pq
import adbc_driver_postgresql.dbapi as pg
path, uri, table = sys.argv[1:4]
f = pq.ParquetFile(path)
schema = f.schema_arrow
# string_view columns go out as plain strings: the driver's COPY writer needs one or the other.
target = pa.schema([pa.field(x.name, pa.string() if x.type == pa.string_view() else x.type) for x in schema])
batches = (b.cast(target) for b in f.iter_batches(batch_size=65536))
reader = pa.RecordBatchReader.from_batches(target, batches)
with pg.connect(uri) as conn:
    with conn.cursor() as cur:
        n = cur.adbc_ingest(table, reader, mode="append")
    conn.commit()
print(n)
"""


def python() -> str:
    return str(run.REPO / ".venv/bin/python")


def ensure_adbc() -> str:
    probe = subprocess.run([python(), "-c", "import adbc_driver_postgresql, pyarrow; print(pyarrow.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        run.log("installing adbc-driver-postgresql and pyarrow into .venv")
        run.run([python(), "-m", "pip", "install", "--quiet", "adbc-driver-postgresql", "pyarrow"])
    return run.run([python(), "-c", "import adbc_driver_postgresql as a, pyarrow as p; print(a.__version__, p.__version__)"]).stdout.strip()


def tpchgen(scale: float, fmt: str, out: Path) -> Path:
    """lineitem at `scale` in tpchgen-cli's `fmt` (parquet or csv), into `out`: the same rows in
    either, since the generator is deterministic."""
    exe = run.find_tpchgen()
    sub = ["--format", fmt] if "--format" in run.run([exe, "--help"]).stdout else [fmt]
    run.run([exe, *sub, "--scale-factor", str(scale), "--tables", "lineitem", "--output-dir", str(out)])
    files = sorted(out.rglob(f"lineitem*.{fmt}"))
    if len(files) != 1:
        raise run.BenchError(f"expected one lineitem .{fmt} from tpchgen-cli, found {files}")
    return files[0]


def generate(scale: float, scratch: Path) -> tuple[Path, Path]:
    out = scratch / "tpch"
    return tpchgen(scale, "parquet", out / "parquet"), tpchgen(scale, "csv", out / "csv")


def create(server: run.Server, table: str) -> None:
    if table == STANDARD:
        cols = [(n, t) for n, t in run.LINEITEM_COLUMNS]
        cols = [(n, "int" if t == "bigint" else t) for n, t in cols]  # dbgen's dss.ddl: INTEGER keys
    else:
        cols = [(n, ARROW_TYPES.get(t, "text")) for n, t in run.LINEITEM_COLUMNS]
        cols = [(n, "bigint" if n in ("l_orderkey", "l_partkey", "l_suppkey") else t) for n, t in cols]
    ddl = ", ".join(f"{n} {t} NOT NULL" for n, t in cols)
    server.sql(f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} ({ddl})", "CHECKPOINT")


def measure(method: str, server: run.Server, inrush: Path, parquet: Path, csv: Path, rows: int | None,
            before: Path | None = None) -> dict:
    table = ARROW if method in ("adbc", "inrush_parquet_arrow") else STANDARD
    if method.endswith("_before"):
        inrush = before
    create(server, table)
    lsn0 = int(server.sql("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"))
    if method == "adbc":
        uri = f"postgresql:///postgres?host={server.sock}&port={run.PORT}&user=postgres"
        cmd = [python(), "-c", ADBC_SCRIPT, str(parquet), uri, table]
    else:
        source = csv if method.startswith("inrush_csv") else parquet
        cmd = [str(inrush), "load", str(source), "--to", server.conninfo, "--table", table,
               "--json", "--no-progress", "--no-analyze"]
        if method.startswith("inrush_csv"):
            cmd.append("--header")
    t = time.perf_counter()
    fin = run.Child(cmd).wait()
    seconds = time.perf_counter() - t
    fin.check()
    n = int(server.sql(f"SELECT count(*) FROM {table}"))
    if rows is not None and n != rows:
        raise run.BenchError(f"{method}: {n} rows in the table, expected {rows}")
    wal = int(server.sql("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")) - lsn0
    return {"method": method, "seconds": seconds, "rows": n, "wal_bytes": wal, "peak_rss_kib": fin.maxrss_kib}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin")
    ap.add_argument("--before", type=Path,
                    help="an earlier inrush build: measures it beside --inrush from Parquet and CSV "
                         "(inrush_parquet_before, inrush_csv_before) instead of ADBC")
    args = ap.parse_args()
    if not args.inrush.exists():
        run.log("building inrush (release)")
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "inrush"], cwd=run.REPO, check=True)
    versions = None if args.before else ensure_adbc()
    server = run.Server(run.find_pg_bin(args.pg_bin))
    try:
        server.start()
        parquet, csv = generate(args.scale, server.scratch)
        run.log(f"lineitem SF {args.scale}: parquet {parquet.stat().st_size / 1e6:.0f} MB, csv {csv.stat().st_size / 1e6:.0f} MB")
        adbc_standard = None
        if args.before:
            methods = ["inrush_parquet", "inrush_parquet_before", "inrush_csv", "inrush_csv_before"]
        else:
            # What ADBC says when the table has the standard types.
            create(server, STANDARD)
            uri = f"postgresql:///postgres?host={server.sock}&port={run.PORT}&user=postgres"
            refused = run.run([python(), "-c", ADBC_SCRIPT, str(parquet), uri, STANDARD], check=False)
            # The driver's message spans lines (ERROR, CONTEXT, SQLSTATE): keep them from the error on.
            err = refused.stderr.strip()
            adbc_standard = " ".join(err[err.find("ERROR"):].split()) if refused.returncode else "loaded"
            run.log(f"adbc into the standard lineitem table: {adbc_standard}")
            methods = ["inrush_parquet", "inrush_csv", "adbc", "inrush_parquet_arrow"]
        rows = None
        results = []
        for r in range(args.repeat + 1):  # round 0 warms caches and learns the row count
            for m in methods:
                res = measure(m, server, args.inrush, parquet, csv, rows, args.before)
                rows = rows or res["rows"]
                run.log(f"round {r} {m:22s} {res['seconds']:7.2f} s  {res['wal_bytes'] / 1e6:8.0f} MB WAL")
                if r > 0:
                    results.append(res)
        summary = {}
        for m in methods:
            secs = [x["seconds"] for x in results if x["method"] == m]
            summary[m] = {"median": statistics.median(secs), "best": min(secs),
                          "rows_per_second_median": rows / statistics.median(secs),
                          "peak_rss_kib_max": max(x["peak_rss_kib"] for x in results if x["method"] == m)}
        out = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "rows": rows,
               "scale": args.scale, "machine": run.machine(), "server": run.server_facts(server),
               "adbc_and_pyarrow": versions, "adbc_into_standard_table": adbc_standard,
               "summary": summary, "runs": results}
        run.OUT_DIR.mkdir(exist_ok=True)
        path = run.OUT_DIR / f"parquet-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
        path.write_text(json.dumps(out, indent=2))
        print(f"\nlineitem SF {args.scale}, {rows:,} rows, median of {args.repeat} (best), ADBC/pyarrow {versions}")
        for m in methods:
            s = summary[m]
            print(f"  {m:22s} {s['median']:6.2f} s ({s['best']:.2f})  {s['rows_per_second_median'] / 1e6:5.2f} M rows/s")
        p = summary["inrush_parquet"]["median"]
        if args.before:
            for kind in ("parquet", "csv"):
                now, then = summary[f"inrush_{kind}"]["median"], summary[f"inrush_{kind}_before"]["median"]
                print(f"  inrush / inrush_before from {kind}: {now / then:.3f} median (above 1.0: slower than before)")
        else:
            print(f"  inrush parquet vs csv: {summary['inrush_csv']['median'] / p:.2f}x; "
                  f"vs adbc (same Arrow-typed table): {summary['adbc']['median'] / summary['inrush_parquet_arrow']['median']:.2f}x")
            print(f"  adbc into the standard table: {adbc_standard}")
        print(f"  raw figures: {path}")
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
