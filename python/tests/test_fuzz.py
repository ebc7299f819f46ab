"""Differential fuzzing of Arrow input: generated tables of values at their types' limits loaded by
inrush (as a Parquet file, an Arrow IPC file, or a pyarrow Table in memory) and by the engine's
own reader of each value's text: PostgreSQL's COPY and MariaDB's strict LOAD DATA, row by row,
and for SQLite inrush's own CSV path (held to `.import` by crates/inrush/tests/fuzz.rs). The two
must agree on every row: the same rows loaded with the same values, the same rows refused
(inrush's reject log names them by row number). The text is in each engine's forms where they
differ from PostgreSQL's (lists as JSON, booleans as 1 and 0, SQLite's `+00:00`, MariaDB's
binary values as their bytes).

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

import dataclasses
import decimal
import json
import math
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

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


def timestamp_text(v: int, unit: str, zone: str) -> str:
    per = PER_SECOND[unit]
    seconds, part = divmod(v, per)
    date, bc = ymd(seconds // 86400)
    text = f"{date} {hms(seconds % 86400, part * (1_000_000_000 // per))}"
    return text + zone + (" BC" if bc else "")


def time_text(v: int, unit: str) -> str:
    per = PER_SECOND[unit]
    seconds, part = divmod(abs(v), per)
    return ("-" if v < 0 else "") + hms(seconds, part * (1_000_000_000 // per))


def float_text(v: float, single: bool, whole: bool) -> str:
    """float8out's text (float4out's for float32): the shortest digits that read back as the
    value, in exponent form from 1e+15 (1e+06 for float32) and below 1e-04, NaN and Infinity
    spelled out; a whole value as an integer when the column is one (`3.0` loads into an
    integer column as 3)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if whole and v == int(v):
        return str(int(v))
    sign, digits, exponent = decimal.Decimal(str(np.float32(v)) if single else repr(v)).as_tuple()
    power = len(digits) - 1 + exponent
    digits = "".join(map(str, digits)).rstrip("0") or "0"
    return ("-" if sign else "") + shortest(digits, power, 6 if single else 15)


def shortest(digits: str, power: int, widest: int) -> str:
    """`digits` (d.ddd) times 10**power, as float8out writes it."""
    if digits == "0":
        return "0"
    if -4 <= power < widest:
        if power < 0:
            return "0." + "0" * (-power - 1) + digits
        whole = digits[: power + 1].ljust(power + 1, "0")
        rest = digits[power + 1 :]
        return whole + ("." + rest if rest else "")
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"


