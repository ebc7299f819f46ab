"""inrush: bulk loads into PostgreSQL, MariaDB/MySQL and SQLite from files, DataFrames and Arrow
data, as fast as the server can take them, leaving the table ready to query.

    import inrush
    result = inrush.load(df, to="postgresql://me@db/sales", table="orders")
    print(result)

``load`` takes the ``inrush load`` command's options as keyword arguments and runs the same
code: values are checked against the table's types on every core, rows stream over several
connections, indexes are dropped and rebuilt when that is faster, and a bad row either stops
the load with nothing committed (``BadInputError``) or, with ``max_errors``, goes to the reject
file. The GIL is released for the whole load; Ctrl-C rolls the load back and raises
``KeyboardInterrupt``.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from inrush import _inrush
from inrush._sources import arrow_stream
from inrush.errors import (
    BadInputError,
    CommitUnknownError,
    InrushError,
    PartialCommitError,
    ServerError,
    UnfinishedError,
    UsageError,
)


def _spelling() -> str:
    """How inrush's messages spell the command so that it runs as printed: ``inrush`` when the
    ``PATH`` finds this package's own script, else this Python with ``-m inrush``."""
    found = shutil.which("inrush")
    script = os.path.join(sysconfig.get_path("scripts"), "inrush")
    try:
        if found and os.path.samefile(found, script):
            return "inrush"
    except OSError:
        pass
    return f"{shlex.quote(sys.executable)} -m inrush"


_inrush.spell_command_as(_spelling())

__all__ = [
    "load",
    "plan",
    "LoadResult",
    "Rejected",
    "InrushError",
    "UsageError",
    "ServerError",
    "BadInputError",
    "PartialCommitError",
    "UnfinishedError",
    "CommitUnknownError",
]
__version__: str = _inrush.__version__

log = logging.getLogger("inrush")

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Rejected:
    """A row the load refused into the reject file: where it was and why. ``line`` is the
    input's line, or the 1-based row number of a DataFrame or columnar file."""

    file: str
    line: int
    column: Optional[str]
    value: Optional[str]
    reason: str


@dataclass(frozen=True)
class LoadResult:
    """What a finished load did. ``seconds`` is the time until the table was ready to query;
    ``phases`` splits it (inspect, drop_indexes, load, rebuild_indexes, maintain); ``plan``
    says what was done around the rows and why; ``summary`` is everything the command's
    ``--json`` prints."""

    table: str
    rows: int
    rejected: int
    seconds: float
    rows_per_second: float
    phases: Dict[str, float]
    notes: List[str]
    loaded: bool
    rejects_file: Optional[str]
    rejects_log: Optional[str]
    plan: Dict[str, Any] = field(repr=False)
    summary: Dict[str, Any] = field(repr=False)

    @property
    def rejects(self) -> List[Rejected]:
        """The refused rows, read from the reject file's log, in input order."""
        if not self.rejects_log or not os.path.exists(self.rejects_log):
            return []
        rows = []
        with open(self.rejects_log, encoding="utf-8") as log_file:
            for line in log_file:
                entry = json.loads(line)
                rows.append(
                    Rejected(
                        file=entry["file"],
                        line=entry.get("line", entry.get("row")),
                        column=entry.get("column"),
                        value=entry.get("value"),
                        reason=entry["reason"],
                    )
                )
        return sorted(rows, key=lambda r: (r.file, r.line))

    def __str__(self) -> str:
        done = "checked" if not self.loaded else "loaded"
        text = (
            f"{done} {self.rows:,} rows into {self.table} in {self.seconds:.2f} s "
            f"({self.rows_per_second:,.0f} rows/s)"
        )
        if self.rejected:
            text += f"; {self.rejected:,} rejected into {self.rejects_file}"
        return text


