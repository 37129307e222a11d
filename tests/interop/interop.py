"""PyIceberg and DuckDB sides of icefloe's interop checks (driven by tests/interop.rs).

    interop.py setup SCENARIO WAREHOUSE      create the catalog and tables, write each commit's
                                             rows as Parquet and WAREHOUSE/plan.json
    interop.py append WAREHOUSE TABLE INPUT  PyIceberg appends the rows of INPUT (Parquet)
    interop.py check WAREHOUSE               PyIceberg reads every table of the plan and
                                             compares with the plan's rows and with what icefloe
                                             read (WAREHOUSE/icefloe/TABLE/*.arrow)
    interop.py duckdb WAREHOUSE              the same rows through DuckDB's iceberg_scan on each
                                             table's metadata file (its own process: a DuckDB
                                             that throws past its API ends the process)
    interop.py state WAREHOUSE TABLE OUT     PyIceberg's view of the table's history as JSON
    interop.py tag WAREHOUSE TABLE NAME      PyIceberg tags the current snapshot
    interop.py pyops WAREHOUSE TABLE ID X    PyIceberg rolls back to ID, drops tag v1, expires X

Expected rows are the plan's inputs (written here, not by icefloe). Exit status 1 on any
mismatch, after printing every check.
"""

import glob
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import UUIDType

import tables
from compare import canon_rows, same_rows

SCENARIOS = {
    # PyIceberg creates the tables; icefloe makes every commit.
    "types": lambda: [
        (name, schema, spec, [("icefloe", rows) for rows in tables.all_types_commits()])
        for name, (schema, spec) in tables.ALL_TYPES_TABLES.items()
    ],
    # icefloe creates the same tables (from the schemas and specs below) and makes every commit.
    "created": lambda: SCENARIOS["types"](),
    # PyIceberg creates and appends, icefloe appends, PyIceberg appends again.
    "mixed": lambda: [
        ("db.mixed", tables.MIXED, tables.MIXED_SPEC,
         list(zip(["pyiceberg", "icefloe", "pyiceberg"], tables.mixed_commits())))
    ],
}

# The inspect relations compared with icefloe's metadata tables of the same name (plan.json
# tells tests/interop.rs which ones to read through icefloe).
RELATIONS = ["snapshots", "history", "refs", "metadata_log_entries", "manifests",
             "all_manifests", "files", "data_files", "entries", "partitions"]

# Columns icefloe has and PyIceberg 0.12 lacks (v3 data_file fields), said once per relation.
V3_ONLY = {"referenced_data_file", "content_offset", "content_size_in_bytes"}


def catalog(warehouse):
    return SqlCatalog(
        "default",
        uri=f"sqlite:///{warehouse}/catalog.db",
        warehouse=f"file://{warehouse}",
    )