def array_literal(value, element: Callable[[Any], str]) -> str:
    if isinstance(value, list):
        return "{" + ",".join(array_literal(v, element) for v in value) + "}"
    if value is None:
        return "NULL"
    text = element(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Engine:
    """A target as the generators see it: the column types each kind of value goes into, and
    where its text forms differ from PostgreSQL's (inrush's `TextForms`)."""

    name: str
    types: Dict[str, List[str]]
    # Types a whole float goes into as an integer's digits.
    integers: Tuple[str, ...] = ()
    lists_as_json: bool = False
    booleans_as_digits: bool = False
    zone_with_minutes: bool = False
    # Types a binary value's text is its bytes in (else `\x` and hex).
    bytes_as_text: Tuple[str, ...] = ()
    strict: bool = False


POSTGRESQL = Engine(
    "PostgreSQL",
    {
        "ints": ["smallint", "integer", "bigint", "numeric", "numeric(7,2)", "real", "double precision", "text"],
        "floats": ["real", "double precision", "numeric", "numeric(10,3)", "integer", "bigint", "smallint"],
        "decimals": ["numeric", "numeric({p},{s})", "bigint", "integer", "double precision", "real"],
        "dates": ["date", "date", "timestamp", "timestamptz"],
        "timestamps": ["timestamp", "timestamptz", "timestamptz", "date"],
        "zoned timestamps": ["timestamp", "timestamptz", "timestamptz", "date"],
        "times": ["time"],
        "strings": [
            "text", "varchar(5)", "char(3)", "integer", "bigint", "numeric", "double precision", "boolean",
            "date", "timestamp", "timestamptz", "time", "uuid", "jsonb", "integer[]", "text[]",
        ],
        "uuids": ["uuid", "bytea"],
        "binaries": ["bytea", "bytea", "text", "integer"],
        "booleans": ["boolean"],
        "text lists": ["text[]"],
        "integer lists": ["integer[]", "bigint[]"],
        "structs": ["jsonb"],
    },
    integers=("integer", "bigint", "smallint"),
    bytes_as_text=("text", "integer"),
)
# SQLite's declared types by affinity, and none (a column with no type); STRICT tables take
# only their six.
SQLITE = Engine(
    "SQLite",
    {
        "ints": ["INTEGER", "BIGINT", "REAL", "NUMERIC", "TEXT", "BOOLEAN", ""],
        "floats": ["REAL", "DOUBLE", "NUMERIC", "DECIMAL(10,3)", "INTEGER", "TEXT"],
        "decimals": ["NUMERIC", "DECIMAL({p},{s})", "INTEGER", "REAL", "TEXT"],
        "dates": ["DATE", "DATE", "DATETIME", "TEXT"],
        "timestamps": ["DATETIME", "TIMESTAMP", "DATE", "TEXT"],
        "zoned timestamps": ["DATETIME", "TIMESTAMP", "DATE", "TEXT"],
        "times": ["TIME", "TEXT"],
        "strings": ["TEXT", "VARCHAR(5)", "INTEGER", "REAL", "NUMERIC", "BOOLEAN", "DATE", "DATETIME", "TIME", "JSON", "BLOB", ""],
        "uuids": ["BLOB", ""],
        "binaries": ["BLOB", "", "TEXT", "INTEGER"],
        "booleans": ["BOOLEAN", "INTEGER", "TEXT"],
        "text lists": ["JSON", "TEXT"],
        "integer lists": ["JSON", "TEXT"],
        "structs": ["JSON", "TEXT"],
    },
    lists_as_json=True,
    booleans_as_digits=True,
    zone_with_minutes=True,
    bytes_as_text=("TEXT", "INTEGER"),
)
# A binary value into ANY is a blob, which no CSV text makes (ANY keeps text as text).
SQLITE_STRICT = dataclasses.replace(
    SQLITE,
    name="SQLite STRICT",
    types={
        kind: ["INTEGER", "INT", "REAL", "TEXT", "BLOB"] + ([] if kind in ("uuids", "binaries") else ["ANY"])
        for kind in SQLITE.types
    },
    bytes_as_text=("INTEGER", "INT", "REAL", "TEXT"),
    strict=True,
)


# MariaDB: a zoned timestamp into DATETIME or TIMESTAMP is refused before a row is read
# (LOAD DATA reads no zone), and TIMESTAMP is left out (each session reads it in its own zone);
# strings into BOOLEAN are left out too (inrush takes COPY's `true` and `yes` there, as
# docs/mariadb.md says, where LOAD DATA warns).
MARIADB_BINARY = ["BINARY(16)", "VARBINARY(16)", "BLOB", "VARBINARY(8)", "TEXT", "INT"]
MARIADB = Engine(
    "MariaDB",
    {
        "ints": ["TINYINT", "SMALLINT", "INT", "BIGINT", "BIGINT UNSIGNED", "DECIMAL(7,2)", "DOUBLE", "FLOAT", "VARCHAR(40)", "TEXT"],
        "floats": ["DOUBLE", "FLOAT", "DECIMAL(10,3)", "INT", "BIGINT", "VARCHAR(40)"],
        "decimals": ["DECIMAL(65,30)", "DECIMAL({p},{s})", "BIGINT", "INT", "DOUBLE", "TEXT"],
        "dates": ["DATE", "DATE", "DATETIME", "VARCHAR(40)"],
        "timestamps": ["DATETIME(6)", "DATETIME", "DATE", "VARCHAR(64)"],
        "zoned timestamps": ["VARCHAR(64)", "TEXT", "DATE"],
        "times": ["TIME(6)", "TIME", "VARCHAR(30)"],
        "strings": ["VARCHAR(5)", "TEXT", "CHAR(3)", "INT", "BIGINT", "DECIMAL(10,2)", "DOUBLE", "DATE", "DATETIME(6)", "TIME", "JSON", "BLOB"],
        "uuids": MARIADB_BINARY[:3],
        "binaries": MARIADB_BINARY[2:],
        "booleans": ["BOOLEAN", "INT", "VARCHAR(5)"],
        "text lists": ["JSON", "TEXT"],
        "integer lists": ["JSON", "TEXT"],
        "structs": ["JSON", "TEXT"],
    },
    lists_as_json=True,
    booleans_as_digits=True,
    bytes_as_text=tuple(MARIADB_BINARY),
)


def column_type(rng: random.Random, engine: Engine, kind: str) -> str:
    return rng.choice(engine.types[kind]).format(p=(p := rng.randint(1, 20)), s=rng.randint(0, min(p, 6)))


def json_text(value) -> str:
    """A list or struct as inrush's JSON writes it: no spaces, non-ASCII as itself."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


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


def ints(rng: random.Random, n: int, engine: Engine) -> Column:
    arrow = rng.choice(list(INTS))
    low, high = INTS[arrow]
    edges = [v for v in INT_EDGES + [low, high] if low <= v <= high]

    def common():
        v = magnitude(rng, high)
        return -min(v, -low) if low < 0 and rng.random() < 0.5 else v

    sql = column_type(rng, engine, "ints")
    return Column(arrow, sql, [pick(rng, edges, common) for _ in range(n)], str)


FLOAT_EDGES = [
    math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
    3.4028234663852886e38, 3.5e38, 1.401298464324817e-45, 1e-46, 0.1, 3.0, -7.0, 0.5, 2.5, 1e15,
    2.0**53 + 2, 1e20, 32767.0, 32768.0, 2147483647.0, 2147483648.0, 9.223372036854776e18, 123.456,
]


def floats(rng: random.Random, n: int, engine: Engine) -> Column:
    single = rng.random() < 0.4
    sql = column_type(rng, engine, "floats")
    whole = sql in engine.integers

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


def decimals(rng: random.Random, n: int, engine: Engine) -> Column:
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
    sql = column_type(rng, engine, "decimals")
    raw = (pa.decimal256 if wide else pa.decimal128)(precision, 0)
    return Column(arrow, sql, unscaled, lambda v: format(v.scaleb(-scale, EXACT), "f"), raw, view=True)


# PostgreSQL's first and last dates, as days from 1970-01-01.
PG_FIRST_DAY, PG_LAST_DAY = -2_440_588, 2_145_042_905
DAY_EDGES = [
    PG_FIRST_DAY, PG_FIRST_DAY - 1, PG_LAST_DAY, PG_LAST_DAY + 1, -(2**31), 2**31 - 1, 0, -1,
    -719_162, -719_163, 2_932_896, 2_932_897, 106_751_991,
]


def dates(rng: random.Random, n: int, engine: Engine) -> Column:
    def common():
        return rng.randint(-3_000_000, 3_000_000) if rng.random() < 0.8 else rng.randint(-(2**31), 2**31 - 1)

    days = [pick(rng, DAY_EDGES, common) for _ in range(n)]
    sql = column_type(rng, engine, "dates")
    return Column(pa.date32(), sql, days, lambda v: ymd(v)[0] + (" BC" if ymd(v)[1] else ""))


# PostgreSQL's first and last microseconds, from 1970-01-01.
PG_FIRST_US, PG_LAST_US = -210_866_803_200_000_000, 9_224_318_015_999_999_999


def timestamps(rng: random.Random, n: int, engine: Engine) -> Column:
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
    sql = column_type(rng, engine, "timestamps" if zone is None else "zoned timestamps")
    suffix = "" if zone is None else "+00:00" if engine.zone_with_minutes else "+00"
    return Column(pa.timestamp(unit, tz=zone), sql, raw, lambda v: timestamp_text(v, unit, suffix), pa.int64())


def times(rng: random.Random, n: int, engine: Engine) -> Column:
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
    return Column(arrow, column_type(rng, engine, "times"), raw, lambda v: time_text(v, unit), pa.int32() if unit in ("s", "ms") else pa.int64())


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


def strings(rng: random.Random, n: int, engine: Engine) -> Column:
    arrow = rng.choice(STRING_TYPES)
    sql = column_type(rng, engine, "strings")
    return Column(arrow, sql, [string(rng) for _ in range(n)], lambda v: v)


def binaries(rng: random.Random, n: int, engine: Engine) -> Column:
    def text(sql: str) -> Callable[[bytes], Any]:
        if sql == "uuid":
            return lambda v: str(uuid.UUID(bytes=v))
        return (lambda v: v) if sql in engine.bytes_as_text else (lambda v: "\\x" + v.hex())

    if rng.random() < 0.3:
        values = [bytes(rng.getrandbits(8) for _ in range(16)) for _ in range(n)]
        sql = column_type(rng, engine, "uuids")
        return Column(pa.binary(16), sql, values, text(sql))

    def common():
        if rng.random() < 0.5:
            return string(rng).encode()
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8)))

    values = [common() for _ in range(n)]
    sql = column_type(rng, engine, "binaries")
    return Column(rng.choice([pa.binary(), pa.large_binary()]), sql, values, text(sql))


def booleans(rng: random.Random, n: int, engine: Engine) -> Column:
    spelled = ("1", "0") if engine.booleans_as_digits else ("t", "f")
    values = [rng.random() < 0.5 for _ in range(n)]
    return Column(pa.bool_(), column_type(rng, engine, "booleans"), values, lambda v: spelled[not v])


def lists(rng: random.Random, n: int, engine: Engine) -> Column:
    kind = rng.choice(["int", "int", "text", "nested"])
    if kind == "text":
        element, sql, arrow = (lambda: string(rng)), column_type(rng, engine, "text lists"), pa.large_list(pa.string())
    else:
        wide = rng.random() < 0.5
        element = lambda: rng.choice([0, 1, -1, 2**31 - 1, 2**31, -(2**31), 2**62, rng.randint(-999, 999)])
        if not wide:
            element = lambda: rng.randint(-(2**31), 2**31 - 1)
        sql, arrow = column_type(rng, engine, "integer lists"), pa.list_(pa.int64() if wide else pa.int32())
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
    return Column(arrow, sql, values, json_text if engine.lists_as_json else lambda v: array_literal(v, str))


def structs(rng: random.Random, n: int, engine: Engine) -> Column:
    arrow = pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.bool_())])

    def value():
        return {"a": rng.choice([None, 0, -(2**63), 2**63 - 1, rng.randint(-9, 9)]), "b": rng.choice([None, string(rng)]), "c": rng.choice([None, True, False])}

    return Column(arrow, column_type(rng, engine, "structs"), [value() for _ in range(n)], json_text)


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
    engine: Engine
    columns: List[Column]
    table: pa.Table

    def describe(self) -> str:
        return f"{self.engine.name}: " + ", ".join(f"{c.arrow} into {c.sql or 'no type'}" for c in self.columns)


def generate(rng: random.Random, engine: Engine) -> Case:
    n = rng.randint(1, 12)
    columns = [rng.choice(KINDS)(rng, n, engine) for _ in range(rng.randint(1, 4))]
    for column in columns:
        if rng.random() < 0.5:
            column.values = [None if rng.random() < 0.1 else v for v in column.values]
    arrays = [pa.array(range(1, n + 1), pa.int32())] + [arrow_array(c) for c in columns]
    names = ["n"] + [f"c{i}" for i in range(len(columns))]
    return Case(engine, columns, pa.table(arrays, names=names))


def source(rng: random.Random, case: Case, directory: str):
    """The table as inrush is given it: a Parquet file of small row groups, an Arrow IPC file of
    small batches, or the table in memory in chunks; a table Parquet cannot hold (a time's or
    timestamp's unit it would have to convert past int64, a negative scale; a time in seconds
    past int32 in milliseconds, which pyarrow wraps) goes as IPC."""
    rows = case.table.num_rows
    chunked = pa.Table.from_batches(case.table.to_batches(max_chunksize=rng.randint(1, rows)))
    way = rng.choice(["parquet", "ipc", "memory"])
    if way == "parquet" and any(
        c.arrow == pa.time32("s") and any(v is not None and abs(v) * 1000 >= 2**31 for v in c.values)
        for c in case.columns
    ):
        way = "ipc"
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


def row_texts(case: Case, i: int) -> list:
    return [None if c.values[i] is None else c.text(c.values[i]) for c in case.columns]


def csv_line(case: Case, i: int, null: bytes = b"") -> bytes:
    fields = [null if t is None else csv_field(t) for t in row_texts(case, i)]
    return b",".join([csv_field(str(i + 1))] + fields) + b"\n"


def copy_reference(db, case: Case):
    """Each row COPYed alone into `theirs`: the rows the server refused, and each row's text with
    the server's answer (what a difference is shown with)."""
    refused, shown = [], []
    for i in range(case.table.num_rows):
        answer = "loaded"
        try:
            with db.cursor() as cur:
                with cur.copy("COPY theirs FROM STDIN (FORMAT csv)") as copy:
                    copy.write(csv_line(case, i))
        except Exception as error:
            refused.append(i + 1)
            answer = str(error).splitlines()[0]
        shown.append(f"    row {i + 1}: {row_texts(case, i)!r}: {answer}")
    return refused, "\n".join(shown)


def load_arrow(rng: random.Random, case: Case, directory: str, to: str):
    """inrush's load of the case into `ours`: how it was given, and the rows it refused (or
    the error that stopped it)."""
    given, way = source(rng, case, directory)
    try:
        result = inrush.load(
            given, to=to, table="ours", max_errors=10**6, connections=1,
            rejects=os.path.join(directory, "case.rejects"),
        )
    except inrush.InrushError as error:
        return way, f"inrush failed: {error}"
    return way, [r.line for r in result.rejects]


def differ(way, ours, rejected, theirs, refused, reference: str, shown: str) -> Optional[str]:
    if ours == theirs and rejected == refused:
        return None
    return (
        f"{way}: rows differ\n  inrush: {ours} (refused {rejected})\n"
        f"  {reference}: {theirs} (refused {refused})\n{shown}"
    )


def against_copy(db, server: str, rng: random.Random, case: Case, directory: str):
    """How inrush and the server's COPY differ on the case (or None), and whether COPY refused
    a row."""
    columns = ", ".join(["n int"] + [f"c{i} {c.sql}" for i, c in enumerate(case.columns)])
    db.execute(f"DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours ({columns}); CREATE TABLE theirs ({columns})")
    refused, shown = copy_reference(db, case)
    way, rejected = load_arrow(rng, case, directory, server)
    if isinstance(rejected, str):
        return f"{way}: {rejected}", bool(refused)
    listed = ", ".join(["n"] + [f"c{i}::text" for i in range(len(case.columns))])
    ours = db.execute(f"SELECT {listed} FROM ours ORDER BY n").fetchall()
    theirs = db.execute(f"SELECT {listed} FROM theirs ORDER BY n").fetchall()
    return differ(way, ours, rejected, theirs, refused, "COPY", shown), bool(refused)


def against_csv(path: str, rng: random.Random, case: Case, directory: str):
    """SQLite: how inrush's load of the Arrow values and its load of their text as CSV differ
    (or None), and whether a row was refused. inrush stores what `.import` stores of every
    value it accepts, and refuses what the declared type says is wrong (the CSV fuzzer in
    crates/inrush/tests/fuzz.rs holds that path to `.import`): the Arrow path must take exactly
    the text path's decisions, and store the same values with the same storage classes."""
    to = f"sqlite://{path}"
    columns = ", ".join(["n INTEGER"] + [f"c{i} {c.sql}" for i, c in enumerate(case.columns)])
    strict = " STRICT" if case.engine.strict else ""
    with sqlite3.connect(path, isolation_level=None) as conn:
        conn.executescript(
            f"DROP TABLE IF EXISTS ours; DROP TABLE IF EXISTS theirs;"
            f"CREATE TABLE ours ({columns}){strict}; CREATE TABLE theirs ({columns}){strict};"
        )
    rows = case.table.num_rows
    text = os.path.join(directory, "case.csv")
    with open(text, "wb") as file:
        file.writelines(csv_line(case, i) for i in range(rows))
    answers = inrush.load(text, to=to, table="theirs", max_errors=10**6, rejects=os.path.join(directory, "text.rejects"))
    way, rejected = load_arrow(rng, case, directory, to)
    listed = ", ".join(["n"] + [f"c{i}, typeof(c{i})" for i in range(len(case.columns))])
    with sqlite3.connect(path, isolation_level=None) as conn:
        theirs = conn.execute(f"SELECT {listed} FROM theirs ORDER BY n").fetchall()
        ours = conn.execute(f"SELECT {listed} FROM ours ORDER BY n").fetchall()
    refused = sorted(set(range(1, rows + 1)) - {row[0] for row in theirs})
    if isinstance(rejected, str):
        return f"{way}: {rejected}", bool(refused)
    shown = "\n".join(
        [f"    row {i + 1}: {row_texts(case, i)!r}" for i in range(rows)]
        + [f"    CSV refused line {r.line}: {r.reason}" for r in answers.rejects]
    )
    return differ(way, ours, rejected, theirs, refused, "CSV", shown), bool(refused)


MARIADB_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "mariadb.sh")


