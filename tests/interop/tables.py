"""The interop scenarios' tables: schemas, partition specs and the rows of each commit.

Every value here is chosen by hand to probe a writer: NULLs, NaN, -0.0, infinities, the
extremes of each type, dates before 1970, empty and multi-byte strings.
"""

import datetime as dt
import math
import uuid
from decimal import Decimal

import pyarrow as pa
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

UTC = dt.timezone.utc

# Every primitive type PyIceberg 0.12 writes, plus a required row number that keys the diffs.
ALL_TYPES = Schema(
    NestedField(1, "row", LongType(), required=True),
    NestedField(2, "b", BooleanType()),
    NestedField(3, "i", IntegerType()),
    NestedField(4, "l", LongType()),
    NestedField(5, "f", FloatType()),
    NestedField(6, "d", DoubleType()),
    NestedField(7, "dec", DecimalType(10, 2)),
    NestedField(8, "dec38", DecimalType(38, 6)),
    NestedField(9, "dt", DateType()),
    NestedField(10, "tm", TimeType()),
    NestedField(11, "ts", TimestampType()),
    NestedField(12, "tstz", TimestamptzType()),
    NestedField(13, "s", StringType()),
    NestedField(14, "u", UUIDType()),
    NestedField(15, "fx", FixedType(4)),
    NestedField(16, "bin", BinaryType()),
)

# The same without its uuid: PyIceberg 0.12 cannot build inspect.files / entries for a table with
# a uuid column (pyarrow's from_pylist has no uuid extension support), so those relations are
# compared on the tables of this schema.
NO_UUID = Schema(*(f for f in ALL_TYPES.fields if f.name != "u"))


def spec(*fields):
    """A partition spec from (source column, transform, name) triples, field ids from 1000."""
    ids = {f.name: f.field_id for f in ALL_TYPES.fields}
    return PartitionSpec(
        *(
            PartitionField(ids[col], 1000 + n, transform, name)
            for n, (col, transform, name) in enumerate(fields)
        )
    )


# Several tables, since one spec cannot use two time transforms of one column.
ALL_TYPES_TABLES = {
    "db.types_a": (ALL_TYPES, spec(
        ("i", IdentityTransform(), "i"),
        ("l", BucketTransform(8), "l_bucket"),
        ("s", TruncateTransform(3), "s_trunc"),
        ("tstz", DayTransform(), "tstz_day"),
        ("dt", YearTransform(), "dt_year"),
    )),
    "db.types_b": (ALL_TYPES, spec(
        ("b", IdentityTransform(), "b"),
        ("ts", HourTransform(), "ts_hour"),
        ("dt", MonthTransform(), "dt_month"),
        ("dec", TruncateTransform(100), "dec_trunc"),
        ("u", BucketTransform(4), "u_bucket"),
        ("bin", TruncateTransform(2), "bin_trunc"),
        ("fx", BucketTransform(3), "fx_bucket"),
    )),
    "db.types_c": (NO_UUID, spec(
        ("s", IdentityTransform(), "s"),
        ("ts", YearTransform(), "ts_year"),
        ("tstz", MonthTransform(), "tstz_month"),
        ("i", BucketTransform(5), "i_bucket"),
        ("dec38", BucketTransform(7), "dec38_bucket"),
    )),
    "db.types_unpartitioned": (NO_UUID, PartitionSpec()),
}

I32, I64 = 2**31 - 1, 2**63 - 1
F32_MAX = 3.4028234663852886e38
TS_MIN = dt.datetime(1, 1, 1)
TS_MAX = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)


def _row(row, b, i, l, f, d, dec, dec38, date, tm, ts, s, u, fx, bin_):
    tstz = None if ts is None else ts.replace(tzinfo=UTC)
    return dict(
        row=row, b=b, i=i, l=l, f=f, d=d, dec=dec, dec38=dec38, dt=date, tm=tm, ts=ts,
        tstz=tstz, s=s, u=u, fx=fx, bin=bin_,
    )


