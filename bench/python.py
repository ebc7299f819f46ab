#!/usr/bin/env python3
"""Python loaders against inrush's module, interleaved over rounds on one private PostgreSQL
(see run.py: default durability, Unix socket, CHECKPOINT before every load). Every method runs
in its own process, which first reads the rows into memory (untimed: a pyarrow Table, a pandas
or a polars DataFrame), then times only the load call.

  inrush_table       inrush.load(pyarrow Table)
  inrush_pandas      inrush.load(pandas DataFrame)   (through pyarrow.Table.from_pandas, timed;
                     lineitem's decimals as float64 in every pandas frame, as read_csv gives them)
  inrush_polars      inrush.load(polars DataFrame)
  inrush_file        the inrush command on the Parquet file (or CSV) of the same rows
  adbc               adbc_driver_postgresql's adbc_ingest of the pyarrow Table (one COPY stream)
  polars_adbc        polars DataFrame.write_database(engine="adbc")
  to_sql             pandas DataFrame.to_sql (SQLAlchemy + psycopg), default method   } on the
  to_sql_multi       pandas to_sql(method="multi", chunksize=1000)                    } first
  psycopg_write_row  psycopg's COPY with write_row per row                            } --slice rows,
                                                                                       extrapolated
Datasets: lineitem (TPC-H SF --scale: into a table typed like the Arrow schema, which ADBC
needs, and inrush_table_std into the standard one) and sqlbulkcopy (500k rows of 3 int +
3 varchar(100) as bigint/text).

The module is built in release mode into .venv first (maturin develop --release).
Usage: python3 bench/python.py [--dataset lineitem|sqlbulkcopy] [--scale 1] [--repeat 2]
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
import parquet  # noqa: E402  (lineitem: generation and its two tables)
import run  # noqa: E402  (the harness: private server, children, machine facts)

SQLBULKCOPY = "sqlbulkcopy_arrow"

# Reads the rows into memory, then times the load. argv: method, data, uri/conninfo, table, slice
CLIENT = r"""
import sys, time
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.csv as pcsv
method, data, to, table, cut = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
if data.endswith(".parquet"):
    rows = pq.read_table(data)
else:
    names = ["id", "id2", "id3", "s1", "s2", "s3"]
    rows = pcsv.read_csv(data, read_options=pcsv.ReadOptions(column_names=names))
# Plain strings: the ADBC driver's COPY writer takes string or large_string, not string_view.
rows = rows.cast(pa.schema([pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type) for f in rows.schema]))
if method in ("to_sql", "to_sql_multi", "psycopg_write_row"):
    rows = rows.slice(0, cut)
if method in ("inrush_pandas", "to_sql", "to_sql_multi", "psycopg_write_row"):
    import pandas as pd
    # Money as float64, as pandas reads it from CSV: to_sql sends Decimal objects as VARCHAR,
    # which a numeric column refuses (and from_pandas spends ~40 s of 48 on them, measured).
    decimals = [i for i, f in enumerate(rows.schema) if pa.types.is_decimal(f.type)]
    for i in decimals:
        rows = rows.set_column(i, rows.schema.field(i).name, rows.column(i).cast(pa.float64()))
    rows = rows.to_pandas()
elif method in ("inrush_polars", "polars_adbc"):
    import polars as pl
    rows = pl.from_arrow(rows)
t = time.perf_counter()
if method.startswith("inrush"):
    import inrush
    n = inrush.load(rows, to=to, table=table, no_analyze=True).rows
elif method == "adbc":
    import adbc_driver_postgresql.dbapi as pg
    with pg.connect(to) as conn:
        with conn.cursor() as cur:
            n = cur.adbc_ingest(table, rows, mode="append")
        conn.commit()
elif method == "polars_adbc":
    n = rows.write_database(table, to, engine="adbc", if_table_exists="append")
elif method.startswith("to_sql"):
    import sqlalchemy
    engine = sqlalchemy.create_engine(to.replace("postgresql://", "postgresql+psycopg://"))
    multi = dict(method="multi", chunksize=1000) if method == "to_sql_multi" else {}
    rows.to_sql(table, engine, if_exists="append", index=False, **multi)
    n = len(rows)
elif method == "psycopg_write_row":
    import psycopg
    with psycopg.connect(to) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY {table} FROM STDIN") as copy:
            for row in rows.itertuples(index=False):
                copy.write_row(row)
    n = len(rows)
