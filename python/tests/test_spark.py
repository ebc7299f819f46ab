"""Distributed writes: the two-phase protocol a Spark job's tasks and driver follow (tried
with plain loads, attempt by attempt), then real Spark (``local[2,4]``: two cores, a task
retried up to three times) writing through ``format("inrush")``. Each Spark table is compared
row for row with the same DataFrame loaded by the module in one process."""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa
import pytest

import inrush
from conftest import rows
from inrush import _inrush


def prepared(db, job=""):
    """The names of the transactions prepared for inrush (of `job`)."""
    return [r[0] for r in rows(db, f"SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'inrush_{job}%' ORDER BY 1")]


def logged_jobs(db):
    exists = rows(db, "SELECT to_regclass('inrush.joint_commits')")[0][0]
    return [] if exists is None else rows(db, "SELECT load_id FROM inrush.joint_commits")


def numbers(start, stop):
    return pa.table({"id": pa.array(range(start, stop), pa.int64())})


def begin(server, table, job, **options):
    return json.loads(_inrush.job(server, job, "begin", table=table, **options))["parts"]


def part(server, table, job, name, data, staged=False):
    how = {"stage" if staged else "prepare": f"{job}:{name}"}
    result = inrush.load(data, to=server, table=table, connections=1, **how)
    return result.summary["prepared"]


def commit(server, job, winners):
    return json.loads(_inrush.job(server, job, "commit", winners=winners))


def staging_tables(db, job=""):
    return rows(db, f"SELECT relname FROM pg_class WHERE relname LIKE 'stage_{job}%' ORDER BY 1")


def test_only_the_winning_attempt_of_a_part_lands(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY)")
    job = "jobwin1"
    assert begin(server, table, job) == "prepared"
    first = part(server, table, job, "p0a0", numbers(0, 100))
    # A speculative attempt of the same part: the same keys, in a transaction of its own.
    second = part(server, table, job, "p1a0", numbers(100, 200))
    assert len(first) == 1 and len(second) == 1
    assert prepared(db, job) == sorted(first + second)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)], "nothing visible before the decision"
    outcome = commit(server, job, first)
    assert (outcome["committed"], outcome["rolled_back"]) == (first, second)
    assert rows(db, f"SELECT min(id), max(id), count(*) FROM {table}") == [("0", "99", "100")]
    assert prepared(db) == [] and logged_jobs(db) == []


def test_a_part_that_prepares_after_its_job_decided_rolls_itself_back(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    for staged in (False, True):
        job = f"jobstraggler{int(staged)}"
        begin(server, table, job, parts="staged" if staged else "prepared")
        commit(server, job, [])
        with pytest.raises(inrush.ServerError, match="has ended"):
            part(server, table, job, "p0a1", numbers(0, 10), staged=staged)
    assert prepared(db) == [] and staging_tables(db) == []
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]


def test_an_aborted_job_leaves_nothing(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    job = "jobabort"
    begin(server, table, job)
    gids = part(server, table, job, "p0a0", numbers(0, 10))
    outcome = json.loads(_inrush.job(server, job, "abort"))
    assert (outcome["committed"], outcome["rolled_back"]) == ([], gids)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]
    assert prepared(db) == [] and logged_jobs(db) == []


