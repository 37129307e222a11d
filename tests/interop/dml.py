"""The reference side of icefloe's row-level change checks (driven by tests/interop/dml.rs).

    dml.py check WAREHOUSE
    dml.py steps WAREHOUSE
    dml.py evolve WAREHOUSE TABLE COLUMN   PyIceberg adds an identity partition field on COLUMN


WAREHOUSE/dml.json lists tables, each with the DuckDB DDL of the same columns, the statements
icefloe ran on it (INSERT, DELETE, UPDATE, TRUNCATE; `{t}` stands for the table) and the
metadata file icefloe committed last. DuckDB runs the same statements on a native table (the
independent answer), then the rows of icefloe's table as PyIceberg reads it (SQLite catalog)
and as DuckDB's iceberg extension reads it (the metadata file, position deletes included)
and as icefloe read it (WAREHOUSE/.../rows.arrow) must equal DuckDB's. Exit status 1 on any mismatch, after printing every check.
"""

import json
import sys

import duckdb
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

from compare import canon_rows, same_rows
from interop import duckdb_connection


def reference_rows(entry):
    """The table's rows after DuckDB ran the same statements on a native table."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(entry["duckdb_ddl"].replace("{t}", "t"))
    for statement in entry["statements"]:
        con.execute(statement.replace("{t}", "t"))
    return con.execute("SELECT * FROM t").fetch_arrow_table()


def steps(warehouse):
    """WAREHOUSE/steps.json: random statement sequences, with icefloe's rows after each
    statement; DuckDB runs each statement on a native table and compares after every one."""
    with open(f"{warehouse}/steps.json") as f:
        spec = json.load(f)
    ok = True
    for entry in spec["tables"]:
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        con.execute(entry["duckdb_ddl"].replace("{t}", "t"))
        failed = 0
        for i, (statement, dump) in enumerate(zip(entry["statements"], entry["dumps"])):
            con.execute(statement.replace("{t}", "t"))
            expected_table = con.execute("SELECT * FROM t").fetch_arrow_table()
            columns = expected_table.column_names
            with pa.ipc.open_file(dump) as reader:
                icefloe = reader.read_all()
            if not same_rows(f"{entry['name']} step {i}: {statement[:70]}",
                             canon_rows(expected_table, columns), canon_rows(icefloe, columns)):
                failed += 1
                break
        ok &= failed == 0
    return ok


def evolve(warehouse, name, column):
    from pyiceberg.transforms import IdentityTransform
    catalog = SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db",
                         warehouse=f"file://{warehouse}")
    table = catalog.load_table(name)
    with table.update_spec() as update:
        update.add_field(column, IdentityTransform(), f"{column}_evolved")
    print(f"{name}: partition spec {catalog.load_table(name).spec()}")


def main(argv):
    if len(argv) == 5 and argv[1] == "evolve":
        evolve(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 3 and argv[1] == "steps":
        return 0 if steps(argv[2]) else 1
    if len(argv) != 3 or argv[1] != "check":
        print(__doc__)
        return 2
    warehouse = argv[2]
    with open(f"{warehouse}/dml.json") as f:
        spec = json.load(f)
    catalog = SqlCatalog(
        "default",
        uri=f"sqlite:///{warehouse}/catalog.db",
        warehouse=f"file://{warehouse}",
    )
    iceberg, why_not = duckdb_connection()
    if iceberg is None:
        print("!" * 78)
        print(f"!! DuckDB iceberg_scan checks were NOT RUN: {why_not}")
        print("!" * 78)
    ok = True
    for entry in spec["tables"]:
        name = entry["name"]
        print(f"{name} ({len(entry['statements'])} statements):")
        expected_table = reference_rows(entry)
        columns = expected_table.column_names
        expected = canon_rows(expected_table, columns)
        table = catalog.load_table(name)
        ok &= same_rows("pyiceberg vs duckdb native", expected,
                        canon_rows(table.scan().to_arrow(), columns))
        if iceberg is not None:
            scan = iceberg.execute(
                f"SELECT * FROM iceberg_scan('{entry['metadata_location']}')"
            ).fetch_arrow_table()
            ok &= same_rows("duckdb iceberg_scan vs duckdb native", expected,
                            canon_rows(scan, columns))
        with pa.ipc.open_file(entry["icefloe_rows"]) as reader:
            icefloe = reader.read_all()
        ok &= same_rows("icefloe vs duckdb native", expected, canon_rows(icefloe, columns))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
