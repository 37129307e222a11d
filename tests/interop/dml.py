"""The reference side of icefloe's row-level change checks (driven by tests/interop/dml.rs).

    dml.py check WAREHOUSE
    dml.py steps WAREHOUSE
    dml.py evolve WAREHOUSE TABLE COLUMN   PyIceberg adds an identity partition field on COLUMN
    dml.py lineage WAREHOUSE               v3 row lineage through copy-on-write changes


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
import pyarrow.parquet as pq
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


def row_lineage(metadata_location):
    """Each live row's `id` -> (`_row_id`, `_last_updated_sequence_number`), derived as the
    spec says, without icefloe: PyIceberg reads the metadata and manifest entries, DuckDB's
    avro extension the raw `first_row_id` fields (520, 142: PyIceberg 0.12 does not inherit
    them), pyarrow the Parquet columns of the reserved field ids. Also returns the snapshot's
    sequence number and how many files store `_row_id`."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_location)
    snapshot = table.current_snapshot()
    avro, why_not = duckdb_connection()
    assert avro is not None, why_not
    rows, stored_files = {}, 0
    for manifest in snapshot.manifests(table.io):
        if manifest.content != 0:
            continue
        (first,) = avro.execute(
            "SELECT first_row_id FROM read_avro(?) WHERE manifest_path = ?",
            [snapshot.manifest_list, manifest.manifest_path],
        ).fetchone()
        raw = avro.execute(
            "SELECT data_file.file_path, data_file.record_count, data_file.first_row_id "
            "FROM read_avro(?)", [manifest.manifest_path]).fetchall()
        # First Row ID Inheritance: null ids follow the manifest's, counting every earlier
        # data file with a null id (whatever its status).
        inherited, next_id = {}, first
        for path, count, file_first in raw:
            if file_first is None and next_id is not None:
                file_first, next_id = next_id, next_id + count
            inherited[path] = file_first
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            path = entry.data_file.file_path
            parquet = pq.read_table(path.removeprefix("file://"))
            by_id = {int(f.metadata[b"PARQUET:field_id"]): f.name for f in parquet.schema}
            ids = parquet.column(by_id[1]).to_pylist()
            stored_ids = (parquet.column(by_id[ROW_ID]).to_pylist() if ROW_ID in by_id
                          else [None] * len(ids))
            stored_sequences = (parquet.column(by_id[SEQUENCE]).to_pylist()
                                if SEQUENCE in by_id else [None] * len(ids))
            stored_files += ROW_ID in by_id
            for pos, (key, row_id, sequence) in enumerate(zip(ids, stored_ids, stored_sequences)):
                if row_id is None and inherited[path] is not None:
                    row_id = inherited[path] + pos
                if sequence is None:
                    sequence = entry.sequence_number
                assert key not in rows, f"id {key} twice"
                rows[key] = (row_id, sequence)
    return rows, snapshot.sequence_number, stored_files


ROW_ID, SEQUENCE = 2147483540, 2147483539


def lineage(warehouse):
    """WAREHOUSE/lineage.json: the metadata files of a v3 table after each statement, with the
    ids each DELETE removed or UPDATE changed. Rows left keep their `_row_id` and sequence
    number; updated rows keep their `_row_id` and get the update's sequence number; every row
    has an id, none twice; the rewritten files store `_row_id`."""
    with open(f"{warehouse}/lineage.json") as f:
        versions = json.load(f)["versions"]
    ok, previous = True, None
    for version in versions:
        rows, sequence, stored_files = row_lineage(version["metadata"])
        ids = [row_id for row_id, _ in rows.values()]
        label = version["statement"]
        if None in ids or len(set(ids)) != len(ids):
            print(f"FAIL {label}: row ids missing or repeated: {sorted(rows.items())}")
            ok = False
        if previous is not None:
            expected = {k: v for k, v in previous.items() if k not in version.get("deleted", [])}
            for key in version.get("updated", []):
                expected[key] = (previous[key][0], sequence)
            if version.get("inserted"):
                expected.update({k: v for k, v in rows.items() if k not in previous})
            if rows != expected:
                print(f"FAIL {label}: lineage {sorted(rows.items())} != {sorted(expected.items())}")
                ok = False
            if not version.get("inserted") and stored_files == 0:
                print(f"FAIL {label}: no data file stores _row_id after a rewrite")
                ok = False
        print(f"{'ok' if ok else 'FAIL'} {label}: {len(rows)} rows, sequence {sequence}, "
              f"{stored_files} files storing _row_id")
        previous = rows
    return ok


def main(argv):
    if len(argv) == 3 and argv[1] == "lineage":
        return 0 if lineage(argv[2]) else 1
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
