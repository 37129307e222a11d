"""The reference side of icefloe's table-evolution checks (driven by tests/interop/alter.rs).

    alter.py check WAREHOUSE          twins evolved by PyIceberg against icefloe's tables
    alter.py pyiceberg WAREHOUSE      PyIceberg creates, writes and evolves db.by_pyiceberg
    alter.py compare WAREHOUSE ROWS   icefloe's read of db.by_pyiceberg (Arrow IPC) vs PyIceberg's

WAREHOUSE/alter.json lists icefloe's evolved tables, each with the steps as PyIceberg ops (add,
rename, retype, doc, move, drop, optional, properties, upgrade, insert, add/replace/rename_partition,
sort; `refused` steps were refused by icefloe and are skipped). Compared: schemas, partition specs,
sort orders, the files PyIceberg plans for filters over every spec, the rows as PyIceberg, DuckDB
and icefloe read them, and (icefloe's table only: PyIceberg writes unsorted) that the files
recorded as sorted hold their rows in the sort order. PyIceberg creates the twin with the first schema and spec
of icefloe's table and applies each step through its own API, one `update_schema()` per step.
Exit status 1 on any mismatch, after printing every check.
"""

import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import (BooleanType, DoubleType, FloatType, IntegerType, ListType, LongType,
                             NestedField, StringType, StructType)

from pyiceberg.expressions import EqualTo
from pyiceberg.table.sorting import NullOrder, SortDirection
from pyiceberg.transforms import parse_transform

from compare import canon_rows, same_rows
from interop import duckdb_connection

PRIMITIVES = {"string": StringType, "long": LongType, "int": IntegerType, "double": DoubleType,
              "float": FloatType, "boolean": BooleanType}


def catalog(warehouse):
    return SqlCatalog("default", uri=f"sqlite:///{warehouse}/catalog.db",
                      warehouse=f"file://{warehouse}")


def iceberg_type(spec, ids):
    """A PyIceberg type from the test's JSON form; nested ids are placeholders."""
    if isinstance(spec, str):
        return PRIMITIVES[spec]()
    if "list" in spec:
        return ListType(element_id=next(ids), element_type=iceberg_type(spec["list"], ids),
                        element_required=False)
    fields = [NestedField(field_id=next(ids), name=name, field_type=iceberg_type(t, ids),
                          required=False) for name, t in spec["struct"]]
    return StructType(*fields)


def apply(table, step):
    op = step["op"]
    path = tuple(step.get("path", ()))
    if op == "refused":
        return table
    if op == "insert":
        schema = table.schema().as_arrow()
        rows = [{f.name: row.get(f.name) for f in schema} for row in step["rows"]]
        table.append(pa.Table.from_pylist(rows, schema=schema))
        return table
    if op == "properties":
        with table.transaction() as t:
            t.set_properties(step["set"])
        return table
    if op in ("add_partition", "replace_partition", "rename_partition"):
        with table.update_spec() as u:
            if op == "replace_partition":
                u.remove_field(step["remove"])
            if op == "rename_partition":
                u.rename_field(step["name"], step["to"])
            else:
                u.add_field(step["source"], parse_transform(step["transform"]), step.get("name"))
        return table
    if op == "sort":
        with table.update_sort_order() as u:
            for source, transform, direction, nulls in step["fields"]:
                order = u.asc if direction == "asc" else u.desc
                null_order = NullOrder.NULLS_FIRST if nulls == "nulls-first" else NullOrder.NULLS_LAST
                order(source, parse_transform(transform), null_order)
        return table
    if op == "upgrade":
        # PyIceberg 0.12 upgrades to v2 only: the twin stays, the version is compared with
        # the step's.
        return table
    with table.update_schema() as u:
        if op == "add":
            # A default (v3) is left to the comparison: PyIceberg 0.12 writes no v3 twin.
            ids = iter(range(1, 1000))
            required = step.get("required", False) and "default" not in step
            u.add_column(path, iceberg_type(step["type"], ids), doc=step.get("doc"),
                         required=required)
            if step.get("first"):
                u.move_first(".".join(path))
            elif "after" in step:
                u.move_after(".".join(path), step["after"])
        elif op == "rename":
            u.rename_column(path, step["to"])
        elif op == "retype":
            u.update_column(path, field_type=PRIMITIVES[step["type"]]())
        elif op == "doc":
            u.update_column(path, doc=step["doc"])
        elif op == "optional":
            u.update_column(path, required=False)
        elif op == "move":
            u.move_after(".".join(path), step["after"])
        elif op == "drop":
            u.delete_column(path)
        else:
            raise ValueError(f"unknown op {op}")
    return table


