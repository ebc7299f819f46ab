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