@pytest.fixture(scope="module")
def mariadb():
    """A private MariaDB (scripts/mariadb.sh): its data directory and URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = f"/tmp/inrush-mdb-fuzz-{os.getpid()}"
    started = subprocess.run([MARIADB_SCRIPT, "start", data, str(port)], check=True, capture_output=True, text=True)
    yield data, started.stdout.strip().splitlines()[-1]
    subprocess.run([MARIADB_SCRIPT, "stop", data], check=True, capture_output=True)
    shutil.rmtree(data, ignore_errors=True)


def mariadb_client(data: str, sql: str) -> List[List[str]]:
    """`sql` run by the `mariadb` client, going on past errors: the rows it printed."""
    done = subprocess.run(
        [MARIADB_SCRIPT, "client", data, "--force", "-N", "-B"], input=sql, capture_output=True, text=True,
    )
    return [line.split("\t") for line in done.stdout.splitlines()]


STRICT_LOAD = (
    "LOAD DATA LOCAL INFILE '{}' INTO TABLE theirs CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' "
    "OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' LINES TERMINATED BY '\\n';"
)


def against_load_data(mariadb, rng: random.Random, case: Case, directory: str):
    """MariaDB: how inrush and the server's strict `LOAD DATA` of each row alone differ (or
    None), and whether a row was refused. `LOAD DATA LOCAL` turns errors into warnings and
    loads the row: a row it warns about (not a note) is one it refused, as inrush reads it."""
    data, url = mariadb
    columns = ", ".join(["n INT"] + [f"c{i} {c.sql}" for i, c in enumerate(case.columns)])
    script = [
        "SET SESSION sql_mode = CONCAT_WS(',', @@sql_mode, 'STRICT_ALL_TABLES');",
        f"DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours ({columns}); CREATE TABLE theirs ({columns});",
    ]
    rows = case.table.num_rows
    for i in range(rows):
        path = os.path.join(directory, f"row{i + 1}.csv")
        with open(path, "wb") as file:
            file.write(csv_line(case, i, null=b"NULL"))
        script += [f"SELECT 'row', {i + 1};", STRICT_LOAD.format(path), "SHOW WARNINGS;"]
    refused, answers, row = [], {}, 0
    for line in mariadb_client(data, "\n".join(script)):
        if line[0] == "row":
            row = int(line[1])
        elif line[0] in ("Warning", "Error"):
            if row not in refused:
                refused.append(row)
            answers.setdefault(row, line[-1])
    way, rejected = load_arrow(rng, case, directory, url)
    if isinstance(rejected, str):
        return f"{way}: {rejected}", bool(refused)
    listed = ", ".join(["n"] + [f"HEX(CAST(c{i} AS BINARY))" for i in range(len(case.columns))])
    read = mariadb_client(data, f"SELECT 'ours', {listed} FROM ours UNION ALL SELECT 'theirs', {listed} FROM theirs;")
    ours = sorted(tuple(r[1:]) for r in read if r[0] == "ours")
    theirs = sorted(tuple(r[1:]) for r in read if r[0] == "theirs" and int(r[1]) not in refused)
    shown = "\n".join(f"    row {i + 1}: {row_texts(case, i)!r}: {answers.get(i + 1, 'loaded')}" for i in range(rows))
    return differ(way, ours, rejected, theirs, refused, "LOAD DATA", shown), bool(refused)


def fuzz(into: str, engines: Callable[[random.Random], Engine], compare) -> None:
    """Generates tables for `engines` and compares each with `compare`, for the seed, count or
    minutes the environment gives; fails with every difference found."""
    seed = int(os.environ.get("INRUSH_FUZZ_SEED", "20261205"))
    cases = int(os.environ.get("INRUSH_FUZZ_CASES", "150"))
    minutes = os.environ.get("INRUSH_FUZZ_MINUTES")
    # The minutes are the whole run's: each of the three engines' tests takes a third.
    until = time.monotonic() + float(minutes) * 20 if minutes else None
    rng = random.Random(seed)
    tried = refusing = 0
    found = []
    while (time.monotonic() < until) if until else tried < cases:
        case = generate(rng, engines(rng))
        tried += 1
        difference, refused = compare(rng, case)
        if difference:
            found.append(f"table {tried} (seed {seed}, {case.describe()}): {difference}")
        refusing += refused
    print(f"fuzz: {tried} Arrow tables into {into} tried (seed {seed}), {refusing} with rows refused, {len(found)} differences")
    assert not found, "\n".join(found)


def test_arrow_values_load_as_copy_reads_their_text_row_by_row(db, server, tmp_path):
    fuzz("PostgreSQL", lambda rng: POSTGRESQL, lambda rng, case: against_copy(db, server, rng, case, str(tmp_path)))


def test_arrow_values_load_into_sqlite_as_their_text_does(tmp_path):
    path = str(tmp_path / "fuzz.sqlite3")
    fuzz(
        "SQLite",
        lambda rng: SQLITE_STRICT if rng.random() < 0.3 else SQLITE,
        lambda rng, case: against_csv(path, rng, case, str(tmp_path)),
    )


def test_arrow_values_load_into_mariadb_as_its_strict_load_data_reads_their_text(mariadb, tmp_path):
    fuzz("MariaDB", lambda rng: MARIADB, lambda rng, case: against_load_data(mariadb, rng, case, str(tmp_path)))