def test_recover_finishes_a_decision_its_driver_did_not_carry_out(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    job = "jobrecover"
    begin(server, table, job)
    kept = part(server, table, job, "p0a0", numbers(0, 10))
    lost = part(server, table, job, "p0a1", numbers(0, 10))
    # The driver logged its decision, then died before any COMMIT PREPARED.
    db.execute(
        "UPDATE inrush.joint_commits SET decided = true, winners = %s WHERE load_id = %s",
        (kept, job),
    )
    assert _inrush.main(["inrush", "recover", "--to", server]) == 0
    assert rows(db, f"SELECT count(*) FROM {table}") == [("10",)]
    assert prepared(db) == [] and logged_jobs(db) == []
    assert lost  # rolled back, not committed: the count says so


def test_a_commit_whose_parts_vanished_lands_nothing(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    job = "jobvanished"
    begin(server, table, job)
    kept = part(server, table, job, "p0a0", numbers(0, 10))
    gone = part(server, table, job, "p1a0", numbers(10, 20))
    db.execute(f"ROLLBACK PREPARED '{gone[0]}'")
    with pytest.raises(inrush.ServerError, match="no longer prepared"):
        commit(server, job, kept + gone)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]
    assert prepared(db) == [] and logged_jobs(db) == []


def test_an_abort_after_the_decision_finishes_it_instead(db, server, table):
    # Spark follows a commit that failed part way with an abort: the logged decision stands.
    db.execute(f"CREATE TABLE {table} (id bigint)")
    job = "jobabortlate"
    begin(server, table, job)
    kept = part(server, table, job, "p0a0", numbers(0, 10))
    lost = part(server, table, job, "p0a1", numbers(0, 10))
    db.execute(
        "UPDATE inrush.joint_commits SET decided = true, winners = %s WHERE load_id = %s",
        (kept, job),
    )
    outcome = json.loads(_inrush.job(server, job, "abort"))
    assert (outcome["committed"], outcome["rolled_back"]) == (kept, lost)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("10",)]
    assert prepared(db) == [] and logged_jobs(db) == []


@pytest.mark.parametrize("parts", ["prepared", "staged"])
def test_a_streaming_batch_lands_once_however_often_it_is_written(db, server, table, parts):
    db.execute(f"CREATE TABLE {table} (id bigint)")
    batch = {"query": f"q-{parts}", "batch": 7}
    job = f"jobbatch{parts}"
    staged = parts == "staged"
    for run in range(2):
        begun = json.loads(_inrush.job(server, job, "begin", table=table, parts=parts, **batch))
        assert begun["done"] == (run == 1), "the ledger knows the batch after its first commit"
        if run == 0:
            kept = part(server, table, job, "p0a0r0", numbers(0, 10), staged=staged)
        else:  # A replay's tasks load nothing; one that loads anyway takes its part back.
            with pytest.raises(inrush.ServerError, match="has ended"):
                part(server, table, job, "p0a0r1", numbers(0, 10), staged=staged)
        outcome = json.loads(_inrush.job(server, job, "commit", winners=kept, **batch))
        assert outcome["done"] == (run == 1)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("10",)]
    assert rows(db, f"SELECT query, batch, job FROM inrush.stream_batches WHERE query = 'q-{parts}'") == [
        (f"q-{parts}", "7", job)
    ]
    assert prepared(db) == [] and staging_tables(db) == [] and logged_jobs(db) == []


def indexes(db, table):
    return [r[0] for r in rows(db, f"SELECT indexname FROM pg_indexes WHERE tablename = '{table}' ORDER BY 1")]


def analyzed(db, table):
    return rows(db, f"SELECT last_analyze IS NOT NULL, last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = '{table}'")


@pytest.mark.parametrize("parts", ["prepared", "staged"])
def test_a_job_into_an_empty_table_builds_its_secondary_indexes_once_after(db, server, table, parts):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, note text)")
    db.execute(f"CREATE INDEX {table}_note ON {table} (note)")
    job = f"jobplan{parts}"
    begun = json.loads(_inrush.job(server, job, "begin", table=table, parts=parts))
    assert indexes(db, table) == [f"{table}_pkey"], "the key stays, the secondary index waits"
    assert any("dropped for the job" in n for n in begun["notes"])
    data = pa.table({"id": pa.array(range(100), pa.int64()), "note": pa.array([f"n{i % 7}" for i in range(100)])})
    kept = part(server, table, job, "p0a0", data, staged=parts == "staged")
    outcome = commit(server, job, kept)
    assert indexes(db, table) == [f"{table}_note", f"{table}_pkey"]
    assert rows(db, f"SELECT count(*) FROM {table} WHERE note = 'n3'") == [("14",)]
    assert any(n.startswith("VACUUM (ANALYZE)") for n in outcome["notes"]), outcome["notes"]
    assert analyzed(db, table) == [("True", "True")]
    assert rows(db, "SELECT count(*) FROM inrush.ddl_journal") == [("0",)]


