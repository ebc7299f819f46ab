"""Turning a DataFrame or Arrow object into one Arrow C stream (``__arrow_c_stream__``), which
the extension reads without copying. Libraries are imported only when their objects arrive."""

from __future__ import annotations

import itertools
from typing import Any, Tuple

from inrush.errors import UsageError


def arrow_stream(source: Any) -> Tuple[Any, str]:
    """(an object with ``__arrow_c_stream__``, what it was, for the log)."""
    module = type(source).__module__.split(".")[0]
    kind = f"{module}.{type(source).__name__}"
    if module == "pandas" and type(source).__name__ == "DataFrame":
        return _pandas(source), kind
    if module == "polars" and type(source).__name__ == "LazyFrame":
        return _polars_lazy(source), kind
    if module == "polars" and type(source).__name__ == "DataFrame":
        if hasattr(source, "__arrow_c_stream__"):
            return source, kind
        return source.to_arrow(), kind
    if hasattr(source, "__arrow_c_stream__"):
        return source, kind
    if hasattr(source, "_export_to_c"):  # a pyarrow RecordBatchReader before pyarrow 14
        return source, kind
    if hasattr(source, "__iter__") and not isinstance(source, (bytes, dict)):
        return _batches(iter(source)), "record batches"
    raise UsageError(
        f"cannot load a {kind}: give a path, a list of paths, a pandas or polars DataFrame, "
        "a polars LazyFrame, a pyarrow Table or RecordBatchReader, an object with "
        "__arrow_c_stream__, or an iterable of pyarrow RecordBatches"
    )


def _pyarrow(what: str):
    try:
        import pyarrow
    except ImportError:
        raise UsageError(
            f"loading {what} needs pyarrow: pip install 'inrush[pandas]' (or '[polars]', "
            "'[pyarrow]'; in a checkout: pip install '.[pandas]')"
        ) from None
    return pyarrow


def _pandas(frame):
    pa = _pyarrow("a pandas DataFrame")
    # pandas' missing values (None, NaN, NaT, pd.NA) become NULL, as pandas' own to_sql
    # writes them; the index is not a column.
    return pa.Table.from_pandas(frame, preserve_index=False)


def _polars_lazy(frame):
    # Batches as the streaming engine makes them, so memory stays bounded where polars can.
    collect_batches = getattr(frame, "collect_batches", None)
    if collect_batches is None:
        return frame.collect()
    pa = _pyarrow("a polars LazyFrame")
    frames = collect_batches()
    return _batches(
        itertools.chain.from_iterable(f.to_arrow().to_batches() for f in frames), pa
    )


def _batches(batches, pa=None):
    """A RecordBatchReader over an iterator of record batches: the first fixes the schema."""
    pa = pa or _pyarrow("record batches")
    try:
        first = next(batches)
    except StopIteration:
        raise UsageError("no record batches: the iterator is empty") from None
    if not isinstance(first, pa.RecordBatch):
        raise UsageError(
            f"cannot load an iterable of {type(first).__name__}: it must yield pyarrow RecordBatches"
        )
    return pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], batches))
