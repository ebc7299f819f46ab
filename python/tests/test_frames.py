"""DataFrames and Arrow data loaded by inrush, each compared row for row with the same rows
loaded by the server's own COPY (their CSV text) into a twin table."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import inrush
from conftest import copy_csv, rows


def twin_tables(db, table, columns_sql):
    db.execute(f"CREATE TABLE {table} ({columns_sql})")
    db.execute(f"CREATE TABLE {table}_copy ({columns_sql})")


def assert_same_as_copy(db, server, table, source, csv_text, **options):
    result = inrush.load(source, to=server, table=table, **options)
    copy_csv(db, f"{table}_copy", csv_text.encode())
    ours = rows(db, f"SELECT * FROM {table} ORDER BY 1")
    theirs = rows(db, f"SELECT * FROM {table}_copy ORDER BY 1")
    assert result.rows == len(theirs)
    assert ours == theirs
    return result


def pandas_csv(frame):
    return frame.to_csv(index=False, header=False)


def test_pandas_types_as_copy_reads_their_text(db, server, table):
    frame = pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "nullable_int": pd.array([7, None, -3, 2**31 - 1], dtype="Int64"),
            "category": pd.Categorical(["red", "green", None, "red"]),
            "naive": pd.to_datetime(
                ["2024-01-01 10:00:00", None, "1999-12-31 23:59:59.123456", "2038-01-19 03:14:08"], format="ISO8601"
            ),
            "zoned": pd.to_datetime(
                ["2024-06-01 10:00:00+02:00", "2024-01-01 00:00:00+00:00", None, "1970-01-01 00:00:00+05:30"], format="ISO8601",
                utc=True,
            ).tz_convert("Europe/Paris"),
            "price": [decimal.Decimal("12.30"), None, decimal.Decimal("-0.01"), decimal.Decimal("99999.99")],
            "ratio": [0.1, float("nan"), None, 1e300],
            "name": ["a", None, 'quote " and, comma', "ünïcode"],
            "flag": pd.array([True, None, False, True], dtype="boolean"),
        }
    )
    twin_tables(
        db,
        table,
        "id int, nullable_int integer, category text, naive timestamp, zoned timestamptz, "
        "price numeric(12,2), ratio float8, name varchar(40), flag boolean",
    )
    assert_same_as_copy(db, server, table, frame, pandas_csv(frame))
    # NaN and None are both pandas' missing value: NULL, as pandas' to_sql writes them.
    assert rows(db, f"SELECT count(*) FROM {table} WHERE ratio IS NULL") == [("2",)]


def arrow_text(array: pa.Array):
    """Each value as COPY's CSV reads it: Arrow's own rendering, hex for bytes, a literal for
    lists; None for NULL."""
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type) or pa.types.is_fixed_size_binary(array.type):
        values = ["\\x" + v.hex() if v is not None else None for v in array.to_pylist()]
        if pa.types.is_fixed_size_binary(array.type):
            return [None if v is None else v[2:] for v in values]
        return values
    if pa.types.is_list(array.type):
        return [None if v is None else "{" + ",".join("NULL" if x is None else str(x) for x in v) + "}" for v in array.to_pylist()]
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    return pc.cast(array, pa.string()).to_pylist()


def csv_of(table: pa.Table):
    """CSV with every value quoted: an unquoted empty field is NULL, a quoted one ''."""
    quoted = lambda v: "" if v is None else '"' + v.replace('"', '""') + '"'
    columns = [arrow_text(c.combine_chunks()) for c in table.columns]
    return "".join(",".join(quoted(v) for v in row) + "\n" for row in zip(*columns))


ARROW_COLUMNS = [
    # (name, arrow array, target type)
    ("i8", pa.array([1, None, -128, 127], pa.int8()), "smallint"),
    ("i16", pa.array([1, None, -32768, 32767], pa.int16()), "smallint"),
    ("i32", pa.array([1, None, -(2**31), 2**31 - 1], pa.int32()), "integer"),
    ("i64", pa.array([1, None, -(2**63), 2**63 - 1], pa.int64()), "bigint"),
    ("u8", pa.array([1, None, 0, 255], pa.uint8()), "smallint"),
    ("u32", pa.array([1, None, 0, 2**32 - 1], pa.uint32()), "bigint"),
    ("u64", pa.array([1, None, 0, 2**64 - 1], pa.uint64()), "numeric"),
    ("f32", pa.array([1.5, None, -0.0, 3.4e38], pa.float32()), "real"),
    ("f64", pa.array([0.1, None, math.inf, -1e-300], pa.float64()), "double precision"),
    ("b", pa.array([True, None, False, True]), "boolean"),
    ("s", pa.array(["x", None, "", "ü, \"q\""]), "text"),
    ("ls", pa.array(["x", None, "y", "z"], pa.large_string()), "varchar(5)"),
    ("sv", pa.array(["x", None, "y", "z"], pa.string_view()), "text"),
    ("bin", pa.array([b"\x00\xff", None, b"", b"abc"]), "bytea"),
    ("lbin", pa.array([b"\x01", None, b"", b"\\"], pa.large_binary()), "bytea"),
    ("d64", pa.array([dt.date(2024, 1, 31), None, dt.date(1970, 1, 1), dt.date(1969, 12, 31)], pa.date64()), "date"),
    ("t32", pa.array([dt.time(10, 0, 1), None, dt.time(0, 0), dt.time(23, 59, 59)], pa.time32("s")), "time"),
    ("d", pa.array([dt.date(2024, 2, 29), None, dt.date(1, 1, 1), dt.date(9999, 12, 31)]), "date"),
    (
        "ts",
        pa.array([dt.datetime(2024, 1, 1, 10, 0, 0, 123456), None, dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1)], pa.timestamp("us")),
        "timestamp",
    ),
    (
        "tstz",
        pa.array([dt.datetime(2024, 1, 1, 10, 0), None, dt.datetime(1970, 1, 1), dt.datetime(2000, 6, 1)], pa.timestamp("ms", tz="UTC")),
        "timestamptz",
    ),
    ("t", pa.array([dt.time(10, 0, 0, 1), None, dt.time(0, 0), dt.time(23, 59, 59)], pa.time64("us")), "time"),
    ("dec", pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-99.99"), decimal.Decimal("0.00")], pa.decimal128(5, 2)), "numeric(5,2)"),
    ("dict", pa.array(["a", None, "b", "a"]).dictionary_encode(), "text"),
    ("uuid", pa.array([bytes(range(16)), None, b"\xff" * 16, b"\x00" * 16], pa.binary(16)), "uuid"),
    ("lst", pa.array([[1, 2], None, [], [None, 3]], pa.list_(pa.int32())), "integer[]"),
]


def arrow_table():
    names = ["id"] + [c[0] for c in ARROW_COLUMNS]
    arrays = [pa.array([1, 2, 3, 4], pa.int32())] + [c[1] for c in ARROW_COLUMNS]
    return pa.table(dict(zip(names, arrays)))


def arrow_ddl():
    return ", ".join(["id int"] + [f"{name} {sql}" for name, _, sql in ARROW_COLUMNS])


@pytest.mark.parametrize("shape", ["table", "reader", "batches", "capsule"])
def test_every_arrow_type_as_copy_reads_its_text(db, server, table, shape):
    data = arrow_table()
    twin_tables(db, table, arrow_ddl())
    source = {
        "table": data,
        "reader": pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=1)),
        "batches": iter(data.to_batches(max_chunksize=3)),
        "capsule": _Capsule(data),
    }[shape]
    assert_same_as_copy(db, server, table, source, csv_of(data))


class _Capsule:
    """Any object with __arrow_c_stream__ (the PyCapsule interface), not a pyarrow type."""

    def __init__(self, data):
        self.data = data

    def __arrow_c_stream__(self, requested_schema=None):
        return self.data.__arrow_c_stream__(requested_schema)


def test_polars_frames_and_lazy_frames(db, server, table):
    frame = pl.DataFrame(
        {
            "id": [1, 2, 3],
            "n": [10, None, -5],
            "s": ["a", None, "c"],
            "d": [dt.date(2024, 1, 1), None, dt.date(2000, 2, 29)],
            "f": [1.25, None, -2.5],
            "cat": pl.Series(["x", "y", None], dtype=pl.Categorical),
        }
    )
    twin_tables(db, table, "id int, n integer, s text, d date, f float8, cat text")
    text = "1,10,a,2024-01-01,1.25,x\n2,,,,,y\n3,-5,c,2000-02-29,-2.5,\n"
    assert_same_as_copy(db, server, table, frame, text)
    db.execute(f"TRUNCATE {table}")
    assert inrush.load(frame.lazy().filter(pl.col("id") > 1), to=server, table=table).rows == 2
    assert rows(db, f"SELECT id FROM {table} ORDER BY 1") == [("2",), ("3",)]


def test_coercions_adbc_gets_wrong(db, server, table):
    """int64 into integer (ADBC: "incorrect binary data format"), integers into numeric (ADBC
    once wrote 0.00), strings into jsonb (ADBC once left out jsonb's version byte)."""
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "amount": pa.array([12345, -7, None], pa.int64()),
            "doc": pa.array(['{"a": [1, 2]}', None, '"x"']),
        }
    )
    twin_tables(db, table, "id integer, amount numeric(12,2), doc jsonb")
    assert_same_as_copy(db, server, table, data, '1,12345,"{""a"": [1, 2]}"\n2,-7,\n3,,"""x"""\n')
    assert rows(db, f"SELECT amount, doc->'a'->>1 FROM {table} WHERE id = 1") == [("12345.00", "2")]


def test_create_types_the_table_from_the_arrow_schema(db, server, table):
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "at": pa.array([dt.datetime(2024, 1, 1), None]), "s": ["a", None]})
    result = inrush.load(data, to=server, table=table, create=True)
    assert result.rows == 2
    assert rows(
        db,
        f"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{table}' ORDER BY ordinal_position",
    ) == [("id", "bigint"), ("at", "timestamp without time zone"), ("s", "text")]
