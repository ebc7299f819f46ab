"""The Python examples of the README and docs/python.md run as shown, against the session's
private server in place of ``postgresql://app@db/sales``, each in a directory of its own. The
Spark examples need a SparkSession and are run by test_spark.py's own cells instead."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
URL = "postgresql://app@db/sales"


def examples():
    for doc in ["README.md", "docs/python.md"]:
        text = (ROOT / doc).read_text()
        for n, code in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            if "spark" not in code:
                yield pytest.param(doc, code, id=f"{doc}#{n}")


@pytest.mark.parametrize("doc, code", list(examples()))
def test_the_docs_python_examples_run_as_shown(doc, code, server, db, tmp_path, monkeypatch, capsys):
    with db.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS people, orders, more_orders")
    monkeypatch.chdir(tmp_path)
    exec(compile(code.replace(URL, server), doc, "exec"), {})
    printed = capsys.readouterr().out
    # What the comments say is printed (the seconds aside).
    for said in re.findall(r"print\(.*?\)\s+# (\S.*)", code):
        if said.startswith("loaded"):
            assert said.split(" in ")[0] in printed, printed
        elif said.startswith("3 and"):
            assert printed.split()[0] == "3", printed


def test_inrush_load_takes_every_option_of_the_command_it_stands_for():
    """``help(inrush.load)`` says every other option is the flag of the same name: so each
    flag of ``inrush load`` is a keyword, but those Python has its own way for (a query
    source is ``inrush load --from-query``'s; the result is the return value; ``progress=``
    draws or not)."""
    import inspect
    import subprocess
    import sys

    import inrush

    help_text = subprocess.run(
        [sys.executable, "-m", "inrush", "load", "--help"], capture_output=True, text=True, check=True
    ).stdout
    flags = {f[2:].replace("-", "_") for f in re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z-]*)", help_text, re.M)}
    own_way = {"from", "from_query", "split_by", "zero_dates_null", "help", "json", "no_progress"}
    missing = flags - own_way - set(inspect.signature(inrush.load).parameters)
    assert not missing, f"inrush.load has no keyword for {sorted(missing)}"
