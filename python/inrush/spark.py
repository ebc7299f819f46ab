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

Options: ``to`` (the target URL, as ``inrush load --to``) and ``table``; ``parts`` ("auto",
"prepared" or "staged"); ``connections`` (per task, default 1), ``workers`` (encoder threads
per task), ``max_errors`` (per task) with ``rejects`` (a path on each executor: each task
writes ``<rejects>.<partition>``), and ``datestyle``. PostgreSQL targets.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

from inrush import _inrush, load
from inrush.errors import UsageError

try:
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
except ImportError as missing:  # pragma: no cover - said when register() is called
    _MISSING: Optional[ImportError] = missing
    DataSource = DataSourceArrowWriter = WriterCommitMessage = object  # type: ignore
else:
    _MISSING = None

__all__ = ["register", "InrushDataSource"]

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
    transactions, or its staging table."""

    partition: int
    attempt: int
    rows: int
    rejected: int
    prepared: List[str] = field(default_factory=list)


class InrushDataSource(DataSource):  # type: ignore[misc]
    """``format("inrush")``: writes only (batch)."""

    @classmethod
    def name(cls) -> str:
        return "inrush"

    def writer(self, schema: Any, overwrite: bool) -> "InrushWriter":
        return InrushWriter(dict(self.options), overwrite)


class InrushWriter(DataSourceArrowWriter):  # type: ignore[misc]
    """Made on the driver (which logs the job), pickled to every task, and asked on the
    driver to commit or abort once the tasks are done."""

    def __init__(self, options: Dict[str, str], overwrite: bool):
        options = {k.lower(): v for k, v in options.items()}
        self.to = options.get("to")
        self.table = options.get("table") or options.get("dbtable")
        if not self.to or not self.table:
            raise UsageError('format("inrush") needs .option("to", URL) and .option("table", NAME)')
        known = set(_LOAD_OPTIONS) | {"to", "table", "dbtable", "rejects", "parts", "path"}
        unknown = set(options) - known
        if unknown:
            raise UsageError(f'format("inrush"): unknown option(s) {", ".join(sorted(unknown))}')
        self.load_options: Dict[str, Any] = {
            k: convert(options[k]) for k, convert in _LOAD_OPTIONS.items() if k in options
        }
        self.load_options.setdefault("connections", 1)
        self.rejects = options.get("rejects")
        # Letters and digits: the job names prepared transactions (`inrush_<job>_...`).
        self.job = uuid.uuid4().hex[:20]
        begun = json.loads(
            _inrush.job(
                self.to,
                self.job,
                "begin",
                table=self.table,
                overwrite=overwrite,
                parts=options.get("parts", "auto"),
            )
        )
        self.parts = begun["parts"]

    def write(self, iterator: Iterator[Any]) -> PartWritten:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition, attempt = context.partitionId(), context.attemptNumber()
        first = next(iterator, None)
        if first is None:
            return PartWritten(partition, attempt, rows=0, rejected=0)
        import pyarrow as pa

        batches = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], iterator))
        rejects = f"{self.rejects}.{partition}" if self.rejects else None
        name = f"{self.job}:p{partition}a{attempt}"
        staged = self.parts == "staged"
        result = load(
            batches,
            to=self.to,
            table=self.table,
            prepare=None if staged else name,
            stage=name if staged else None,
            rejects=rejects,
            name=f"partition {partition}",
            **self.load_options,
        )
        return PartWritten(
            partition,
            attempt,
            rows=result.rows,
            rejected=result.rejected,
            prepared=list(result.summary.get("prepared", [])),
        )

    def commit(self, messages: List[Optional[PartWritten]]) -> None:
        winners = [name for m in messages if m is not None for name in m.prepared]
        _inrush.job(self.to, self.job, "commit", winners=winners)

    def abort(self, messages: List[Optional[PartWritten]]) -> None:
        # By the job's name: Spark's messages can miss partitions that finished.
        _inrush.job(self.to, self.job, "abort")
