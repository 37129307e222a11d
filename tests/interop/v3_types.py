"""The reference side of icefloe's v3 type checks (driven by tests/interop/v3_types.rs).

    v3_types.py check WAREHOUSE

icefloe created and wrote, in the SQLite catalog of WAREHOUSE:
  db.ns       (id int, ts timestamp_ns, tz timestamptz_ns, u unknown), partitioned by
              day(ts), hour(tz): PyIceberg 0.12 reads it (DuckDB 1.5.5 has no timestamptz_ns);
  db.variant  (id int, ts timestamp_ns, v variant), partitioned by day(ts): DuckDB's iceberg
              extension reads it (PyIceberg 0.12 has no variant);
  db.geo      (id int, g geometry): DuckDB reads the WKB as GEOMETRY (shown as WKT).
The expected values are the ones icefloe was given (ROWS below), turned into nanoseconds and
JSON values here by pyarrow and the json module, not by icefloe. Exit status 1 on any mismatch,
after printing every check.
"""

import datetime
import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

from interop import duckdb_connection

# (id, ts, tz) as icefloe inserted them into db.ns; u is NULL in every row.
NS_ROWS = [
    (1, "2024-01-01T00:00:00.000000001", "2024-01-01T23:59:59.999999999"),
    (2, "2024-01-01T12:34:56.123456789", "2024-01-02T00:00:00"),
    (3, "2024-01-03T00:00:00.5", None),
]
# (id, ts, v as JSON text) as icefloe inserted them into db.variant (None: SQL NULL).
VARIANT_ROWS = [
    (1, "2024-01-01T00:00:00.000000001", '{"b": [1, 2.5, "x"], "a": null, "n": {"k": true}}'),
    (2, "2024-01-03T12:34:56.123456789", None),
    (3, "2024-01-03T00:00:00", "42"),
    (4, "2024-01-04T00:00:00", '"text"'),
]


def nanos(texts):
    """ISO timestamps (UTC for the zoned column) as nanoseconds since the epoch, by pyarrow."""
    return pa.array(texts, pa.string()).cast(pa.timestamp("ns")).cast(pa.int64()).to_pylist()


def same(label, expected, got):
    if expected == got:
        print(f"  ok   {label}")
        return True
    print(f"  FAIL {label}:\n       expected: {expected}\n       got:      {got}")
    return False


def as_ints(column):
    return column.cast(pa.int64()).to_pylist()


def by_pyiceberg(warehouse):
    cat = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db",
                     warehouse=f"file://{warehouse}")
    table = cat.load_table("db.ns")
    types = {f.name: str(f.field_type) for f in table.schema().fields}
    ok = same("PyIceberg: the schema's types", {"id": "int", "ts": "timestamp_ns",
                                                "tz": "timestamptz_ns", "u": "unknown"}, types)
    rows = table.scan().to_arrow().sort_by("id")
    ok &= same("PyIceberg: ts in nanoseconds", nanos([r[1] for r in NS_ROWS]), as_ints(rows["ts"]))
    ok &= same("PyIceberg: tz in nanoseconds", nanos([r[2] for r in NS_ROWS]), as_ints(rows["tz"]))
    ok &= same("PyIceberg: u is null", [None] * len(NS_ROWS), rows["u"].to_pylist())
    epoch = datetime.date(1970, 1, 1)
    expected = sorted(
        ((epoch + datetime.timedelta(days=ts // 86_400_000_000_000)).isoformat(),
         None if tz is None else tz // 3_600_000_000_000)
        for ts, tz in zip(nanos([r[1] for r in NS_ROWS]), nanos([r[2] for r in NS_ROWS])))
    partitions = table.inspect.files().select(["partition"]).to_pylist()
    got = sorted((p["partition"]["ts_day"].isoformat(), p["partition"]["tz_hour"])
                 for p in partitions)
    ok &= same("PyIceberg: partition tuples (day(ts), hour(tz))", expected, got)
    return ok


def by_duckdb(warehouse):
    con, why = duckdb_connection()
    if con is None:
        print(f"  FAIL DuckDB: {why}")
        return False
    import sqlite3
    location = sqlite3.connect(f"{warehouse}/catalog.db").execute(
        "SELECT metadata_location FROM iceberg_tables WHERE table_name = 'variant'").fetchone()[0]
    rows = con.execute(
        f"SELECT id, epoch_ns(ts), v IS NULL, CAST(v AS JSON)::VARCHAR "
        f"FROM iceberg_scan('{location}') ORDER BY id").fetchall()
    ok = same("DuckDB: ts in nanoseconds", nanos([r[1] for r in VARIANT_ROWS]),
              [r[1] for r in rows])
    expected = [None if r[2] is None else json.loads(r[2]) for r in VARIANT_ROWS]
    got = [None if r[2] else json.loads(r[3]) for r in rows]
    ok &= same("DuckDB: the variants as JSON values", expected, got)
    pruned = con.execute(
        f"SELECT count(*) FROM iceberg_scan('{location}') WHERE ts >= '2024-01-03'").fetchone()[0]
    ok &= same("DuckDB: a filter on the timestamp_ns column", 3, pruned)
    location = sqlite3.connect(f"{warehouse}/catalog.db").execute(
        "SELECT metadata_location FROM iceberg_tables WHERE table_name = 'geo'").fetchone()[0]
    rows = con.execute(f"SELECT id, typeof(g), g::VARCHAR FROM iceberg_scan('{location}') "
                       "ORDER BY id").fetchall()
    ok &= same("DuckDB: the geometries", [(1, "GEOMETRY", "POINT (1 2)"),
                                          (2, "GEOMETRY", "LINESTRING (0 0, 1 1)"),
                                          (3, "GEOMETRY", None)], rows)
    return ok


def main(argv):
    command, warehouse = argv[1], argv[2]
    if command != "check":
        raise SystemExit(f"unknown command {command}")
    ok = by_pyiceberg(warehouse)
    ok &= by_duckdb(warehouse)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