def test_an_aborted_or_abandoned_job_puts_its_indexes_back(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint, note text)")
    db.execute(f"CREATE INDEX {table}_note ON {table} (note)")
    begin(server, table, "jobplanabort")
    assert indexes(db, table) == []
    _inrush.job(server, "jobplanabort", "abort")
    assert indexes(db, table) == [f"{table}_note"]
    # A driver killed while its tasks wrote, before deciding: `recover` takes every part back
    # and puts the index back.
    begin(server, table, "jobplandead")
    assert indexes(db, table) == []
    part(server, table, "jobplandead", "p0a0", numbers(0, 10))
    assert _inrush.main(["inrush", "recover", "--to", server]) == 0
    assert indexes(db, table) == [f"{table}_note"]
    assert logged_jobs(db) == [] and prepared(db) == [] and rows(db, f"SELECT count(*) FROM {table}") == [("0",)]
    # One killed after logging its decision: `recover` lands exactly the winners, then builds.
    begin(server, table, "jobplandecided")
    kept = part(server, table, "jobplandecided", "p0a0", numbers(0, 10))
    part(server, table, "jobplandecided", "p1a0", numbers(10, 20))
    db.execute(
        "UPDATE inrush.joint_commits SET decided = true, winners = %s WHERE load_id = %s",
        (kept, "jobplandecided"),
    )
    assert _inrush.main(["inrush", "recover", "--to", server]) == 0
    assert indexes(db, table) == [f"{table}_note"] and prepared(db) == []
    assert rows(db, f"SELECT count(*), max(id) FROM {table}") == [("10", "9")]


def test_a_job_keeps_its_indexes_when_asked_or_when_the_table_has_rows(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint, note text)")
    db.execute(f"CREATE INDEX {table}_note ON {table} (note)")
    json.loads(_inrush.job(server, "jobkeep", "begin", table=table, keep_indexes=True))
    assert indexes(db, table) == [f"{table}_note"]
    commit(server, "jobkeep", [])
    db.execute(f"INSERT INTO {table} VALUES (1, 'x')")
    begin(server, table, "jobfull")
    assert indexes(db, table) == [f"{table}_note"], "the job's size is unknown: a table with rows keeps them"
    commit(server, "jobfull", [])


@pytest.mark.parametrize(
    "options, refused",
    [
        ({"create": True}, "--create"),
        ({"truncate": True}, "--truncate"),
        ({"on_conflict": "skip"}, "--on-conflict"),
        ({"disable_triggers": True}, "--disable-triggers"),
    ],
)
def test_a_part_refuses_what_would_break_its_job(server, table, options, refused):
    with pytest.raises(inrush.UsageError, match=f"--prepare cannot be combined with {refused}"):
        inrush.load(numbers(0, 1), to=server, table=table, prepare="job:p0a0", **options)


def test_staged_parts_move_in_one_transaction_and_losers_are_dropped(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, note text DEFAULT 'default')")
    db.execute(f"INSERT INTO {table} VALUES (-1, 'old')")
    job = "jobstaged"
    assert begin(server, table, job, parts="staged") == "staged"
    kept = part(server, table, job, "p0a1", numbers(0, 50), staged=True)
    lost = part(server, table, job, "p0a0", numbers(0, 50), staged=True)
    assert kept == ['inrush."stage_jobstaged_p0a1"']
    assert rows(db, f"SELECT count(*) FROM {table}") == [("1",)], "nothing visible before the decision"
    outcome = commit(server, job, kept)
    assert (outcome["committed"], outcome["rolled_back"]) == (kept, lost)
    # Columns the parts did not load take their defaults in the move.
    assert rows(db, f"SELECT count(*), min(id), max(id), count(*) FILTER (WHERE note = 'default') FROM {table}") == [
        ("51", "-1", "49", "50")
    ]
    assert staging_tables(db) == [] and logged_jobs(db) == []


def test_an_overwrite_is_staged_and_empties_the_table_in_the_move(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY)")
    db.execute(f"INSERT INTO {table} SELECT generate_series(1000, 1009)")
    job = "joboverwrite"
    assert begin(server, table, job, overwrite=True) == "staged"
    kept = part(server, table, job, "p0a0", numbers(0, 5), staged=True)
    commit(server, job, kept)
    assert rows(db, f"SELECT id FROM {table} ORDER BY id") == [(str(i),) for i in range(5)]
    with pytest.raises(inrush.UsageError, match="staged, not prepared"):
        begin(server, table, "jobbad", overwrite=True, parts="prepared")


