"""Differential fuzzing of Arrow input: generated tables of values at their types' limits loaded by
inrush (as a Parquet file, an Arrow IPC file, or a pyarrow Table in memory) and, row by row, by the
server's own COPY of each value's text; the two must agree on every row: the same rows loaded,
the same rows refused (inrush's reject log names them by row number).

The text each value is compared through is written here from the value itself (Python's integers,
decimals and floats, its own calendar arithmetic), not by inrush's renderer: a date far past
year 9999 or before year 1, a timestamp of any unit at the edges of int64 and of PostgreSQL's
range, a nanosecond to be rounded, a time of day past 24:00, a decimal of any precision and
scale (negative too) into a `numeric(p,s)` that rounds or overflows, floats at their limits,
NaN and infinities into every numeric type, integers of every width into every integer type,
strings with NUL, quotes, line ends and the spellings each type's input takes, binary that is
no UTF-8, lists with NULLs, nested and ragged, structs into `jsonb`.

`INRUSH_FUZZ_CASES` tables (150 by default) from `INRUSH_FUZZ_SEED`, or as many as
`INRUSH_FUZZ_MINUTES` allow (`scripts/fuzz.sh`); every difference is printed with its table.
"""

from __future__ import annotations

import decimal
import math
import os
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

import inrush