def setup(scenario, warehouse):
    cat = catalog(warehouse)
    cat.create_namespace("db")
    plan = {"relations": RELATIONS, "tables": []}
    creator = "icefloe" if scenario == "created" else "pyiceberg"
    for name, schema, spec, commits in SCENARIOS[scenario]():
        if creator == "pyiceberg":
            cat.create_table(name, schema=schema, partition_spec=spec)
        # The table's schema and spec in Iceberg's JSON form, for a creator other than PyIceberg.
        entry = {"name": name, "created_by": creator,
                 "schema": json.loads(schema.model_dump_json()),
                 "partition_spec": json.loads(spec.model_dump_json()), "commits": []}
        for n, (writer, rows) in enumerate(commits, start=1):
            path = os.path.join(warehouse, "input", name, f"{n}.parquet")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            pq.write_table(tables.arrow_table(schema, rows), path)
            entry["commits"].append({"by": writer, "input": path})
        plan["tables"].append(entry)
    with open(os.path.join(warehouse, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)


def append(warehouse, name, path):
    table = catalog(warehouse).load_table(name)
    table.append(pq.read_table(path, schema=table.schema().as_arrow()))


def each_table(warehouse, check_one):
    """Runs `check_one(table, entry, columns, uuids, expected rows)` on every table of the plan."""
    with open(os.path.join(warehouse, "plan.json")) as f:
        plan = json.load(f)
    cat = catalog(warehouse)
    ok = True
    for entry in plan["tables"]:
        print(f"{entry['name']} ({entry['created_by']} created; commits by "
              f"{', '.join(c['by'] for c in entry['commits'])})")
        table = cat.load_table(entry["name"])
        columns = [f.name for f in table.schema().fields]
        uuids = [f.name for f in table.schema().fields if isinstance(f.field_type, UUIDType)]
        expected = []
        for commit in entry["commits"]:
            expected += canon_rows(pq.read_table(commit["input"]), columns, uuids)
        ok &= run_checks(check_one(table, entry, columns, uuids, expected))
    return ok


def run_checks(checks):
    """Runs (label, check) pairs; an engine raising counts as a failed check, not a crash."""
    ok = True
    for label, run in checks:
        try:
            ok &= run()
        except Exception as e:  # noqa: BLE001
            print(f"  FAIL {label}: {type(e).__name__}: {str(e)[:400]}")
            ok = False
    return ok


def check(warehouse):
    ok = each_table(warehouse, lambda *args: pyiceberg_checks(warehouse, *args))
    print("interop check (PyIceberg):", "all passed" if ok else "FAILED")
    return ok


def pyiceberg_checks(warehouse, table, entry, columns, uuids, expected):
    icefloe_dir = os.path.join(warehouse, "icefloe", entry["name"])
    checks = [
        ("pyiceberg scan", lambda: same_rows(
            "pyiceberg scan", expected, canon_rows(table.scan().to_arrow(), columns, uuids))),
        ("pyiceberg count", lambda: same_count(
            "pyiceberg count", len(expected), table.scan().count())),
        ("icefloe scan", lambda: same_rows(
            "icefloe scan", expected,
            canon_rows(read_ipc(os.path.join(icefloe_dir, "rows.arrow")), columns, uuids))),
        ("manifests", lambda: check_commits(table, entry)),
    ]
    for relation in RELATIONS:
        path = os.path.join(icefloe_dir, f"{relation}.arrow")
        check_one = lambda r=relation, p=path: same_relation(table, r, p)  # noqa: E731
        checks.append((f"inspect.{relation}", check_one))
    return checks


def read_ipc(path):
    with pa.ipc.open_file(path) as reader:
        return reader.read_all()


def same_count(label, expected, got):
    if expected == got:
        print(f"  ok   {label}: {got}")
        return True
    print(f"  FAIL {label}: expected {expected}, got {got}")
    return False


def check_commits(table, entry):
    """One snapshot per commit, each adding one manifest and keeping every earlier one."""
    snapshots = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    ok = same_count("snapshots (one per commit)", len(entry["commits"]), len(snapshots))
    previous = set()
    for n, snap in enumerate(snapshots, start=1):
        paths = {m.manifest_path: m for m in snap.manifests(table.io)}
        new = [m for p, m in paths.items() if p not in previous]
        kept = previous <= paths.keys()
        fresh = len(new) == 1 and new[0].added_snapshot_id == snap.snapshot_id
        if not (kept and fresh):
            print(f"  FAIL commit {n} (snapshot {snap.snapshot_id}): {len(paths)} manifests, "
                  f"{len(new)} new, earlier ones {'kept' if kept else 'NOT all kept'}")
            ok = False
        previous = set(paths)
    if ok:
        print(f"  ok   manifests: one new per commit, older ones reused "
              f"({len(previous)} in the last manifest list)")
    return ok


def same_relation(table, relation, icefloe_path):
    """PyIceberg's inspect relation against icefloe's, on the columns both have."""
    try:
        theirs = getattr(table.inspect, relation)()
    except pa.ArrowNotImplementedError as e:
        if str(e) == "extension" and any(
                isinstance(f.field_type, UUIDType) for f in table.schema().fields):
            print(f"  skip inspect.{relation}: PyIceberg 0.12 cannot build it for a table with a "
                  "uuid column (pyarrow from_pylist of its uuid type); compared on the others")
            return True
        raise
    ours = read_ipc(icefloe_path)
    common = [c for c in theirs.column_names if c in ours.column_names]
    only_py = [c for c in theirs.column_names if c not in ours.column_names]
    only_ice = [c for c in ours.column_names if c not in theirs.column_names]
    if V3_ONLY.issuperset(only_ice) and only_ice and not only_py:
        print(f"       icefloe's v3 columns, not in PyIceberg 0.12: {', '.join(only_ice)}")
        only_ice = []
    label = f"inspect.{relation} ({len(common)} columns)"
    expected = canon_rows(theirs, common)
    if relation in ("manifests", "all_manifests") and "partition_summaries" in common:
        restore_empty_bounds(table, expected)
    ok = same_rows(label, expected, canon_rows(ours, common))
    if only_ice:
        print(f"       only in icefloe: {only_ice}")
    if only_py:
        print(f"  FAIL inspect.{relation}: columns missing from icefloe's relation: {only_py}")
    return ok and not only_py


def restore_empty_bounds(table, rows):
    """PyIceberg's inspect shows an empty partition-summary bound (b"", e.g. truncate of "") as
    NULL (`if field_summary.lower_bound`); put back the "" the manifest list really holds."""
    manifests = {m.manifest_path: m for s in table.snapshots() for m in s.manifests(table.io)}
    restored = 0
    for row in rows:
        for summary, raw in zip(row["partition_summaries"], manifests[row["path"]].partitions):
            for bound in ("lower_bound", "upper_bound"):
                if summary[bound] is None and getattr(raw, bound) == b"":
                    summary[bound] = ""
                    restored += 1
    if restored:
        print(f"       {restored} empty partition-summary bounds PyIceberg shows as NULL "
              "compared as ''")


def duckdb_connection():
    """DuckDB with its iceberg extension, loaded from the PyPI package that ships it (DuckDB's
    own INSTALL downloads from its extension site, which this network does not reach)."""
    try:
        import duckdb
        import duckdb_extension_avro
        import duckdb_extension_iceberg
    except ImportError as e:
        return None, f"a DuckDB package is missing ({e})"
    con = duckdb.connect()
    try:
        for module in (duckdb_extension_avro, duckdb_extension_iceberg):
            package = os.path.dirname(module.__file__)
            (path,) = glob.glob(f"{package}/extensions/*/*.duckdb_extension")
            con.execute(f"LOAD '{path}'")
        con.execute("SET TimeZone = 'UTC'")
    except Exception as e:  # noqa: BLE001 - any failure to load means "not run", said loudly
        return None, f"the iceberg extension did not load ({e})"
    return con, None


def check_duckdb(warehouse):
    con, why_not = duckdb_connection()
    if con is None:
        print("!" * 78)
        print(f"!! DuckDB iceberg_scan checks were NOT RUN: {why_not}")
        print("!" * 78)
        return True

    def checks(table, entry, columns, uuids, expected):
        scan = f"iceberg_scan('{table.metadata_location}')"
        return [
            ("duckdb count", lambda: same_count(
                "duckdb count", len(expected),
                con.execute(f"SELECT count(*) FROM {scan}").fetchone()[0])),
            ("duckdb iceberg_scan", lambda: same_rows(
                "duckdb iceberg_scan", expected,
                canon_rows(con.execute(f"SELECT * FROM {scan}").to_arrow_table(), columns,
                           uuids))),
        ]

    ok = each_table(warehouse, checks)
    print("interop check (DuckDB):", "all passed" if ok else "FAILED")
    return ok


def state(warehouse, name, out):
    """What PyIceberg sees of a table's history: current snapshot, snapshots, refs, row count."""
    table = catalog(warehouse).load_table(name)
    current = table.current_snapshot()
    refs = {ref_name: {"snapshot_id": ref.snapshot_id, "type": str(ref.snapshot_ref_type.value)}
            for ref_name, ref in table.metadata.refs.items()}
    with open(out, "w") as f:
        json.dump({"current": current.snapshot_id if current else None,
                   "snapshots": sorted(s.snapshot_id for s in table.snapshots()),
                   "refs": refs,
                   "count": len(table.scan().to_arrow())}, f)


def tag(warehouse, name, tag_name):
    """PyIceberg tags the current snapshot."""
    table = catalog(warehouse).load_table(name)
    table.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, tag_name).commit()


def pyops(warehouse, name, rollback_to, expire_id):
    """PyIceberg rolls the table back to ROLLBACK_TO, removes the tag `v1`, then expires
    snapshot EXPIRE_ID."""
    table = catalog(warehouse).load_table(name)
    table.manage_snapshots().rollback_to_snapshot(int(rollback_to)).remove_tag("v1").commit()
    table = catalog(warehouse).load_table(name)
    table.maintenance.expire_snapshots().by_id(int(expire_id)).commit()


def main(argv):
    command, *args = argv
    if command == "setup":
        setup(*args)
    elif command == "append":
        append(*args)
    elif command == "check":
        return 0 if check(*args) else 1
    elif command == "duckdb":
        return 0 if check_duckdb(*args) else 1
    elif command == "state":
        state(*args)
    elif command == "tag":
        tag(*args)
    elif command == "pyops":
        pyops(*args)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