def test_a_staged_move_that_breaks_a_key_lands_nothing(db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY)")
    job = "jobdup"
    begin(server, table, job, parts="staged")
    # Two partitions that hold the same key: each part is checked alone, the move meets both.
    first = part(server, table, job, "p0a0", numbers(0, 10), staged=True)
    second = part(server, table, job, "p1a0", numbers(5, 15), staged=True)
    with pytest.raises(inrush.ServerError, match="duplicate key"):
        commit(server, job, first + second)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]
    assert staging_tables(db) == [] and logged_jobs(db) == []


def test_a_job_is_refused_where_the_engine_has_no_two_phase_commit(tmp_path):
    with pytest.raises(inrush.UsageError, match="--prepare"):
        inrush.load(numbers(0, 1), to=f"sqlite:///{tmp_path}/x.db", table="t", prepare="job:p0a0")
    with pytest.raises(inrush.UsageError, match="PostgreSQL and MariaDB/MySQL only"):
        _inrush.job(f"sqlite:///{tmp_path}/x.db", "job", "begin", table="t")


# --- MariaDB: parts as XA transactions ------------------------------------------------------

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARIADB = os.path.join(REPO, "scripts", "mariadb.sh")


@pytest.fixture(scope="module")
def mariadb():
    """A private MariaDB for the module (scripts/mariadb.sh, as the Rust tests start theirs)."""
    import shutil
    import socket
    import subprocess
    import tempfile

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Directly under /tmp: the server runs as its own user, who must reach the directory.
    datadir = tempfile.mkdtemp(prefix="inrush-spark-mariadb-")
    subprocess.run([MARIADB, "install"], check=True, capture_output=True)
    started = subprocess.run([MARIADB, "start", datadir, str(port)], check=True, capture_output=True, text=True)
    url = started.stdout.strip().splitlines()[-1]

    def sql(statement):
        done = subprocess.run(
            [MARIADB, "client", datadir, "--batch", "--skip-column-names", "-e", statement],
            check=True,
            capture_output=True,
            text=True,
        )
        return [tuple(line.split("\t")) for line in done.stdout.splitlines()]

    yield url, sql
    subprocess.run([MARIADB, "stop", datadir], check=True, capture_output=True)
    shutil.rmtree(datadir, ignore_errors=True)


def xa_prepared(sql, job=""):
    return sorted(r[3] for r in sql("XA RECOVER") if r[3].startswith(f"inrush_{job}"))


def test_mariadb_parts_are_xa_transactions_and_only_winners_land(mariadb, table):
    url, sql = mariadb
    sql(f"CREATE TABLE {table} (id bigint PRIMARY KEY)")
    job = "mjobwin"
    assert begin(url, table, job) == "prepared"
    kept = part(url, table, job, "p0a1", numbers(0, 100))
    # A speculative attempt of another part (one of the same keys would wait on the first's
    # row locks, which a prepared transaction keeps).
    lost = part(url, table, job, "p1a0", numbers(100, 200))
    assert kept == [f"inrush_{job}_p0a1_0"] and xa_prepared(sql, job) == sorted(kept + lost)
    assert sql(f"SELECT count(*) FROM {table}") == [("0",)], "nothing visible before the decision"
    outcome = commit(url, job, kept)
    assert (outcome["committed"], outcome["rolled_back"]) == (kept, lost)
    assert sql(f"SELECT count(*), min(id), max(id) FROM {table}") == [("100", "0", "99")]
    assert xa_prepared(sql) == [] and sql("SELECT count(*) FROM inrush_joint_commits") == [("0",)]
    # A straggler that prepares after the decision takes itself back.
    with pytest.raises(inrush.ServerError, match="has ended"):
        part(url, table, job, "p0a2", numbers(100, 110))
    assert xa_prepared(sql) == [] and sql(f"SELECT count(*) FROM {table}") == [("100",)]