def load(
    source: Any,
    *,
    to: Optional[str] = None,
    table: str,
    header: bool = False,
    columns: Optional[Sequence[str]] = None,
    format: Optional[str] = None,
    delimiter: Optional[str] = None,
    quote: Optional[str] = None,
    escape: Optional[str] = None,
    null: Optional[str] = None,
    encoding: Optional[str] = None,
    datestyle: Optional[str] = None,
    create: bool = False,
    types: Optional[Mapping[str, str]] = None,
    truncate: bool = False,
    on_conflict: str = "error",
    max_errors: int = 0,
    rejects: Optional[PathLike] = None,
    resume: bool = False,
    workers: Optional[int] = None,
    connections: Optional[int] = None,
    network_timeout: Optional[int] = None,
    check: bool = False,
    table_lock: bool = False,
    keep_indexes: bool = False,
    index_threshold: Optional[float] = None,
    after: Optional[str] = None,
    no_analyze: bool = False,
    rebuild_unique: bool = False,
    disable_triggers: bool = False,
    no_sort: bool = False,
    fast_unsafe: bool = False,
    route: Optional[str] = None,
    prepare: Optional[str] = None,
    stage: Optional[str] = None,
    name: Optional[str] = None,
    progress: Union[bool, Callable[[Optional[str], int, int, Optional[int]], None]] = False,
) -> LoadResult:
    """Loads ``source`` into ``table`` on the server ``to`` and returns what it did.

    ``source``: a path or a list of paths (CSV, TSV, JSON lines, Parquet, Arrow IPC; plain,
    .gz or .zst), a pandas DataFrame (through pyarrow), a polars DataFrame or LazyFrame, a
    pyarrow Table or RecordBatchReader, any object with ``__arrow_c_stream__``, or an iterable
    of pyarrow RecordBatches. Arrow data is not copied: workers read its buffers directly.

    ``to``: ``postgresql://...`` (or a libpq key=value string; PG* variables and .pgpass fill
    the gaps), ``mysql://``/``mariadb://...``, or ``sqlite:///path.db``; default: the
    ``INRUSH_TO`` variable. ``prepare`` ("JOB:PART") makes the load a task of a distributed
    write, its transactions left prepared for the job to decide, and ``stage`` one whose rows
    are committed into the part's own table for the job to move (``inrush.spark`` sets them;
    ``summary["prepared"]`` names what the job decides). Every other option is the ``inrush load`` flag of the same name
    (``inrush load --help``): ``on_conflict`` is "error", "skip" or "update"; ``route`` (a
    partitioned table, PostgreSQL only) is "auto" (the default), "server" or "client"; ``types`` maps
    column names to SQL types for ``create``. ``name`` names a DataFrame in messages and the
    reject log (default "DataFrame"). ``progress``: True draws a tqdm bar when tqdm is
    installed; a callable gets ``(phase, rows, bytes_read, bytes_total)``; default: silent.

    ``network_timeout``: seconds the server may leave the load unanswered before it is taken
    for gone (default 30).

    Raises ``UsageError`` (options, before anything changes), ``ServerError``,
    ``BadInputError`` (nothing committed; where and why), ``PartialCommitError``,
    ``UnfinishedError`` (committed; what it dropped is not back yet), ``CommitUnknownError``
    (a COMMIT's answer lost and the server out of reach to ask), or ``KeyboardInterrupt``
    after Ctrl-C rolled the load back.
    """
    stream, inputs, kind = _split_source(source)
    argv: List[str] = [*inputs, "--table", table, "--on-conflict", on_conflict]
    argv += _flag("to", to)
    argv += _flag("format", format)
    argv += _flag("delimiter", delimiter)
    argv += _flag("quote", quote)
    argv += _flag("escape", escape)
    argv += _flag("null", null)
    argv += _flag("encoding", encoding)
    argv += _flag("datestyle", datestyle)
    argv += _flag("columns", ",".join(columns) if columns is not None else None)
    argv += _flag("types", ",".join(f"{k}={v}" for k, v in types.items()) if types else None)
    argv += _flag("max-errors", max_errors or None)
    argv += _flag("rejects", os.fspath(rejects) if rejects is not None else None)
    argv += _flag("workers", workers)
    argv += _flag("connections", connections)
    argv += _flag("network-timeout", network_timeout)
    argv += _flag("prepare", prepare)
    argv += _flag("stage", stage)
    argv += _switches(
        header=header,
        create=create,
        truncate=truncate,
        resume=resume,
        check=check,
        table_lock=table_lock,
    )
    argv += _plan_flags(
        keep_indexes, index_threshold, after, no_analyze, rebuild_unique, disable_triggers, no_sort, fast_unsafe,
        route,
    )
    callback, close = _progress(progress)
    log.info("loading %s into %s", kind, table)
    try:
        summary = json.loads(
            _inrush.load(argv, stream, name or "DataFrame", callback)
        )
    finally:
        close()
    result = _result(summary)
    log.info("%s", result)
    for note in result.notes:
        log.info("note: %s", note)
    return result