def field_forms(fields):
    """Each field's id, name, type, required, doc and defaults, nested fields flattened."""
    out = []
    for f in fields:
        out.append((f.field_id, f.name, str(f.field_type), f.required, f.doc,
                    getattr(f, "initial_default", None), getattr(f, "write_default", None)))
        t = f.field_type
        if isinstance(t, StructType):
            out.extend(field_forms(t.fields))
        elif isinstance(t, ListType):
            out.extend(field_forms([t.element_field]))
        elif hasattr(t, "key_field"):
            out.extend(field_forms([t.key_field, t.value_field]))
    return out


def spec_forms(table):
    """Every partition spec: its id and fields (source id, field id, transform, name)."""
    return {spec_id: [(f.source_id, f.field_id, str(f.transform), f.name) for f in spec.fields]
            for spec_id, spec in table.specs().items()}


def order_forms(table):
    return {order.order_id: [(f.source_id, str(f.transform), f.direction.value, f.null_order.value)
                             for f in order.fields]
            for order in table.sort_orders().values()}


def files_in_sort_order(table):
    """(files recorded as sorted by the default order, whether each holds its rows in that order,
    checked with PyIceberg's transforms on the rows pyarrow reads from the file)."""
    order = table.sort_order()
    schema = table.schema()
    keys = []
    for f in order.fields:
        field = schema.find_field(f.source_id)
        keys.append((field.name, f.transform.transform(field.field_type),
                     f.direction == SortDirection.DESC, f.null_order == NullOrder.NULLS_FIRST))
    checked, sorted_ok = 0, True  # checked: files of more than one row
    for row in table.inspect.files().to_pylist():
        if row["content"] != 0 or row["sort_order_id"] != order.order_id:
            continue
        rows = pq.read_table(row["file_path"].removeprefix("file://")).to_pylist()
        checked += len(rows) > 1
        def key(r):
            out = []
            for name, fn, desc, nulls_first in keys:
                v = r.get(name)
                v = None if v is None else fn(v)
                # nulls placed first or last, then the value, descending by negation.
                rank = (0 if nulls_first else 2) if v is None else 1
                out.append((rank, v, desc))
            return out
        keyed = [key(r) for r in rows]
        for a, b in zip(keyed, keyed[1:]):
            for (ra, va, desc), (rb, vb, _) in zip(a, b):
                if ra != rb:
                    if ra > rb:
                        sorted_ok = False
                    break
                if ra == 1 and va != vb:
                    if (va > vb) != desc:
                        sorted_ok = False
                    break
    return checked, sorted_ok


def same(label, expected, got):
    if expected == got:
        print(f"  ok   {label}")
        return True
    print(f"  FAIL {label}:\n       PyIceberg's twin: {expected}\n       icefloe's table:  {got}")
    return False