def test_mariadb_recover_finishes_a_decision_and_a_batch_lands_once(mariadb, table):
    url, sql = mariadb
    sql(f"CREATE TABLE {table} (id bigint)")
    job = "mjobrecover"
    begin(url, table, job)
    kept = part(url, table, job, "p0a0", numbers(0, 10))
    part(url, table, job, "p1a0", numbers(0, 10))
    sql(f"UPDATE inrush_joint_commits SET decided = TRUE, winners = '{kept[0]}' WHERE load_id = '{job}'")
    assert _inrush.main(["inrush", "recover", "--to", url]) == 0
    assert sql(f"SELECT count(*) FROM {table}") == [("10",)] and xa_prepared(sql) == []
    batch = {"query": "mq", "batch": 3}
    for run in range(2):
        begun = json.loads(_inrush.job(url, "mjobbatch", "begin", table=table, **batch))
        assert begun["done"] == (run == 1)
        winners = part(url, table, "mjobbatch", "p0a0", numbers(10, 20)) if run == 0 else []
        assert json.loads(_inrush.job(url, "mjobbatch", "commit", winners=winners, **batch))["done"] == (run == 1)
    assert sql(f"SELECT count(*) FROM {table}") == [("20",)]


def test_mariadb_refuses_what_it_cannot_make_atomic(mariadb, table):
    url, sql = mariadb
    sql(f"CREATE TABLE {table} (id bigint)")
    with pytest.raises(inrush.UsageError, match="overwrite into MariaDB/MySQL cannot be atomic"):
        begin(url, table, "mjobover", overwrite=True)
    with pytest.raises(inrush.UsageError, match="staged parts are PostgreSQL's"):
        begin(url, table, "mjobstaged", parts="staged")
    with pytest.raises(inrush.UsageError, match="--stage"):
        inrush.load(numbers(0, 1), to=url, table=table, stage="job:p0a0")


# --- Spark ----------------------------------------------------------------------------------

pyspark = pytest.importorskip("pyspark", reason="pyspark 4 is installed by scripts/setup.sh")


# Maven Central's PostgreSQL JDBC driver, which scripts/setup.sh fetches (as bench/spark.py does):
# Spark's own writer, the reference the inrush writer's rows are compared with.
JDBC_JAR = os.path.expanduser("~/.cache/inrush-bench/postgresql-42.7.14.jar")


