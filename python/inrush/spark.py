"""Spark: a DataFrame written by every executor at COPY speed, all or nothing, exactly once.

    import inrush.spark
    inrush.spark.register(spark)
    df.write.format("inrush").option("to", url).option("table", "orders").mode("append").save()

Each task streams its Arrow batches through inrush's encoders into binary COPY and ends with
its transactions prepared, not committed (``inrush load --prepare``); the commit messages name
them. The driver then decides once for the whole job: it commits the prepared transactions of
the attempts Spark kept and rolls back every other one (failed, retried and speculative
attempts), so the table takes every row exactly once or, when the job fails, none. The
decision is logged in the target first (``inrush.joint_commits``): a driver that dies after it
leaves ``inrush recover --to URL`` to finish exactly that.

Options: ``to`` (the target URL, as ``inrush load --to``) and ``table``; ``connections`` (per
task, default 1), ``workers`` (encoder threads per task), ``max_errors`` (per task) with
``rejects`` (a path on each executor: each task writes ``<rejects>.<partition>``), and
``datestyle``. PostgreSQL targets; the server needs ``max_prepared_transactions`` of at least
the tasks running at once times their connections.
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
    """What one task attempt left prepared, for the driver to commit or roll back."""

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
        if overwrite:
            raise UsageError(
                'format("inrush"): mode "overwrite" is not supported yet; use mode "append" '
                "(into an empty table for a fresh copy)"
            )
        unknown = set(options) - set(_LOAD_OPTIONS) - {"to", "table", "dbtable", "rejects", "path"}
        if unknown:
            raise UsageError(f'format("inrush"): unknown option(s) {", ".join(sorted(unknown))}')
        self.load_options: Dict[str, Any] = {
            k: convert(options[k]) for k, convert in _LOAD_OPTIONS.items() if k in options
        }
        self.load_options.setdefault("connections", 1)
        self.rejects = options.get("rejects")
        # Letters and digits: the job names prepared transactions (`inrush_<job>_...`).
        self.job = uuid.uuid4().hex[:20]
        _inrush.job(self.to, self.job, "begin")

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
        result = load(
            batches,
            to=self.to,
            table=self.table,
            prepare=f"{self.job}:p{partition}a{attempt}",
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
        winners = [gid for m in messages if m is not None for gid in m.prepared]
        json.loads(_inrush.job(self.to, self.job, "commit", winners))

    def abort(self, messages: List[Optional[PartWritten]]) -> None:
        json.loads(_inrush.job(self.to, self.job, "abort"))
