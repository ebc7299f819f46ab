"""One private PostgreSQL for the whole session, started by ``inrush demo --keep`` (the same
server the README's demo runs), and a fresh table name per test."""

from __future__ import annotations

import itertools
import json
import shlex
import subprocess
import sys

import psycopg
import pytest


@pytest.fixture(scope="session")
def server():
    """The private server's conninfo; stopped and deleted at the end of the session."""
    started = subprocess.run(
        [sys.executable, "-m", "inrush", "demo", "--keep", "--rows", "1000", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    info = json.loads(started.stdout.strip().splitlines()[-1])["server"]
    yield info["conninfo"]
    # The demo's own words for stopping it: they must run as printed, from Python's process too.
    subprocess.run(shlex.split(info["stop"]), check=True)


@pytest.fixture(scope="session")
def db(server):
    with psycopg.connect(server, autocommit=True) as conn:
        yield conn


_names = itertools.count()


@pytest.fixture
def table(request):
    """A table name no other test uses."""
    return f"py_{request.node.name.split('[')[0][5:40]}_{next(_names)}".lower()


def rows(db, sql):
    """Every row of ``sql`` as text (NULL as None), in order: how two loads are compared."""
    with db.cursor() as cur:
        cur.execute(sql)
        return [tuple(None if v is None else str(v) for v in row) for row in cur.fetchall()]


def copy_csv(db, table, data: bytes):
    """The server's own COPY of CSV text: what inrush's rows are compared with."""
    with db.cursor() as cur:
        with cur.copy(f"COPY {table} FROM STDIN (FORMAT csv)") as copy:
            copy.write(data)