@pytest.fixture(scope="module")
def spark():
    """One session for the module: starting Spark costs seconds."""
    # The executors' Python is this one, which has inrush installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import inrush.spark

    builder = (
        SparkSession.builder.master("local[2,4]")
        .appName("inrush-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if os.path.isfile(JDBC_JAR):
        builder = builder.config("spark.jars", JDBC_JAR)
    session = builder.getOrCreate()
    inrush.spark.register(session)
    yield session
    session.stop()


COLUMNS = (
    "id bigint PRIMARY KEY, flag boolean, amount numeric(12,2), ratio double precision, "
    "name text, day date, at timestamptz, tags text[], blob bytea"
)


def frame(spark, rows_count, partitions):
    return spark.range(0, rows_count, 1, partitions).selectExpr(
        "id",
        "id % 3 = 0 AS flag",
        "CAST(id / 7 AS DECIMAL(12,2)) AS amount",
        "id / 3.0d AS ratio",
        "CASE WHEN id % 5 = 0 THEN NULL ELSE concat('name ', id) END AS name",
        "date_add(DATE'2024-01-01', CAST(id % 400 AS INT)) AS day",
        "timestamp_seconds(1700000000 + id) AS at",
        "array(concat('t', id % 4), 'x') AS tags",
        "CAST(concat('b', id) AS BINARY) AS blob",
    )


def write(df, server, table, mode="append", **options):
    writer = df.write.format("inrush").option("to", server).option("table", table).mode(mode)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save()


@pytest.mark.parametrize("parts", ["prepared", "staged"])
def test_a_dataframe_lands_as_the_module_loads_it_in_one_process(spark, db, server, table, parts):
    db.execute(f"CREATE TABLE {table} ({COLUMNS})")
    db.execute(f"CREATE TABLE {table}_one ({COLUMNS})")
    db.execute(f"CREATE INDEX {table}_day ON {table} (day)")
    df = frame(spark, 20_000, 4)
    write(df, server, table, parts=parts)
    # Dropped by the driver before the tasks, built once after the decision.
    assert indexes(db, table) == [f"{table}_day", f"{table}_pkey"]
    assert analyzed(db, table) == [("True", "True")]
    inrush.load(df.toArrow(), to=server, table=f"{table}_one")
    ours = rows(db, f"SELECT * FROM {table} ORDER BY id")
    assert len(ours) == 20_000
    assert ours == rows(db, f"SELECT * FROM {table}_one ORDER BY id")
    assert prepared(db) == [] and staging_tables(db) == [] and logged_jobs(db) == []


def test_an_overwrite_is_seen_whole_or_not_at_all_by_a_concurrent_reader(spark, db, server, table):
    import threading

    import psycopg

    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY)")
    db.execute(f"INSERT INTO {table} SELECT generate_series(1, 1000)")
    seen, done = set(), threading.Event()

    def read():
        with psycopg.connect(server, autocommit=True) as reader:
            while not done.is_set():
                seen.add(reader.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    reader = threading.Thread(target=read)
    reader.start()
    try:
        write(spark.range(0, 50_000, 1, 4), server, table, mode="overwrite")
    finally:
        done.set()
        reader.join()
    assert seen <= {1000, 50_000} and 1000 in seen
    assert rows(db, f"SELECT count(*), min(id) FROM {table}") == [("50000", "0")]


def test_a_failed_job_leaves_the_table_as_it_was(spark, db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, note text)")
    db.execute(f"INSERT INTO {table} VALUES (-1, 'before')")

    def fail_in_partition_one(batches):
        from pyspark import TaskContext

        for batch in batches:
            yield batch
            if TaskContext.get().partitionId() == 1:
                raise RuntimeError("partition 1 fails every time")

    df = spark.range(0, 10_000, 1, 3).selectExpr("id", "'new' AS note")
    df = df.mapInArrow(fail_in_partition_one, df.schema)
    with pytest.raises(Exception, match="partition 1 fails every time"):
        write(df, server, table)
    assert rows(db, f"SELECT * FROM {table}") == [("-1", "before")]
    assert prepared(db) == [] and staging_tables(db) == [] and logged_jobs(db) == []


def test_a_task_that_fails_once_is_retried_and_its_rows_land_once(spark, db, server, table):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY)")

    def first_attempt_fails(batches):
        from pyspark import TaskContext

        task = TaskContext.get()
        for batch in batches:
            yield batch
            if task.partitionId() == 1 and task.attemptNumber() == 0:
                raise RuntimeError("the first attempt of partition 1 dies mid-stream")

    df = spark.range(0, 30_000, 1, 3)
    df = df.mapInArrow(first_attempt_fails, df.schema)
    write(df, server, table)
    assert rows(db, f"SELECT count(*), count(DISTINCT id) FROM {table}") == [("30000", "30000")]
    assert prepared(db) == [] and logged_jobs(db) == []


def test_options_are_checked_on_the_driver(spark, server, table):
    df = spark.range(0, 10)
    with pytest.raises(Exception, match="needs .option"):
        df.write.format("inrush").option("to", server).mode("append").save()
    with pytest.raises(Exception, match="unknown option"):
        write(df, server, table, batchsize=10)


def stream_files(spark, directory, first, count, step=1000):
    """Files ``first`` .. ``first + count - 1`` of a stream source, ``step`` ids each."""
    for n in range(first, first + count):
        # One file each: the stream takes one file per batch.
        df = spark.range(n * step, (n + 1) * step, 1, 1).selectExpr("id", "CAST(id % 7 AS INT) AS k")
        df.write.mode("overwrite").parquet(f"{directory}/part{n}")


def start_stream(spark, directory, server, table, checkpoint, **options):
    source = (
        spark.readStream.schema("id bigint, k int")
        .option("maxFilesPerTrigger", 1)
        .parquet(f"{directory}/part*")
        .repartition(2)
    )
    writer = source.writeStream.format("inrush").option("to", server).option("table", table)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    return writer.option("checkpointLocation", checkpoint).start()


def run_stream(*args, **options):
    query = start_stream(*args, **options)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return query.id


def test_a_restarted_stream_lands_every_batch_once(spark, db, server, table, tmp_path):
    db.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, k int)")
    source, checkpoint = tmp_path / "in", str(tmp_path / "checkpoint")
    stream_files(spark, source, 0, 3)
    query = run_stream(spark, source, server, table, checkpoint)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("3000",)]
    # A crash after the target took batch 2 but before Spark noted it: the restart replays it.
    os.remove(f"{checkpoint}/commits/2")
    os.remove(f"{checkpoint}/commits/.2.crc")
    # And one after the tasks of batch 3 had left a part, which is no winner of any decision.
    import inrush.spark

    job = inrush.spark.stream_job(query, 3)
    _inrush.job(server, job, "begin", table=table, query=query, batch=3)
    part(server, table, job, "p0a0rdead", pa.table({"id": pa.array([-1], pa.int64())}))
    stream_files(spark, source, 3, 2)
    assert run_stream(spark, source, server, table, checkpoint) == query, "the same query"
    assert rows(db, f"SELECT count(*), min(id), max(id) FROM {table}") == [("5000", "0", "4999")]
    assert rows(db, f"SELECT batch FROM inrush.stream_batches WHERE query = '{query}' ORDER BY 1") == [
        (str(b),) for b in range(5)
    ]
    assert prepared(db) == [] and staging_tables(db) == [] and logged_jobs(db) == []


