"""Spark: a DataFrame written by every executor at COPY speed, all or nothing, exactly once.

    import inrush.spark
    inrush.spark.register(spark)
    df.write.format("inrush").option("to", url).option("table", "orders").mode("append").save()

Each task streams its Arrow batches through inrush's encoders into binary COPY and leaves its
part for the driver to decide: *prepared* (its transactions end with PREPARE TRANSACTION, not
COMMIT: ``inrush load --prepare``) or, where the server has no prepared transactions and for
``mode("overwrite")``, *staged* (committed into an unlogged table of the part's own:
``--stage``). The driver then decides once for the whole job: the parts of the attempts Spark
kept land and every other one (failed, retried, speculative attempts) is taken back, so the
table takes every row exactly once or, when the job fails, none. Prepared parts are committed
after the decision is logged in the target (``inrush.joint_commits``): a driver that dies
after it leaves ``inrush recover --to URL`` to finish exactly that. Staged parts move in one
transaction (which empties the table first for an overwrite: readers see the old rows or the
new).

Structured Streaming: ``df.writeStream.format("inrush")`` writes each micro-batch the same way,
as a job named for the query and the batch, and its decision records the batch in the target's
``inrush.stream_batches`` in the same transaction. A query restarted from its checkpoint that
replays a batch the target already took (Spark had not noted its commit) loads and lands
nothing of it: each batch's rows land exactly once. ``outputMode("complete")`` replaces the
table's rows at every batch, atomically, as an overwrite does.

Options: ``to`` (the target URL, as ``inrush load --to``) and ``table``; ``parts`` ("auto",
"prepared" or "staged"); ``connections`` (per task, default 1), ``workers`` (encoder threads
per task), ``max_errors`` (over the whole job, or a stream's batch: each task stops at it alone,
and the driver fails the job when its tasks refused more together) with ``rejects`` (a path on each executor: each task
writes ``<rejects>.<partition>``; in a stream ``<rejects>.<batch>.<partition>``),
``datestyle``, ``keep_indexes`` ("true": the job drops no index), and ``create`` ("true":
a missing table is made from the DataFrame's schema on the driver, as ``inrush load --create``
would make it, with ``types``, ``col=type,...``, replacing the inferred types). PostgreSQL targets, and
MariaDB/MySQL, where each part is an XA transaction (prepared, as above; no staged form, so no
overwrite) and the log is ``inrush_joint_commits`` in the target database.

The driver plans the table once for the whole job, as ``inrush load`` would for an input of
unknown size: an empty table (or one the job overwrites) loses its plain secondary indexes
before the tasks start and has them rebuilt after the decision, then ``ANALYZE`` (``VACUUM
(ANALYZE)`` where the job is most of an indexed table). Keys stay. A stream changes no
definition.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

from inrush import _inrush, load
from inrush.errors import BadInputError, UsageError

try:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceStreamArrowWriter,
        WriterCommitMessage,
    )
except ImportError as missing:  # pragma: no cover - said when register() is called
    _MISSING: Optional[ImportError] = missing
    DataSource = DataSourceArrowWriter = DataSourceStreamArrowWriter = object  # type: ignore
    WriterCommitMessage = object  # type: ignore
else:
    _MISSING = None

__all__ = ["register", "InrushDataSource"]

log = logging.getLogger("inrush.spark")

# The options a task passes on to its load, with their types.
_LOAD_OPTIONS = {"connections": int, "workers": int, "max_errors": int, "datestyle": str}


def register(spark: Any) -> None:
    """Makes ``format("inrush")`` available to ``spark`` (a SparkSession, Spark 4 or later)."""
    if _MISSING is not None:
        raise UsageError(
            f"inrush.spark needs pyspark 4 or later (pip install 'pyspark>=4'): {_MISSING}"
        )
    spark.dataSource.register(InrushDataSource)


@dataclass
class PartWritten(WriterCommitMessage):  # type: ignore[misc]
    """What one task attempt left for the driver to land or take back: its prepared
    transactions, or its staging table. In a stream, also the query, and whether the target
    had the batch already (``done``: nothing loaded)."""

    partition: int
    attempt: int
    rows: int
    rejected: int
    prepared: List[str] = field(default_factory=list)
    query: Optional[str] = None
    done: bool = False


class InrushDataSource(DataSource):  # type: ignore[misc]
    """``format("inrush")``: writes only, batch and streaming."""

    @classmethod
    def name(cls) -> str:
        return "inrush"

    def writer(self, schema: Any, overwrite: bool) -> "InrushWriter":
        return InrushWriter(dict(self.options), overwrite, schema)

    def streamWriter(self, schema: Any, overwrite: bool) -> "InrushStreamWriter":
        return InrushStreamWriter(dict(self.options), overwrite, schema)


class _Settings:
    """The writer's options, checked on the driver, and how a task loads its part."""

    # Spark's own options that reach a data source (a stream's checkpoint).
    _SPARK = {"path", "checkpointlocation"}

    def __init__(self, options: Dict[str, str], overwrite: bool):
        options = {k.lower(): v for k, v in options.items()}
        self.to = options.get("to")
        self.table = options.get("table") or options.get("dbtable")
        if not self.to or not self.table:
            raise UsageError('format("inrush") needs .option("to", URL) and .option("table", NAME)')
        known = set(_LOAD_OPTIONS) | {"to", "table", "dbtable", "rejects", "parts", "keep_indexes", "create", "types"}
        known |= self._SPARK
        unknown = set(options) - known
        if unknown:
            raise UsageError(f'format("inrush"): unknown option(s) {", ".join(sorted(unknown))}')
        self.load_options: Dict[str, Any] = {
            k: convert(options[k]) for k, convert in _LOAD_OPTIONS.items() if k in options
        }
        self.load_options.setdefault("connections", 1)
        self.rejects = options.get("rejects")
        self.parts = options.get("parts", "auto")
        self.keep_indexes = _switch(options, "keep_indexes")
        self.create = _switch(options, "create")
        self.types = _types(options["types"]) if "types" in options else None
        if self.types and not self.create:
            raise UsageError('format("inrush"): option types names the columns\' types for create')
        self.overwrite = overwrite

    def create_table(self, schema: Any) -> None:
        """``create``: makes the table from the DataFrame's ``schema`` when it is missing, as
        ``inrush load --create`` would from the same Arrow schema (an empty load that creates)."""
        if not self.create:
            return
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        try:
            # Spark 4.1 and later ask for the zone a timestamp's Arrow type carries; any one
            # says "with a zone" to --create, as the tasks' batches will.
            arrow = to_arrow_schema(schema, timezone="UTC")
        except TypeError:
            arrow = to_arrow_schema(schema)
        empty = pa.Table.from_batches([], arrow)
        try:
            load(empty, to=self.to, table=self.table, create=True, types=self.types)
        except UsageError as e:
            if "exists already" not in str(e):
                raise

    def over_limit(self, messages: List[Optional["PartWritten"]]) -> Optional[str]:
        """Why the job's refused rows, counted across its tasks, fail it (each task stops at
        ``max_errors`` on its own; the job's limit is the same number, over all of them)."""
        refused = sum(m.rejected for m in messages if m is not None)
        limit = self.load_options.get("max_errors", 0)
        if refused <= limit:
            return None
        return f"the job's tasks refused {refused} rows, more than max_errors ({limit}): nothing was committed"

    def begin(self, job: str, **batch: Any) -> Dict[str, Any]:
        """Logs ``job`` on the target (see ``_inrush.job``)."""
        begun = _inrush.job(
            self.to,
            job,
            "begin",
            table=self.table,
            overwrite=self.overwrite,
            parts=self.parts,
            keep_indexes=self.keep_indexes,
            **batch,
        )
        return _told(begun)

    def load_part(
        self, first: Any, rest: Iterator[Any], part: str, staged: bool, where: str, written: "PartWritten"
    ) -> "PartWritten":
        """Loads ``first`` and the ``rest`` of a task's batches as ``part`` (``JOB:PART``);
        ``where`` names the task's partition (and batch) in rejects and messages. Returns
        ``written`` with what the load left."""
        import pyarrow as pa

        batches = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], rest))
        result = load(
            batches,
            to=self.to,
            table=self.table,
            prepare=None if staged else part,
            stage=part if staged else None,
            rejects=f"{self.rejects}.{where}" if self.rejects else None,
            name=f"partition {where}",
            **self.load_options,
        )
        written.rows, written.rejected = result.rows, result.rejected
        written.prepared = list(result.summary.get("prepared", []))
        return written