def all_types_commits():
    """Three commits of rows for the all-types tables."""
    d = Decimal
    first = [
        _row(1, True, 0, 0, 0.0, 0.0, d("0.00"), d("0.000000"), dt.date(1970, 1, 1),
             dt.time(0, 0), dt.datetime(1970, 1, 1), "", uuid.UUID(int=0), b"\0\0\0\0", b""),
        _row(2, None, None, None, None, None, None, None, None, None, None, None, None,
             None, None),
        # -99999999.00, not .99: truncate(100) of .99 is -100000000.00, past decimal(10, 2).
        _row(3, False, -I32 - 1, -I64 - 1, -F32_MAX, -1.7976931348623157e308,
             d("-99999999.00"), d("-" + "9" * 32 + ".999999"), dt.date(1, 1, 1),
             dt.time(0, 0, 0, 1), TS_MIN, "a", uuid.UUID(int=1), b"\0\0\0\1", b"\0"),
        _row(4, True, I32, I64, F32_MAX, 1.7976931348623157e308, d("99999999.99"),
             d("9" * 32 + ".999999"), dt.date(9999, 12, 31), dt.time(23, 59, 59, 999999),
             TS_MAX, "héllo wörld", uuid.UUID(int=2**128 - 1), b"\xff\xff\xff\xff",
             b"\xff" * 40),
    ]
    second = [
        _row(5, False, -1, -1, math.nan, math.nan, d("-0.01"), d("-0.000001"),
             dt.date(1969, 12, 31), dt.time(12, 30, 15, 500000),
             dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "日本語のテキスト",
             uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), b"abcd", b"\x00\xff\x10"),
        _row(6, True, 1, 1, -0.0, -0.0, d("0.01"), d("0.000001"), dt.date(2000, 2, 29),
             dt.time(1, 2, 3), dt.datetime(2000, 2, 29, 12, 0), "🦆🧊 ice", None,
             None, None),
        _row(7, None, 42, 2**40, math.inf, math.inf, d("12.50"), d("1.5"),
             dt.date(2024, 1, 1), None, dt.datetime(2024, 1, 1, 0, 0, 0, 1), "x" * 100,
             uuid.UUID("00000000-0000-0000-0000-000000000002"), b"\x80\0\0\0", b"\x80"),
    ]
    third = [
        _row(8, False, 7, 7, -math.inf, -math.inf, None, None, dt.date(2024, 2, 29),
             dt.time(23, 0), dt.datetime(2024, 2, 29, 23, 59), "a/b=c %20&?", None,
             b"\x01\x02\x03\x04", b"/=%"),
        _row(9, True, 7, 8, 1.5, 1e-300, d("-5.55"), d("123456.789"), None,
             dt.time(6, 6, 6), None, "Ω", uuid.UUID(int=2**127), None, b"x" * 17),
        _row(10, False, 8, 9, 1.401298464324817e-45, 5e-324, d("0.10"), d("0.1"),
             dt.date(1900, 3, 1), dt.time(0, 0), dt.datetime(1900, 3, 1, 1, 1, 1),
             "\u0000nul", uuid.UUID(int=3), b"zzzz", b""),
    ]
    return [first, second, third]


# A smaller table both writers append to: PyIceberg, icefloe, PyIceberg again.
MIXED = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "amount", DecimalType(10, 2)),
    NestedField(5, "v", DoubleType()),
)

MIXED_SPEC = PartitionSpec(
    PartitionField(2, 1000, IdentityTransform(), "name"),
    PartitionField(3, 1001, DayTransform(), "ts_day"),
)


def mixed_commits():
    """Three commits: PyIceberg's, icefloe's, PyIceberg's; each shares a partition with another."""

    def rows(ids, name):
        return [
            dict(id=i, name=None if i % 5 == 0 else name,
                 ts=dt.datetime(2024, 3, 1 + i % 3, i % 24, tzinfo=UTC),
                 amount=Decimal(i * 125 - 300).scaleb(-2),
                 v=math.nan if i % 4 == 1 else i / 8)
            for i in ids
        ]

    return [rows(range(0, 6), "pyiceberg"), rows(range(6, 12), "icefloe"),
            rows(range(12, 15), "pyiceberg")]


def arrow_table(schema, rows):
    """The rows as an Arrow table of the schema's Arrow form (PyIceberg's mapping)."""
    arrow_schema = schema.as_arrow()
    columns = {f.name: [r[f.name] for r in rows] for f in arrow_schema}
    for field in arrow_schema:
        if pa.types.is_fixed_size_binary(field.type) and field.type.byte_width == 16:
            columns[field.name] = [None if u is None else u.bytes for u in columns[field.name]]
    return pa.Table.from_pydict(columns, schema=arrow_schema)
