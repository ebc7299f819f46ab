"""inrush.load behaving like a Python library: exceptions by kind, bad rows with where and why,
the GIL released, Ctrl-C rolled back into KeyboardInterrupt, progress and logging, bounded
memory for a stream larger than what it holds, files by path, plan(), the command."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pyarrow as pa
import pytest

import inrush
from conftest import copy_csv, rows

BIN = os.path.join(os.path.dirname(sys.executable), "inrush")


def test_a_bad_value_raises_with_where_and_why_and_commits_nothing(db, server, table):
    db.execute(f"CREATE TABLE {table} (id int, n integer)")
    data = pa.table({"id": [1, 2, 3], "n": pa.array([5, 2**40, 7], pa.int64())})
    with pytest.raises(inrush.BadInputError) as raised:
        inrush.load(data, to=server, table=table, name="orders_df")
    error = raised.value
    assert (error.file, error.line, error.column, error.value) == ("orders_df", 2, "n", "1099511627776")
    assert "out of range for type integer" in error.reason
    assert error.exit_code == 4
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]


def test_max_errors_loads_the_good_rows_and_lists_the_bad(db, server, table, tmp_path):
    db.execute(f"CREATE TABLE {table} (id int, n smallint NOT NULL)")
    db.execute(f"CREATE TABLE {table}_copy (id int, n smallint NOT NULL)")
    data = pa.table({"id": [1, 2, 3, 4], "n": pa.array([5, 70000, None, 8], pa.int64())})
    result = inrush.load(data, to=server, table=table, max_errors=10, rejects=tmp_path / "bad.csv")
    assert (result.rows, result.rejected) == (2, 2)
    assert [(r.line, r.column) for r in result.rejects] == [(2, "n"), (3, "n")]
    assert "out of range" in result.rejects[0].reason
    assert "null value" in result.rejects[1].reason
    copy_csv(db, f"{table}_copy", b"1,5\n4,8\n")
    assert rows(db, f"SELECT * FROM {table} ORDER BY 1") == rows(db, f"SELECT * FROM {table}_copy ORDER BY 1")
    # The refused rows as CSV under a header, to fix and load again.
    assert (tmp_path / "bad.csv").read_text().splitlines() == ['"id","n"', '"2","70000"', '"3",']


def test_on_conflict_merges_a_dataframe_in_its_row_order(db, server, table):
    # A DataFrame's rows carry their place for the merge as a file's do: skip keeps the first
    # of a key, update the last (a columnar load once sent no place, and every row failed).
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, s text)")
    db.execute(f"INSERT INTO {table} VALUES (1, 'old')")
    data = pa.table({"id": [1, 2, 2, 3], "s": ["new", "a", "b", "c"]})
    inrush.load(data, to=server, table=table, on_conflict="skip")
    assert rows(db, f"SELECT * FROM {table} ORDER BY 1") == [("1", "old"), ("2", "a"), ("3", "c")]
    inrush.load(data, to=server, table=table, on_conflict="update")
    assert rows(db, f"SELECT * FROM {table} ORDER BY 1") == [("1", "new"), ("2", "b"), ("3", "c")]


def test_usage_and_server_errors_are_their_own_classes(server, table):
    data = pa.table({"a": [1]})
    with pytest.raises(inrush.UsageError, match="--resume cannot be combined with a DataFrame"):
        inrush.load(data, to=server, table=table, resume=True)
    with pytest.raises(inrush.UsageError, match="invalid value 'sometimes'"):
        inrush.load(data, to=server, table=table, on_conflict="sometimes")
    with pytest.raises(inrush.UsageError, match="cannot open"):
        inrush.load("/no/such/file.csv", to=server, table=table)
    with pytest.raises(TypeError):
        inrush.load(data, to=server, table=table, no_such_option=True)
    with pytest.raises(inrush.ServerError) as raised:
        inrush.load(data, to="postgresql://nobody@127.0.0.1:9/none?connect_timeout=2", table=table)
    assert raised.value.exit_code == 3


def test_files_by_path_as_copy_reads_them(db, server, table, tmp_path):
    db.execute(f"CREATE TABLE {table} (id int, s text)")
    db.execute(f"CREATE TABLE {table}_copy (id int, s text)")
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("id,s\n1,x\n2,\n")
    second.write_text('id,s\n3,"q,""r"\n')
    assert inrush.load([first, str(second)], to=server, table=table, header=True).rows == 3
    copy_csv(db, f"{table}_copy", b'1,x\n2,\n3,"q,""r"\n')
    assert rows(db, f"SELECT * FROM {table} ORDER BY 1") == rows(db, f"SELECT * FROM {table}_copy ORDER BY 1")


def test_the_gil_is_released_during_the_load(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint, s text)")
    n = 400_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array(["x" * 50] * n)})
    counted, running = [0], threading.Event()
    running.set()

    def count():
        while running.is_set():
            counted[0] += 1

    thread = threading.Thread(target=count)
    thread.start()
    try:
        before = counted[0]
        inrush.load(data, to=server, table=table)
        during = counted[0] - before
    finally:
        running.clear()
        thread.join()
    # Held for the whole load, the GIL would let the thread run only between polls.
    assert during > 10_000


def test_progress_callback_and_logging(db, server, table, caplog):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    phases = []
    with caplog.at_level(logging.INFO, logger="inrush"):
        result = inrush.load(
            pa.table({"id": list(range(1000))}),
            to=server,
            table=table,
            progress=lambda phase, rows, read, total: phases.append(phase) if phase else None,
        )
    assert phases[0] == "inspect" and "load" in phases and phases[-1] == "done"
    assert any("loaded 1,000 rows" in r.getMessage() for r in caplog.records)
    assert "rows=1000" in repr(result) and "rejected=0" in repr(result)


def test_plan_reads_the_catalog(db, server, table):
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, s text)")
    db.execute(f"CREATE INDEX ON {table} (s)")
    plan = inrush.plan(to=server, table=table)
    assert len(plan["indexes"]) == 2
    assert plan["after"] == "vacuum_analyze"
    assert inrush.plan(to=server, table=table, after="analyze")["after"] == "analyze"
    assert inrush.plan(to=server, table=table, keep_indexes=True, no_analyze=True)["after"] == "none"


def test_the_command_is_installed():
    assert subprocess.run([BIN, "--version"], capture_output=True, text=True).stdout.startswith("inrush ")
    refused = subprocess.run([BIN, "load", "x.csv"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--table" in refused.stderr


def run_python(code, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_ctrl_c_rolls_back_then_raises_keyboard_interrupt(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    # An endless, slow stream: the load is surely running when SIGINT comes.
    child = run_python(
        f"""
        import itertools, sys, time
        import pyarrow as pa
        import inrush
        def batches():
            for i in itertools.count():
                if i == 3:
                    print("loading", flush=True)
                time.sleep(0.05)
                yield pa.record_batch({{"id": pa.array(range(1000), pa.int64())}})
        try:
            inrush.load(batches(), to={server!r}, table={table!r})
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(0)
        sys.exit(1)
        """
    )
    assert child.stdout.readline().strip() == "loading"
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert "KeyboardInterrupt" in out
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]


def test_a_stream_larger_than_memory_held_is_loaded_in_bounded_memory(db, server, table):
    """4M rows (about 450 MB of Arrow data) made batch by batch: the load holds a few batches,
    never the stream."""
    db.execute(f"CREATE TABLE {table} (id bigint, s text)")
    child = run_python(
        f"""
        import resource
        import pyarrow as pa
        import inrush
        rows, batch = 4_000_000, 50_000
        def batches():
            for start in range(0, rows, batch):
                ids = pa.array(range(start, start + batch), pa.int64())
                yield pa.record_batch({{"id": ids, "s": pa.array(["%0100d" % start] * batch)}})
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = inrush.load(batches(), to={server!r}, table={table!r}, no_analyze=True)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(result.rows, (peak - base) // 1024)
        """
    )
    out, err = child.communicate(timeout=600)
    assert child.returncode == 0, err
    loaded, grew_mb = map(int, out.split())
    assert loaded == 4_000_000
    assert grew_mb < 300, f"the load grew the process by {grew_mb} MB"
    assert rows(db, f"SELECT count(*), count(DISTINCT id) FROM {table}") == [("4000000", "4000000")]


def test_progress_bar_with_tqdm(db, server, table, capsys):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    assert inrush.load(pa.table({"id": list(range(5000))}), to=server, table=table, progress=True).rows == 5000
    assert "rows" in capsys.readouterr().err


def test_a_frame_into_sqlite_as_import_reads_its_csv(tmp_path):
    """The same target-neutral path for the other engines: a DataFrame into a SQLite table holds
    what the sqlite3 shell's .import of the frame's CSV stores."""
    import sqlite3

    path = tmp_path / "local.db"
    ddl = "(id INTEGER, price REAL, name TEXT, day TEXT)"
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE t {ddl} STRICT")
        # Not STRICT: .import writes an empty field as '', which a STRICT REAL column refuses.
        conn.execute(f"CREATE TABLE t_import {ddl}")
    data = pa.table(
        {
            "id": [1, 2, 3],
            "price": [1.5, None, -0.25],
            "name": ["a", "b,c", None],
            "day": ["2024-01-01", "2024-02-29", None],
        }
    )
    assert inrush.load(data, to=f"sqlite:///{path}", table="t").rows == 3
    csv_file = tmp_path / "t.csv"
    csv_file.write_text('1,1.5,a,2024-01-01\n2,,"b,c",2024-02-29\n3,-0.25,,\n')
    subprocess.run(["sqlite3", str(path), f".import --csv {csv_file} t_import"], check=True)
    with sqlite3.connect(path) as conn:
        # .import stores an empty field as '' where inrush stores NULL: compare with that noted.
        ours = conn.execute("SELECT id, price, name, day FROM t ORDER BY id").fetchall()
        theirs = conn.execute(
            "SELECT id, nullif(price, ''), nullif(name, ''), nullif(day, '') FROM t_import ORDER BY id"
        ).fetchall()
    assert ours == theirs


def test_a_producer_that_raises_fails_the_load_with_its_error(db, server, table):
    db.execute(f"CREATE TABLE {table} (a bigint)")

    def batches():
        for _ in range(5):
            yield pa.record_batch({"a": pa.array(range(1000), pa.int64())})
        raise ValueError("the producer broke")

    with pytest.raises(inrush.InrushError, match="the producer broke"):
        inrush.load(batches(), to=server, table=table)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]


def test_a_frame_without_pyarrow_says_which_extra_brings_it(monkeypatch, table):
    import pandas as pd

    # None in sys.modules makes `import pyarrow` raise ImportError, as on a machine without it.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(inrush.UsageError, match=r"pip install 'inrush\[pandas\]'"):
        inrush.load(pd.DataFrame({"id": [1]}), to="sqlite:///unused.db", table=table)