def _switch(options: Dict[str, str], name: str) -> bool:
    spelled = options.get(name, "false").lower()
    if spelled not in ("true", "false"):
        raise UsageError(f'format("inrush"): {name} is true or false, not {spelled!r}')
    return spelled == "true"


def _types(spelled: str) -> Dict[str, str]:
    """``col=type,...`` as ``inrush load --types`` takes it (a comma inside a type's
    parentheses, as in ``numeric(12,2)``, is the type's)."""
    pairs, depth, start = [], 0, 0
    for at, ch in enumerate(spelled + ","):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            pairs.append(spelled[start:at])
            start = at + 1
    types = {}
    for pair in pairs:
        column, sep, sql_type = pair.partition("=")
        if not sep or not column.strip() or not sql_type.strip():
            raise UsageError(f'format("inrush"): types is col=type,...; {pair!r} is not')
        types[column.strip()] = sql_type.strip()
    return types


def _told(outcome: str) -> Dict[str, Any]:
    """A job step's outcome, its notes logged (on the driver: what the plan dropped and
    rebuilt)."""
    told = json.loads(outcome)
    for note in told.get("notes", []):
        log.info("%s", note)
    return told


def _task() -> Any:
    from pyspark import TaskContext

    return TaskContext.get()


class InrushWriter(DataSourceArrowWriter):  # type: ignore[misc]
    """Made on the driver (which logs the job), pickled to every task, and asked on the
    driver to commit or abort once the tasks are done."""

    def __init__(self, options: Dict[str, str], overwrite: bool, schema: Any = None):
        self.settings = _Settings(options, overwrite)
        self.settings.create_table(schema)
        # Letters and digits: the job names prepared transactions (`inrush_<job>_...`).
        self.job = uuid.uuid4().hex[:20]
        self.parts = self.settings.begin(self.job)["parts"]

    def write(self, iterator: Iterator[Any]) -> PartWritten:
        context = _task()
        partition, attempt = context.partitionId(), context.attemptNumber()
        first = next(iterator, None)
        if first is None:
            return PartWritten(partition, attempt, rows=0, rejected=0)
        part = f"{self.job}:p{partition}a{attempt}"
        written = PartWritten(partition, attempt, rows=0, rejected=0)
        return self.settings.load_part(first, iterator, part, self.parts == "staged", str(partition), written)

    def commit(self, messages: List[Optional[PartWritten]]) -> None:
        over = self.settings.over_limit(messages)
        if over is not None:
            # Spark follows a failed commit with abort, which takes every part back.
            raise BadInputError(over)
        winners = [name for m in messages if m is not None for name in m.prepared]
        _told(_inrush.job(self.settings.to, self.job, "commit", winners=winners))

    def abort(self, messages: List[Optional[PartWritten]]) -> None:
        # By the job's name: Spark's messages can miss partitions that finished.
        _told(_inrush.job(self.settings.to, self.job, "abort"))


