"""The exceptions a load raises, one class per kind of failure (and per exit code of the
``inrush`` command, kept in ``exit_code``).

Ctrl-C during a load raises the usual ``KeyboardInterrupt``, after the load was rolled back
(or, once committed, finished: see ``inrush.load``).
"""

from __future__ import annotations

from typing import Optional


class InrushError(Exception):
    """Any failure of a load or a plan. ``exit_code`` is the command's exit code for it."""

    exit_code: int = 1


class UsageError(InrushError, ValueError):
    """Options that cannot work together, or an input that cannot be opened. Refused before
    anything was changed."""

    exit_code = 2


class ServerError(InrushError, ConnectionError):
    """The server could not be reached, refused the login or a statement, or a right is
    missing. The message says which and what is needed."""

    exit_code = 3


class BadInputError(InrushError):
    """The input does not fit the table: a bad value, a malformed record, a broken key. Nothing
    was committed. When one row is at fault, where it is: ``file`` (the source's name, e.g.
    ``DataFrame``), ``line`` (its line, or its 1-based row number for a DataFrame or a
    Parquet file), ``column``, ``value`` and ``reason``. With ``max_errors`` the bad rows go to
    the reject file instead, and the load returns normally."""

    exit_code = 4
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[str] = None
    value: Optional[str] = None
    reason: Optional[str] = None


class PartialCommitError(InrushError):
    """Some connections committed and another failed during the final commit: the message
    says how many rows are in the table."""

    exit_code = 5


class UnfinishedError(InrushError):
    """The load committed, then putting back what it dropped for the load (indexes, keys)
    failed: the rows stay and must not be loaded again; the message names what is left and the
    ``inrush recover`` that finishes it."""

    exit_code = 8


class CommitUnknownError(InrushError):
    """A COMMIT got no answer and the server could not be reached in time to ask whether it
    committed: the table may or may not hold the rows. The message names each transaction and
    the query that tells. A load of files that runs again asks the server first and loads
    nothing twice; a DataFrame must not be loaded again before that query says it did not
    commit."""

    exit_code = 9