def civil_from_days(days: int):
    """Proleptic Gregorian (year, month, day) of a day count from 1970-01-01, any range
    (Howard Hinnant's algorithm); year 0 is 1 BC."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


def ymd(days: int):
    """The date as PostgreSQL reads it, and whether it is BC."""
    y, m, d = civil_from_days(days)
    bc = y <= 0
    return f"{(1 - y) if bc else y:04d}-{m:02d}-{d:02d}", bc


def hms(seconds: int, nanos: int) -> str:
    text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{nanos:09d}".rstrip("0") if nanos else "")


PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def timestamp_text(v: int, unit: str, zoned: bool) -> str:
    per = PER_SECOND[unit]
    seconds, part = divmod(v, per)
    date, bc = ymd(seconds // 86400)
    text = f"{date} {hms(seconds % 86400, part * (1_000_000_000 // per))}"
    return text + ("+00" if zoned else "") + (" BC" if bc else "")


def time_text(v: int, unit: str) -> str:
    per = PER_SECOND[unit]
    seconds, part = divmod(abs(v), per)
    return ("-" if v < 0 else "") + hms(seconds, part * (1_000_000_000 // per))


def float_text(v: float, single: bool, whole: bool) -> str:
    """The shortest digits that read back as the value (float32's own for float32), with no
    `.0` (PostgreSQL prints `1`, and numeric keeps the scale it is given); a whole value as
    an integer when the column is one (`3.0` loads into an integer column as 3)."""
    if whole and math.isfinite(v) and v == int(v):
        return str(int(v))
    text = str(np.float32(v)) if single else repr(v)
    return text[:-2] if text.endswith(".0") else text


def array_literal(value, element: Callable[[Any], str]) -> str:
    if isinstance(value, list):
        return "{" + ",".join(array_literal(v, element) for v in value) + "}"
    if value is None:
        return "NULL"
    text = element(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class Column:
    arrow: pa.DataType
    sql: str
    values: List[Any]
    text: Callable[[Any], str]
    # The values' own type, when they are given as integers: cast to `arrow`, or viewed as it
    # (a decimal's unscaled integers).
    raw: Optional[pa.DataType] = None
    view: bool = False


# Values: a common one most of the time, an edge one in five.
def pick(rng: random.Random, edges: list, common: Callable[[], Any]):
    return rng.choice(edges) if rng.random() < 0.2 else common()


def magnitude(rng: random.Random, limit: int) -> int:
    """An integer of any size up to `limit`, small ones as often as large."""
    bits = rng.randint(0, max(1, limit.bit_length()))
    return min(limit, rng.getrandbits(bits) if bits else 0)


INTS = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
    pa.uint8(): (0, 2**8 - 1),
    pa.uint16(): (0, 2**16 - 1),
    pa.uint32(): (0, 2**32 - 1),
    pa.uint64(): (0, 2**64 - 1),
}
INT_EDGES = [0, 1, -1, 2**15 - 1, 2**15, -(2**15) - 1, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, 99_999, 100_000]


def ints(rng: random.Random, n: int) -> Column:
    arrow = rng.choice(list(INTS))
    low, high = INTS[arrow]
    edges = [v for v in INT_EDGES + [low, high] if low <= v <= high]

    def common():
        v = magnitude(rng, high)
        return -min(v, -low) if low < 0 and rng.random() < 0.5 else v

    sql = rng.choice(["smallint", "integer", "bigint", "numeric", "numeric(7,2)", "real", "double precision", "text"])
    return Column(arrow, sql, [pick(rng, edges, common) for _ in range(n)], str)


FLOAT_EDGES = [
    math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
    3.4028234663852886e38, 3.5e38, 1.401298464324817e-45, 1e-46, 0.1, 3.0, -7.0, 0.5, 2.5, 1e15,
    2.0**53 + 2, 1e20, 32767.0, 32768.0, 2147483647.0, 2147483648.0, 9.223372036854776e18, 123.456,
]


def floats(rng: random.Random, n: int) -> Column:
    single = rng.random() < 0.4
    sql = rng.choice(["real", "double precision", "numeric", "numeric(10,3)", "integer", "bigint", "smallint"])
    whole = sql in ("integer", "bigint", "smallint")

    def common():
        if rng.random() < 0.3:
            return float(rng.randint(-100_000, 100_000))
        return rng.uniform(-10, 10) * 10.0 ** rng.randint(-40, 40)

    values = [pick(rng, FLOAT_EDGES, common) for _ in range(n)]
    if single:
        with np.errstate(over="ignore"):  # beyond float32's range is infinity, as Arrow casts it
            values = [float(np.float32(v)) for v in values]
    return Column(pa.float32() if single else pa.float64(), sql, values, lambda v: float_text(v, single, whole))


# Decimal's default context keeps 28 digits; Arrow's decimals have up to 76.
EXACT = decimal.Context(prec=100)


def decimals(rng: random.Random, n: int) -> Column:
    wide = rng.random() < 0.2
    precision = rng.randint(1, 76 if wide else 38)
    scale = rng.randint(-3, precision) if rng.random() < 0.15 else rng.randint(0, precision)
    arrow = (pa.decimal256 if wide else pa.decimal128)(precision, scale)
    most = 10**precision - 1
    edges = [0, 1, -1, most, -most]

    def common():
        v = magnitude(rng, most)
        return -v if rng.random() < 0.5 else v

    unscaled = [decimal.Decimal(pick(rng, edges, common)) for _ in range(n)]
    p = rng.randint(1, 20)
    sql = rng.choice(["numeric", f"numeric({p},{rng.randint(0, min(p, 6))})", "bigint", "integer", "double precision", "real"])
    raw = (pa.decimal256 if wide else pa.decimal128)(precision, 0)
    return Column(arrow, sql, unscaled, lambda v: format(v.scaleb(-scale, EXACT), "f"), raw, view=True)


# PostgreSQL's first and last dates, as days from 1970-01-01.
PG_FIRST_DAY, PG_LAST_DAY = -2_440_588, 2_145_042_905
DAY_EDGES = [
    PG_FIRST_DAY, PG_FIRST_DAY - 1, PG_LAST_DAY, PG_LAST_DAY + 1, -(2**31), 2**31 - 1, 0, -1,
    -719_162, -719_163, 2_932_896, 2_932_897, 106_751_991,
]


def dates(rng: random.Random, n: int) -> Column:
    def common():
        return rng.randint(-3_000_000, 3_000_000) if rng.random() < 0.8 else rng.randint(-(2**31), 2**31 - 1)

    days = [pick(rng, DAY_EDGES, common) for _ in range(n)]
    sql = rng.choice(["date", "date", "timestamp", "timestamptz"])
    return Column(pa.date32(), sql, days, lambda v: ymd(v)[0] + (" BC" if ymd(v)[1] else ""))


# PostgreSQL's first and last microseconds, from 1970-01-01.
PG_FIRST_US, PG_LAST_US = -210_866_803_200_000_000, 9_224_318_015_999_999_999


def timestamps(rng: random.Random, n: int) -> Column:
    unit = rng.choice(list(PER_SECOND))
    zone = rng.choice([None, None, "UTC", "+05:30", "America/New_York"])
    per = PER_SECOND[unit]
    low, high = -(2**63), 2**63 - 1
    edges = [low, high, 0, -1, 1, per * 86_400 - 1]
    for us in (PG_FIRST_US, PG_LAST_US):
        v = us * per // 1_000_000
        edges += [v + d for d in (-1, 0, 1) if low <= v + d <= high]
    edges += [1_600_000_000 * per + per // 2 + d for d in (-1, 0, 1)]

    def common():
        span = min(10**10, high // per - 1)
        v = rng.randint(-span, span) * per + rng.randrange(per)
        return v if rng.random() < 0.9 else rng.randint(low, high)

    raw = [pick(rng, edges, common) for _ in range(n)]
    sql = rng.choice(["timestamp", "timestamptz", "timestamptz", "date"])
    return Column(pa.timestamp(unit, tz=zone), sql, raw, lambda v: timestamp_text(v, unit, zone is not None), pa.int64())


def times(rng: random.Random, n: int) -> Column:
    unit = rng.choice(list(PER_SECOND))
    per = PER_SECOND[unit]
    day = 86_400 * per
    edges = [0, day - 1, day, day + 1, -1, 2**31 - 1]

    def common():
        return rng.randrange(day)

    raw = [pick(rng, edges, common) for _ in range(n)]
    if unit in ("s", "ms"):
        raw = [max(-(2**31), min(2**31 - 1, v)) for v in raw]
    arrow = pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit)
    return Column(arrow, "time", raw, lambda v: time_text(v, unit), pa.int32() if unit in ("s", "ms") else pa.int64())


PIECES = [
    "a", "Zz", " ", ",", '"', "\\", "\n", "\r\n", "\r", "\t", "é", "€", "𝄞", "😀", "\x00", "NULL", "\\N",
]
WHOLE = [
    "", "0", "-12", " 42 ", "+7", "3.5", "1e3", "0x1F", "0o17", "0b101", "1_000", "99999999999999999999",
    "NaN", "Infinity", "-inf", "true", "yes", "off", "t", "0", "2024-02-29", "2023-02-29", "0001-01-01 BC",
    "infinity", "-infinity", "epoch", "12:30", "24:00:00", "2020-01-01 10:00:00+02", "2020-01-01T10:00:00Z",
    "{1,2}", "{}", "{{1},{2}}", "{1,NULL}", '{"a": 1}', "[1, 2]", '"x"', "null",
    "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{A0EEBC99-9C0B4EF8-BB6D6BB9BD380A11}", "abc  ", "ab", "x" * 300,
]
STRING_TYPES = [pa.string(), pa.large_string(), pa.string_view(), "dictionary"]


def string(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(WHOLE)
    return "".join(rng.choice(PIECES + WHOLE) for _ in range(rng.randint(0, 5)))


def strings(rng: random.Random, n: int) -> Column:
    arrow = rng.choice(STRING_TYPES)
    sql = rng.choice([
        "text", "varchar(5)", "char(3)", "integer", "bigint", "numeric", "double precision", "boolean",
        "date", "timestamp", "timestamptz", "time", "uuid", "jsonb", "integer[]", "text[]",
    ])
    return Column(arrow, sql, [string(rng) for _ in range(n)], lambda v: v)


def binaries(rng: random.Random, n: int) -> Column:
    if rng.random() < 0.3:
        values = [bytes(rng.getrandbits(8) for _ in range(16)) for _ in range(n)]
        sql = rng.choice(["uuid", "bytea"])
        text = (lambda v: str(uuid.UUID(bytes=v))) if sql == "uuid" else (lambda v: "\\x" + v.hex())
        return Column(pa.binary(16), sql, values, text)

    def common():
        if rng.random() < 0.5:
            return string(rng).encode()
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8)))

    values = [common() for _ in range(n)]
    sql = rng.choice(["bytea", "bytea", "text", "integer"])
    text = (lambda v: "\\x" + v.hex()) if sql == "bytea" else (lambda v: v)
    return Column(rng.choice([pa.binary(), pa.large_binary()]), sql, values, text)


def booleans(rng: random.Random, n: int) -> Column:
    return Column(pa.bool_(), "boolean", [rng.random() < 0.5 for _ in range(n)], lambda v: "t" if v else "f")


def lists(rng: random.Random, n: int) -> Column:
    kind = rng.choice(["int", "int", "text", "nested"])
    if kind == "text":
        element, sql, arrow = (lambda: string(rng)), "text[]", pa.large_list(pa.string())
    else:
        wide = rng.random() < 0.5
        element = lambda: rng.choice([0, 1, -1, 2**31 - 1, 2**31, -(2**31), 2**62, rng.randint(-999, 999)])
        if not wide:
            element = lambda: rng.randint(-(2**31), 2**31 - 1)
        sql, arrow = rng.choice(["integer[]", "bigint[]"]), pa.list_(pa.int64() if wide else pa.int32())
    if kind == "nested":
        arrow = pa.list_(arrow)
        side = rng.randint(0, 3)

        def value():
            width = side if rng.random() < 0.8 else rng.randint(0, 3)
            return [[None if rng.random() < 0.05 else element() for _ in range(width)] for _ in range(rng.randint(0, 3))]
    else:

        def value():
            return [None if rng.random() < 0.1 else element() for _ in range(rng.randint(0, 4))]

    values = [value() for _ in range(n)]
    return Column(arrow, sql, values, lambda v: array_literal(v, str))


def structs(rng: random.Random, n: int) -> Column:
    arrow = pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.bool_())])

    def value():
        return {"a": rng.choice([None, 0, -(2**63), 2**63 - 1, rng.randint(-9, 9)]), "b": rng.choice([None, string(rng)]), "c": rng.choice([None, True, False])}

    import json

    return Column(arrow, "jsonb", [value() for _ in range(n)], lambda v: json.dumps(v))


KINDS = [ints, ints, floats, decimals, dates, timestamps, times, strings, strings, binaries, booleans, lists, structs]


def arrow_array(column: Column) -> pa.Array:
    if column.arrow == "dictionary":
        column.arrow = pa.dictionary(pa.int32(), pa.string())
        return pa.array(column.values, pa.string()).dictionary_encode()
    if column.raw is None:
        return pa.array(column.values, column.arrow)
    values = pa.array(column.values, column.raw)
    return values.view(column.arrow) if column.view else values.cast(column.arrow, safe=False)


@dataclass
class Case:
    columns: List[Column]
    table: pa.Table

    def describe(self) -> str:
        return ", ".join(f"{c.arrow} into {c.sql}" for c in self.columns)


def generate(rng: random.Random) -> Case:
    n = rng.randint(1, 12)
    columns = [rng.choice(KINDS)(rng, n) for _ in range(rng.randint(1, 4))]
    for column in columns:
        if rng.random() < 0.5:
            column.values = [None if rng.random() < 0.1 else v for v in column.values]
    arrays = [pa.array(range(1, n + 1), pa.int32())] + [arrow_array(c) for c in columns]
    names = ["n"] + [f"c{i}" for i in range(len(columns))]
    return Case(columns, pa.table(arrays, names=names))


def source(rng: random.Random, case: Case, directory: str):
    """The table as inrush is given it: a Parquet file of small row groups, an Arrow IPC file of
    small batches, or the table in memory in chunks; a table Parquet cannot hold (a time's or
    timestamp's unit it would have to convert past int64, a negative scale) goes as IPC."""
    rows = case.table.num_rows
    chunked = pa.Table.from_batches(case.table.to_batches(max_chunksize=rng.randint(1, rows)))
    way = rng.choice(["parquet", "ipc", "memory"])
    if way == "parquet":
        path = os.path.join(directory, "case.parquet")
        try:
            pq.write_table(case.table, path, row_group_size=rng.randint(1, rows))
            return path, "Parquet"
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
            way = "ipc"
    if way == "ipc":
        path = os.path.join(directory, "case.arrow")
        with ipc.new_file(path, chunked.schema) as writer:
            writer.write_table(chunked)
        return path, "Arrow IPC"
    return chunked, "in memory"


def csv_field(text: Optional[str]) -> bytes:
    """A CSV field COPY reads as `text`: quoted, so that an empty string is not NULL."""
    if text is None:
        return b""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return b'"' + data.replace(b'"', b'""') + b'"'


def reference(db, case: Case):
    """Each row COPYed alone into `theirs`: the rows the server refused, and each row's text with
    the server's answer (what a difference is shown with)."""
    refused, shown = [], []
    for i in range(case.table.num_rows):
        texts = [None if c.values[i] is None else c.text(c.values[i]) for c in case.columns]
        line = b",".join([csv_field(str(i + 1))] + [csv_field(t) for t in texts]) + b"\n"
        answer = "loaded"
        try:
            with db.cursor() as cur:
                with cur.copy("COPY theirs FROM STDIN (FORMAT csv)") as copy:
                    copy.write(line)
        except Exception as error:
            refused.append(i + 1)
            answer = str(error).splitlines()[0]
        shown.append(f"    row {i + 1}: {texts!r}: {answer}")
    return refused, "\n".join(shown)


def compare(db, server, rng: random.Random, case: Case, directory: str) -> Optional[str]:
    """How inrush and the server's COPY differ on the case, or None."""
    columns = ", ".join(["n int"] + [f"c{i} {c.sql}" for i, c in enumerate(case.columns)])
    db.execute(f"DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours ({columns}); CREATE TABLE theirs ({columns})")
    refused, shown = reference(db, case)
    given, way = source(rng, case, directory)
    try:
        result = inrush.load(
            given, to=server, table="ours", max_errors=10**6, connections=1,
            rejects=os.path.join(directory, "case.rejects"),
        )
        rejected = [r.line for r in result.rejects]
    except inrush.InrushError as error:
        return f"{way}: inrush failed: {error}"
    listed = ", ".join(["n"] + [f"c{i}::text" for i in range(len(case.columns))])
    ours = db.execute(f"SELECT {listed} FROM ours ORDER BY n").fetchall()
    theirs = db.execute(f"SELECT {listed} FROM theirs ORDER BY n").fetchall()
    if ours != theirs or rejected != refused:
        return (
            f"{way}: rows differ\n  inrush: {ours} (refused {rejected})\n"
            f"  COPY:   {theirs} (refused {refused})\n{shown}"
        )
    return None


def test_arrow_values_load_as_copy_reads_their_text_row_by_row(db, server, tmp_path):
    seed = int(os.environ.get("INRUSH_FUZZ_SEED", "20261205"))
    cases = int(os.environ.get("INRUSH_FUZZ_CASES", "150"))
    minutes = os.environ.get("INRUSH_FUZZ_MINUTES")
    until = time.monotonic() + float(minutes) * 60 if minutes else None
    rng = random.Random(seed)
    tried = refusing = 0
    found = []
    while (time.monotonic() < until) if until else tried < cases:
        case = generate(rng)
        tried += 1
        difference = compare(db, server, rng, case, str(tmp_path))
        if difference:
            found.append(f"table {tried} (seed {seed}, {case.describe()}): {difference}")
        elif db.execute("SELECT count(*) FROM theirs").fetchone()[0] < case.table.num_rows:
            refusing += 1
    print(f"fuzz: {tried} Arrow tables tried (seed {seed}), {refusing} with rows both refused, {len(found)} differences")
    assert not found, "\n".join(found)