def check(warehouse):
    with open(f"{warehouse}/alter.json") as f:
        spec = json.load(f)
    cat = catalog(warehouse)
    con, why_not = duckdb_connection()
    ok = True
    for entry in spec["tables"]:
        name = entry["name"]
        print(f"{name}:")
        ours = cat.load_table(name)
        first = ours.schemas()[min(ours.schemas())]
        spec0 = ours.specs()[0]
        # PyIceberg 0.12 writes v1 and v2 metadata only: a v3 table's twin is v2.
        twin = cat.create_table(entry["twin"], schema=first, partition_spec=spec0,
                                properties={"format-version": str(min(entry["format_version"], 2))})
        for step in entry["steps"]:
            twin = apply(twin, step)
            twin = cat.load_table(entry["twin"])
        ours = cat.load_table(name)
        # The v3 defaults the twin could not take: the column is required with its default as
        # `initial-default` and `write-default`, and every row written before reads it.
        defaults = {s["path"][-1]: s["default"] for s in entry["steps"]
                    if s["op"] == "add" and "default" in s}
        expected_fields = [
            (i, n, t, True, d, defaults[n], defaults[n]) if n in defaults else (i, n, t, r, d, a, b)
            for (i, n, t, r, d, a, b) in field_forms(twin.schema().fields)]
        ok &= same("schema (ids, names, types, required, docs, defaults)",
                   expected_fields, field_forms(ours.schema().fields))
        ok &= same("identifier fields", twin.schema().identifier_field_ids,
                   ours.schema().identifier_field_ids)
        ok &= same("last-column-id", twin.metadata.last_column_id, ours.metadata.last_column_id)
        upgrades = [s["version"] for s in entry["steps"] if s["op"] == "upgrade"]
        expected_version = upgrades[-1] if upgrades else entry["format_version"]
        ok &= same("format version", expected_version, ours.metadata.format_version)
        ok &= same("property owner", twin.properties.get("owner"), ours.properties.get("owner"))
        ok &= same("partition specs (source, field id, transform, name)", spec_forms(twin),
                   spec_forms(ours))
        ok &= same("default spec, last partition id",
                   (twin.metadata.default_spec_id, twin.metadata.last_partition_id),
                   (ours.metadata.default_spec_id, ours.metadata.last_partition_id))
        ok &= same("sort orders", order_forms(twin), order_forms(ours))
        ok &= same("default sort order", twin.metadata.default_sort_order_id,
                   ours.metadata.default_sort_order_id)
        for column, value in (("region", "us"), ("region", "eu"), ("id", 3)):
            wanted = EqualTo(column, value)
            ok &= same(f"files PyIceberg plans for {column} = {value!r} (pruned by every spec)",
                       len(list(twin.scan(row_filter=wanted).plan_files())),
                       len(list(ours.scan(row_filter=wanted).plan_files())))
        checked, in_order = files_in_sort_order(ours)
        ok &= same("files recorded in the sort order hold their rows in it (pyarrow)",
                   (True, True), (checked > 0, in_order))
        columns = [f.name for f in twin.schema().fields]
        expected = canon_rows(twin.scan().to_arrow(), columns)
        for row in expected:
            row.update({column: value for column, value in defaults.items()})
        ok &= same_rows("PyIceberg reads icefloe's table as the twin",
                        expected, canon_rows(ours.scan().to_arrow(), columns))
        with pa.ipc.open_file(entry["icefloe_rows"]) as reader:
            icefloe = reader.read_all()
        ok &= same_rows("icefloe reads its table as PyIceberg reads the twin",
                        expected, canon_rows(icefloe, columns))
        if con is None:
            print(f"  NOT RUN duckdb: {why_not}")
        else:
            got = con.execute(f"SELECT * FROM iceberg_scan('{entry['metadata_location']}')")
            ok &= same_rows("DuckDB reads icefloe's table as the twin",
                            expected, canon_rows(got.to_arrow_table(), columns))
    return ok


def by_pyiceberg(warehouse):
    """PyIceberg's own evolution of a table it wrote: add (nested too), rename, promote, drop,
    move, a partition field added; rows before and after each."""
    cat = catalog(warehouse)
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "n", IntegerType(), required=False),
        NestedField(3, "s", StructType(NestedField(4, "a", FloatType(), required=False)),
                    required=False),
    )
    table = cat.create_table("db.by_pyiceberg", schema=schema)
    table.append(pa.Table.from_pylist([{"id": 1, "n": 1, "s": {"a": 0.5}}, {"id": 2, "n": None, "s": None}],
                                      schema=table.schema().as_arrow()))
    with table.update_schema() as u:
        u.add_column("tag", StringType())
        u.add_column(("s", "b"), LongType())
        u.rename_column("n", "count")
    table = cat.load_table("db.by_pyiceberg")
    table.append(pa.Table.from_pylist([{"id": 3, "count": 3, "s": {"a": 1.5, "b": 30}, "tag": "x"}],
                                      schema=table.schema().as_arrow()))
    with table.update_schema() as u:
        u.update_column("count", field_type=LongType())
        u.update_column(("s", "a"), field_type=DoubleType())
        u.delete_column("tag")
        u.move_first("s")
    with table.update_spec() as u:
        u.add_field("id", parse_transform("bucket[3]"))
    table = cat.load_table("db.by_pyiceberg")
    table.append(pa.Table.from_pylist([{"id": 4, "count": 2 ** 40, "s": {"a": 2.5, "b": None}}],
                                      schema=table.schema().as_arrow()))
    print(f"db.by_pyiceberg: {table.schema()}")
    return True


def compare(warehouse, rows):
    table = catalog(warehouse).load_table("db.by_pyiceberg")
    columns = [f.name for f in table.schema().fields]
    with pa.ipc.open_file(rows) as reader:
        icefloe = reader.read_all()
    print("db.by_pyiceberg:")
    ok = same("columns in order", columns, icefloe.column_names)
    return ok & same_rows("icefloe reads PyIceberg's evolved table as PyIceberg",
                          canon_rows(table.scan().to_arrow(), columns), canon_rows(icefloe, columns))


def main(argv):
    command, warehouse = argv[1], argv[2]
    if command == "check":
        ok = check(warehouse)
    elif command == "pyiceberg":
        ok = by_pyiceberg(warehouse)
    elif command == "compare":
        ok = compare(warehouse, argv[3])
    else:
        raise SystemExit(f"unknown command {command}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
