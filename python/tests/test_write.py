"""Writes driven by datafusion-python, read back by PyIceberg."""

import pyarrow as pa
import pytest
import datafusion
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import StaticTable

import icefloe


def test_an_insert_through_datafusion_python_reads_back_in_pyiceberg(tmp_path):
    catalog = SqlCatalog(
        "default", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}"
    )
    catalog.create_namespace("db")
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())]
    )
    table = catalog.create_table("db.t", schema=schema)
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=schema))

    ctx = datafusion.SessionContext()
    ctx.register_table("t", icefloe.Table.open(table.location()))
    inserted = ctx.sql("INSERT INTO t VALUES (3, 'c'), (4, NULL)").collect()
    assert inserted[0].column(0)[0].as_py() == 2
    assert ctx.sql("SELECT sum(id) FROM t").collect()[0].column(0)[0].as_py() == 10

    # icefloe committed the next metadata file of the table directory (the SQL catalog, which
    # icefloe.Table does not know, still names the first): PyIceberg reads that file.
    metadata = tmp_path / "db" / "t" / "metadata" / "v2.metadata.json"
    read = StaticTable.from_metadata(str(metadata))
    assert read.scan().to_arrow().sort_by("id").to_pydict() == {
        "id": [1, 2, 3, 4],
        "name": ["a", "b", "c", None],
    }
    snapshots = read.metadata.snapshots
    assert [s.summary.operation.value for s in snapshots] == ["append", "append"]
    assert snapshots[-1].parent_snapshot_id == snapshots[0].snapshot_id


def ids_table(tmp_path):
    """A PyIceberg SQL catalog with db.t (id long), rows 1 and 2 appended."""
    catalog = SqlCatalog(
        "default", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}"
    )
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=IDS)
    table.append(pa.table({"id": [1, 2]}, schema=IDS))
    return catalog, table


IDS = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def test_a_pyiceberg_table_writes_through_its_catalog(tmp_path):
    catalog, table = ids_table(tmp_path)
    first = table.current_snapshot().snapshot_id
    table.append(pa.table({"id": [3]}, schema=IDS))

    ctx = datafusion.SessionContext()
    ctx.register_table("t", icefloe.from_pyiceberg(table))
    ctx.register_table("t0", icefloe.from_pyiceberg(table, snapshot_id=first))
    assert ctx.sql("SELECT sum(id) FROM t").collect()[0].column(0)[0].as_py() == 6
    assert ctx.sql("SELECT sum(id) FROM t0").collect()[0].column(0)[0].as_py() == 3
    ctx.sql("INSERT INTO t VALUES (4)").collect()
    # The commit went through the catalog: PyIceberg's next load sees it.
    reread = catalog.load_table("db.t")
    assert len(reread.metadata.snapshots) == 3
    assert sorted(reread.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    # A table read at an old snapshot is not written.
    with pytest.raises(Exception, match="INSERT"):
        ctx.sql("INSERT INTO t0 VALUES (5)").collect()
    assert len(catalog.load_table("db.t").metadata.snapshots) == 3


def test_a_static_pyiceberg_table_reads_through_icefloe_and_refuses_writes(tmp_path):
    catalog, table = ids_table(tmp_path)
    static = StaticTable.from_metadata(table.metadata_location)

    ctx = datafusion.SessionContext()
    ctx.register_table("t", icefloe.from_pyiceberg(static))
    assert ctx.sql("SELECT sum(id) FROM t").collect()[0].column(0)[0].as_py() == 3
    with pytest.raises(Exception, match="INSERT INTO table"):
        ctx.sql("INSERT INTO t VALUES (4)").collect()
    # Nothing was committed: PyIceberg's table is as it was.
    assert len(catalog.load_table("db.t").metadata.snapshots) == 1