def test_a_complete_mode_stream_replaces_the_table_at_every_batch(spark, db, server, table, tmp_path):
    db.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, n bigint)")
    source = tmp_path / "in"
    stream_files(spark, source, 0, 2)
    counts = (
        spark.readStream.schema("id bigint, k int")
        .option("maxFilesPerTrigger", 1)
        .parquet(f"{source}/part*")
        .groupBy("k")
        .agg({"id": "count"})
        .withColumnRenamed("count(id)", "n")
    )
    query = (
        counts.writeStream.format("inrush")
        .option("to", server)
        .option("table", table)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .outputMode("complete")
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert rows(db, f"SELECT sum(n), count(*) FROM {table}") == [("2000", "7")]
    assert staging_tables(db) == [] and logged_jobs(db) == []


def test_max_errors_counts_the_refused_rows_of_the_whole_job(spark, db, server, table, tmp_path):
    db.execute(f"CREATE TABLE {table} (id bigint, n int)")
    # Two bad values in each of four partitions: each task stays under 5, the job does not.
    df = spark.range(0, 400, 1, 4).selectExpr(
        "id", "CASE WHEN id % 50 = 0 THEN 'bad' ELSE CAST(id AS STRING) END AS n"
    )
    rejects = tmp_path / "rejects"
    with pytest.raises(Exception, match=r"refused 8 rows, more than max_errors \(5\)"):
        write(df, server, table, max_errors=5, rejects=rejects)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("0",)]
    assert prepared(db) == [] and staging_tables(db) == [] and logged_jobs(db) == []
    write(df, server, table, max_errors=8, rejects=rejects)
    assert rows(db, f"SELECT count(*) FROM {table}") == [("392",)]
    # Each task's refused rows, and why (column, value, reason), beside the rows.
    for partition in range(4):
        assert (tmp_path / f"rejects.{partition}").read_text().count("bad") == 2
        assert '"column":"n"' in (tmp_path / f"rejects.{partition}.log").read_text().replace(" ", "")


def test_a_dataframe_lands_in_mariadb_once_though_a_task_is_retried(spark, mariadb, table):
    url, sql = mariadb
    columns = "id bigint PRIMARY KEY, flag boolean, amount decimal(12,2), ratio double, name text, day date, `at` datetime(6), `blob` varbinary(32)"
    sql(f"CREATE TABLE {table} ({columns})")
    sql(f"CREATE TABLE {table}_one ({columns})")

    def first_attempt_fails(batches):
        from pyspark import TaskContext

        task = TaskContext.get()
        for batch in batches:
            yield batch
            if task.partitionId() == 1 and task.attemptNumber() == 0:
                raise RuntimeError("the first attempt of partition 1 dies mid-stream")

    # MariaDB's DATETIME has no zone: the times go without one.
    df = frame(spark, 20_000, 4).drop("tags").selectExpr("*", "CAST(at AS TIMESTAMP_NTZ) AS at_ntz")
    df = df.drop("at").withColumnRenamed("at_ntz", "at")
    write(df.mapInArrow(first_attempt_fails, df.schema), url, table)
    inrush.load(df.toArrow(), to=url, table=f"{table}_one")
    ours = sql(f"SELECT * FROM {table} ORDER BY id")
    assert len(ours) == 20_000 and ours == sql(f"SELECT * FROM {table}_one ORDER BY id")
    assert xa_prepared(sql) == [] and sql("SELECT count(*) FROM inrush_joint_commits") == [("0",)]