print(time.perf_counter() - t, n)
"""

SLICED = ("to_sql", "to_sql_multi", "psycopg_write_row")


def python() -> str:
    return str(run.REPO / ".venv/bin/python")


def ensure_clients() -> str:
    need = "import adbc_driver_postgresql, pyarrow, pandas, polars, psycopg, sqlalchemy, maturin"
    if subprocess.run([python(), "-c", need], capture_output=True).returncode != 0:
        run.log("installing the Python clients into .venv")
        run.run([python(), "-m", "pip", "install", "--quiet", "adbc-driver-postgresql", "pyarrow", "pandas",
                 "polars", "psycopg[binary]", "sqlalchemy", "maturin"])
    run.log("building the inrush module (release) into .venv")
    subprocess.run([str(run.REPO / ".venv/bin/maturin"), "develop", "--release", "--locked"], cwd=run.REPO,
                   check=True, env={**run.client_env(), "VIRTUAL_ENV": str(run.REPO / ".venv")})
    return run.run([python(), "-c", "import adbc_driver_postgresql as a, pyarrow, pandas, polars, psycopg, "
                    "sqlalchemy; print('adbc', a.__version__, 'pyarrow', pyarrow.__version__, 'pandas', "
                    "pandas.__version__, 'polars', polars.__version__, 'psycopg', psycopg.__version__)"]).stdout.strip()


def create_sqlbulkcopy(server: run.Server) -> None:
    server.sql(f"DROP TABLE IF EXISTS {SQLBULKCOPY}",
               f"CREATE TABLE {SQLBULKCOPY} (id bigint, id2 bigint, id3 bigint, s1 text, s2 text, s3 text)",
               "CHECKPOINT")


def measure(method: str, server: run.Server, inrush: Path, data: Path, table: str, cut: int) -> dict:
    if table == SQLBULKCOPY:
        create_sqlbulkcopy(server)
    else:
        parquet.create(server, table)
    uri = f"postgresql:///postgres?host={server.sock}&port={run.PORT}&user=postgres"
    if method == "inrush_file":
        cmd = [str(inrush), "load", str(data), "--to", server.conninfo, "--table", table, "--json",
               "--no-progress", "--no-analyze"]
        t = time.perf_counter()
        fin = run.Child(cmd).wait()
        seconds = time.perf_counter() - t
        fin.check()
    else:
        fin = run.Child([python(), "-c", CLIENT, method.removesuffix("_std"), str(data), uri, table, str(cut)]).wait()
        fin.check()
        seconds = float(fin.stdout.split()[0])
    n = int(server.sql(f"SELECT count(*) FROM {table}"))
    return {"method": method, "seconds": seconds, "rows": n, "peak_rss_kib": fin.maxrss_kib}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=("lineitem", "sqlbulkcopy"), default="lineitem")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rows", type=int, default=500_000, help="sqlbulkcopy rows")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--slice", type=int, default=50_000, help="rows for the slow per-row methods")
    ap.add_argument("--inrush", type=Path, default=run.REPO / "target/release/inrush")
    ap.add_argument("--pg-bin")
    args = ap.parse_args()
    if not args.inrush.exists():
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "inrush"], cwd=run.REPO, check=True)
    versions = ensure_clients()
    server = run.Server(run.find_pg_bin(args.pg_bin))
    try:
        server.start()
        if args.dataset == "lineitem":
            data, _ = parquet.generate(args.scale, server.scratch)
            table = parquet.ARROW
            methods = ["inrush_table", "inrush_table_std", "inrush_pandas", "inrush_polars", "inrush_file",
                       "adbc", "polars_adbc", *SLICED]
        else:
            data = server.scratch / "sqlbulkcopy.csv"
            run.run([str(args.inrush), "gen", "sqlbulkcopy", "--rows", str(args.rows), "--output", str(data)])
            table = SQLBULKCOPY
            methods = ["inrush_table", "inrush_pandas", "inrush_polars", "inrush_file", "adbc", "polars_adbc",
                       *SLICED]
        results = []
        # Round 0 is untimed: a new cluster zero-fills each WAL segment the first time it is
        # used, which slowed whichever method came first by a third.
        for r in range(args.repeat + 1):
            for m in methods:
                t = parquet.STANDARD if m.endswith("_std") else table
                res = measure(m, server, args.inrush, data, t, args.slice)
                run.log(f"round {r} {m:18s} {res['seconds']:8.2f} s  {res['rows']:>9,} rows")
                if r > 0:
                    results.append(res)
        full = max(x["rows"] for x in results)
        summary = {}
        for m in methods:
            runs = [x for x in results if x["method"] == m]
            secs = statistics.median(x["seconds"] for x in runs)
            # Per-row methods ran on a slice: their time for every row, at the same rate.
            scaled = secs * full / runs[0]["rows"]
            summary[m] = {"median": secs, "rows": runs[0]["rows"], "seconds_for_all_rows": scaled,
                          "peak_rss_kib_max": max(x["peak_rss_kib"] for x in runs)}
        out = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "dataset": args.dataset,
               "rows": full, "machine": run.machine(), "server": run.server_facts(server), "clients": versions,
               "summary": summary, "runs": results}
        run.OUT_DIR.mkdir(exist_ok=True)
        path = run.OUT_DIR / f"python-{args.dataset}-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
        path.write_text(json.dumps(out, indent=2))
        base = summary["inrush_table"]["seconds_for_all_rows"]
        print(f"\n{args.dataset}, {full:,} rows, median of {args.repeat}; {versions}")
        for m in methods:
            s = summary[m]
            note = f"  (measured on {s['rows']:,} rows)" if s["rows"] != full else ""
            print(f"  {m:18s} {s['seconds_for_all_rows']:8.2f} s  {s['seconds_for_all_rows'] / base:6.2f}x "
                  f"inrush_table  {s['peak_rss_kib_max'] / 1024:6.0f} MB peak (rows in memory included){note}")
        print(f"  raw figures: {path}")
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, run.interrupt)  # the same way out as Ctrl-C: the server stops
    sys.exit(main())