def stream_job(query: str, batch: int) -> str:
    """The job that writes micro-batch ``batch`` of streaming query ``query`` (Spark's query
    id, kept across restarts): the same name whichever run writes it, so that a replay finds
    the batch's log and ledger entries."""
    return f"s{query.replace('-', '')[:18]}b{batch}"


class InrushStreamWriter(DataSourceStreamArrowWriter):  # type: ignore[misc]
    """A micro-batch's writer. Spark makes one on the driver for the batch's tasks and another
    for its commit, so nothing is logged here: the first task to load logs the batch's job,
    which is named for the query and batch that every task and the commit can see."""

    def __init__(self, options: Dict[str, str], overwrite: bool, schema: Any = None):
        self.settings = _Settings(options, overwrite)
        self.settings.create_table(schema)

    def write(self, iterator: Iterator[Any]) -> PartWritten:
        context = _task()
        partition, attempt = context.partitionId(), context.attemptNumber()
        query = context.getLocalProperty("sql.streaming.queryId")
        batch = int(context.getLocalProperty("streaming.sql.batchId"))
        first = next(iterator, None)
        if first is None:
            return PartWritten(partition, attempt, rows=0, rejected=0, query=query)
        job = stream_job(query, batch)
        begun = self.settings.begin(job, query=query, batch=batch)
        if begun["done"]:
            return PartWritten(partition, attempt, rows=0, rejected=0, query=query, done=True)
        # A run restarted after a crash may meet its predecessor's parts of the same batch:
        # a nonce keeps their names apart, and the decision takes the predecessor's back.
        part = f"{job}:p{partition}a{attempt}r{os.urandom(4).hex()}"
        staged = begun["parts"] == "staged"
        written = PartWritten(partition, attempt, rows=0, rejected=0, query=query)
        return self.settings.load_part(first, iterator, part, staged, f"{batch}.{partition}", written)

    def commit(self, messages: List[Optional[PartWritten]], batchId: int) -> None:
        query = next((m.query for m in messages if m is not None), None)
        if query is None:  # a batch of no partitions
            return
        over = self.settings.over_limit(messages)
        if over is not None:
            raise BadInputError(f"batch {batchId}: {over}")
        winners = [name for m in messages if m is not None for name in m.prepared]
        _inrush.job(
            self.settings.to, stream_job(query, batchId), "commit", winners=winners, query=query, batch=batchId
        )

    def abort(self, messages: List[Optional[PartWritten]], batchId: int) -> None:
        query = next((m.query for m in messages if m is not None), None)
        if query is not None:
            _inrush.job(self.settings.to, stream_job(query, batchId), "abort")