def plan(
    *,
    to: Optional[str] = None,
    table: str,
    source: Optional[PathLike] = None,
    keep_indexes: bool = False,
    index_threshold: Optional[float] = None,
    after: Optional[str] = None,
    no_analyze: bool = False,
    rebuild_unique: bool = False,
    disable_triggers: bool = False,
    no_sort: bool = False,
    fast_unsafe: bool = False,
    route: Optional[str] = None,
) -> Dict[str, Any]:
    """What a load into ``table`` would do around its rows (indexes dropped and rebuilt, keys,
    triggers, settings, maintenance) and why, read from the server's catalog; ``source``, a
    file, is weighed against the table's size. As ``inrush plan --json`` prints it."""
    argv: List[str] = ["--table", table]
    argv += _flag("to", to)
    argv += _flag("input", os.fspath(source) if source is not None else None)
    argv += _plan_flags(
        keep_indexes, index_threshold, after, no_analyze, rebuild_unique, disable_triggers, no_sort, fast_unsafe,
        route,
    )
    return json.loads(_inrush.plan(argv))


def _flag(name: str, value: Any) -> List[str]:
    return [] if value is None else [f"--{name}", str(value)]


def _switches(**on: bool) -> List[str]:
    """``--flag-name`` for each keyword that is true (underscores become dashes)."""
    return [f"--{name.replace('_', '-')}" for name, value in on.items() if value]


def _plan_flags(
    keep_indexes: bool,
    index_threshold: Optional[float],
    after: Optional[str],
    no_analyze: bool,
    rebuild_unique: bool,
    disable_triggers: bool,
    no_sort: bool,
    fast_unsafe: bool,
    route: Optional[str],
) -> List[str]:
    """The flags ``load`` and ``plan`` share (the command's PlanFlags)."""
    return _flag("index-threshold", index_threshold) + _flag("after", after) + _flag("route", route) + _switches(
        keep_indexes=keep_indexes,
        no_analyze=no_analyze,
        rebuild_unique=rebuild_unique,
        disable_triggers=disable_triggers,
        no_sort=no_sort,
        fast_unsafe=fast_unsafe,
    )


def _split_source(source: Any):
    """(stream, inputs, description): a stream of Arrow data, or the paths to read."""
    if isinstance(source, (str, os.PathLike)):
        return None, [os.fspath(source)], os.fspath(source)
    if isinstance(source, (list, tuple)) and all(
        isinstance(s, (str, os.PathLike)) for s in source
    ):
        if not source:
            raise UsageError("no input given: the list of paths is empty")
        paths = [os.fspath(s) for s in source]
        return None, paths, f"{len(paths)} files"
    stream, kind = arrow_stream(source)
    # The command line wants an input; the stream replaces it.
    return stream, ["-"], kind


def _progress(progress):
    """The callback given to the load, and what closes it."""
    if callable(progress):
        return progress, lambda: None
    if not progress:
        return None, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        log.warning("progress=True needs tqdm (pip install tqdm); loading without a bar")
        return None, lambda: None
    bar = tqdm(unit=" rows", unit_scale=True, desc="inspect")

    def update(phase, rows, _read, _total):
        if phase is not None:
            bar.set_description(phase)
        elif rows > bar.n:
            bar.update(rows - bar.n)

    return update, bar.close


def _result(summary: Dict[str, Any]) -> LoadResult:
    return LoadResult(
        table=summary["table"],
        rows=summary["rows"],
        rejected=summary["rows_rejected"],
        seconds=summary["seconds"],
        rows_per_second=summary["rows_per_second"],
        phases=summary["phases"],
        plan=summary["plan"],
        notes=summary["notes"],
        loaded=summary["loaded"],
        rejects_file=summary.get("rejects_file"),
        rejects_log=summary.get("rejects_log"),
        summary=summary,
    )