def test_structs_and_maps_go_into_jsonb(spark, db, server, table):
    columns = "id bigint PRIMARY KEY, s jsonb, m jsonb, l jsonb"
    db.execute(f"CREATE TABLE {table} ({columns})")
    db.execute(f"CREATE TABLE {table}_one ({columns})")
    df = spark.range(0, 1000, 1, 2).selectExpr(
        "id",
        "named_struct('a', id, 'b', CASE WHEN id % 3 = 0 THEN NULL ELSE concat('x', id) END) AS s",
        "map('k', id, 'k2', id * 2) AS m",
        "array(named_struct('n', id)) AS l",
    )
    write(df, server, table)
    inrush.load(df.toArrow(), to=server, table=f"{table}_one")
    ours = rows(db, f"SELECT * FROM {table} ORDER BY id")
    assert ours == rows(db, f"SELECT * FROM {table}_one ORDER BY id")
    assert rows(db, f"SELECT s->>'b', m->>'k2', l->0->>'n' FROM {table} WHERE id = 7") == [("x7", "14", "7")]


class _TcpToUnix:
    """127.0.0.1:<port> relayed to a PostgreSQL unix socket: the JDBC driver speaks TCP only,
    the tests' private server listens on its socket only."""

    def __init__(self, path):
        import socket
        import threading

        self.path = path
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.path)
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(2)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


@pytest.mark.skipif(not os.path.isfile(JDBC_JAR), reason="scripts/setup.sh fetches the PostgreSQL JDBC driver")
def test_rows_equal_what_spark_jdbc_writer_writes(spark, db, server, table):
    columns = (
        "id bigint PRIMARY KEY, flag boolean, amount numeric(12,2), ratio double precision, name text, "
        "day date, at timestamptz, at_ntz timestamp, tags text[], blob bytea"
    )
    db.execute(f"CREATE TABLE {table} ({columns})")
    db.execute(f"CREATE TABLE {table}_jdbc ({columns})")
    df = frame(spark, 5000, 2).selectExpr("*", "CAST(at AS TIMESTAMP_NTZ) AS at_ntz")
    df = df.select("id", "flag", "amount", "ratio", "name", "day", "at", "at_ntz", "tags", "blob")
    write(df, server, table)
    conninfo = dict(pair.split("=", 1) for pair in server.split())
    relay = _TcpToUnix(f"{conninfo['host']}/.s.PGSQL.{conninfo['port']}")
    try:
        df.write.jdbc(
            f"jdbc:postgresql://127.0.0.1:{relay.port}/{conninfo['dbname']}",
            f"{table}_jdbc",
            mode="append",
            properties={
                "user": conninfo["user"],
                "driver": "org.postgresql.Driver",
                "batchsize": "10000",
                "reWriteBatchedInserts": "true",
            },
        )
    finally:
        relay.close()
    theirs = rows(db, f"SELECT * FROM {table}_jdbc ORDER BY id")
    assert len(theirs) == 5000 and rows(db, f"SELECT * FROM {table} ORDER BY id") == theirs


def test_create_makes_a_missing_table_from_the_dataframes_schema(spark, db, server, table):
    df = frame(spark, 1000, 2)
    write(df, server, table, create="true", types="amount=numeric(14,3),name=varchar(40)")
    write(df.selectExpr("id + 1000 AS id", *[c for c in df.columns if c != "id"]), server, table, create="true")
    assert rows(db, f"SELECT count(*), count(DISTINCT id) FROM {table}") == [("2000", "2000")]
    types = dict(rows(db, f"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{table}'"))
    assert (types["amount"], types["name"], types["at"], types["tags"]) == (
        "numeric", "character varying", "timestamp with time zone", "ARRAY"
    )
    with pytest.raises(Exception, match="types names the columns' types for create"):
        write(df, server, table, types="amount=numeric")
