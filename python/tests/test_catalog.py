"""icefloe.Catalog in datafusion-python: a PyIceberg SQL catalog's tables read, time-travelled
and written through the host's SQL, icefloe's own SQL for what the host cannot plan, and
PyIceberg reading back every commit."""

import datafusion
import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

import icefloe

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))


def rows(ids, categories):
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "category": pa.array(categories, pa.string())},
        schema=SCHEMA.as_arrow(),
    )


@pytest.fixture
def lake(tmp_path):
    """A PyIceberg SQL catalog `lake` with db.t: two appends and a tag on the first."""
    uri = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog("lake", uri=uri, warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", schema=SCHEMA, partition_spec=SPEC)
    table.append(rows([1, 2, 3], ["a", "b", "a"]))
    table.manage_snapshots().create_tag(table.current_snapshot().snapshot_id, "v1").commit()
    table.append(rows([4, 5], ["b", "c"]))
    return catalog, uri


def scalar(ctx, sql):
    return ctx.sql(sql).collect()[0].column(0)[0].as_py()


def host(catalog):
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("ice", catalog)
    return ctx


def test_reads_time_travel_and_metadata_tables_agree_with_pyiceberg(lake):
    catalog, uri = lake
    table = catalog.load_table("db.t")
    first, second = [s.snapshot_id for s in table.metadata.snapshots]
    ctx = host(icefloe.Catalog("lake", properties={"uri": uri}))

    assert scalar(ctx, "SELECT sum(id) FROM ice.db.t") == 15
    assert scalar(ctx, "SELECT count(*) FROM ice.db.t WHERE category = 'b'") == 2
    assert scalar(ctx, f'SELECT sum(id) FROM ice.db."t@{first}"') == 6
    assert scalar(ctx, 'SELECT sum(id) FROM ice.db."t@v1"') == 6
    assert scalar(ctx, 'SELECT count(*) FROM ice.db."t$snapshots"') == 2
    expected_files = table.inspect.files().num_rows
    assert scalar(ctx, 'SELECT count(*) FROM ice.db."t$files"') == expected_files
    assert scalar(ctx, f'SELECT count(*) FROM ice.db."t@{first}$files"') == 2
    ids = ctx.sql("SELECT snapshot_id FROM ice.db.\"t$snapshots\" ORDER BY committed_at")
    assert [r.as_py() for b in ids.collect() for r in b.column(0)] == [first, second]
    # The catalog's schemas and tables are listed as the host lists any others.
    names = ice_tables(ctx)
    assert names == [("db", "t")]


def ice_tables(ctx):
    ctx_tables = ctx.sql(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_catalog = 'ice' AND table_schema <> 'information_schema' ORDER BY 1, 2"
    ).to_pydict()
    return list(zip(ctx_tables["table_schema"], ctx_tables["table_name"]))


def test_an_insert_through_the_host_commits_to_the_catalog(lake):
    catalog, uri = lake
    ctx = host(icefloe.Catalog("lake", properties={"uri": uri}))
    inserted = ctx.sql("INSERT INTO ice.db.t VALUES (6, 'c'), (7, NULL)").collect()
    assert inserted[0].column(0)[0].as_py() == 2
    # INSERT ... SELECT from the table itself, through the host's plan.
    ctx.sql("INSERT INTO ice.db.t SELECT id + 100, category FROM ice.db.t WHERE id < 3").collect()

    table = catalog.load_table("db.t")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5, 6, 7, 101, 102]
    snapshots = table.metadata.snapshots
    assert [s.summary.operation.value for s in snapshots] == ["append"] * 4
    assert snapshots[-1].parent_snapshot_id == snapshots[-2].snapshot_id
    # A DataFrame written to the table goes the same way.
    ctx.sql("SELECT 200 AS id, 'w' AS category").write_table("ice.db.t")
    assert catalog.load_table("db.t").scan(row_filter="id = 200").to_arrow().num_rows == 1
    # The tag is still where it was, and the host reads the new state on its next query.
    assert table.metadata.refs["v1"].snapshot_id == snapshots[0].snapshot_id
    assert scalar(ctx, "SELECT count(*) FROM ice.db.t") == 10


@pytest.mark.parametrize("order", ["", "WRITE ORDERED BY id DESC"])
def test_an_insert_of_a_many_partition_plan_writes_every_row(lake, order):
    # The host runs the INSERT's plan without the sink's requirements (the FFI does not carry
    # them): its input has 4 partitions, every one must be written, in order if asked.
    catalog, uri = lake
    ice = icefloe.Catalog("lake", properties={"uri": uri})
    if order:
        ice.sql(f"ALTER TABLE db.t {order}")
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(4))
    ctx.register_catalog_provider("ice", ice)
    inserted = ctx.sql(
        "INSERT INTO ice.db.t SELECT value + 1000, 'n' FROM range(100000)"
    ).collect()
    assert inserted[0].column(0)[0].as_py() == 100000
    table = catalog.load_table("db.t")
    ids = table.scan(row_filter="category = 'n'").to_arrow()["id"].to_pylist()
    assert sorted(ids) == list(range(1000, 101000))
    if order:
        (new_file,) = [
            f for f in table.inspect.files().to_pylist() if f["partition"]["category"] == "n"
        ]
        import pyarrow.parquet as pq

        written = pq.read_table(new_file["file_path"].removeprefix("file://"))["id"].to_pylist()
        assert written == sorted(written, reverse=True)
        assert new_file["sort_order_id"] == 1


def test_icefloe_sql_runs_what_the_host_cannot_plan(lake):
    catalog, uri = lake
    ice = icefloe.Catalog("lake", properties={"uri": uri})
    first = catalog.load_table("db.t").metadata.snapshots[0].snapshot_id

    deleted = ice.sql("DELETE FROM db.t WHERE category = 'a'")
    assert deleted.to_arrow().column(0).to_pylist() == [2]
    ice.sql("UPDATE db.t SET category = 'z' WHERE id = 4")
    assert sorted(catalog.load_table("db.t").scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "category": "b"},
        {"id": 4, "category": "z"},
        {"id": 5, "category": "c"},
    ]
    old = ice.sql(f"SELECT sum(id) AS s FROM db.t VERSION AS OF {first}")
    assert pa.table(old).column("s").to_pylist() == [6]
    assert pa.table(ice.sql("SELECT sum(id) FROM db.t VERSION AS OF 'v1'")).column(0).to_pylist() == [6]

    ice.sql("CREATE TABLE db.events (id BIGINT, day DATE) PARTITION BY (day(day))")
    ctx = host(ice)
    ctx.sql("INSERT INTO ice.db.events VALUES (1, DATE '2024-01-01'), (2, DATE '2024-01-02')").collect()
    events = catalog.load_table("db.events")
    assert [f.transform.__class__.__name__ for f in events.spec().fields] == ["DayTransform"]
    assert events.scan().to_arrow().num_rows == 2
    assert events.inspect.partitions().num_rows == 2

    # The result is an Arrow stream the host takes without a copy.
    frame = ctx.from_arrow(ice.sql("SELECT id FROM db.t ORDER BY id"))
    assert frame.to_pydict() == {"id": [2, 4, 5]}
    assert len(ice.sql("SELECT * FROM db.t")) == 3


def test_a_catalog_of_pyiceberg_yaml_by_name(lake, tmp_path, monkeypatch):
    catalog, uri = lake
    (tmp_path / ".pyiceberg.yaml").write_text(f"catalog:\n  lake:\n    uri: {uri}\n")
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    ctx = host(icefloe.Catalog("lake"))
    assert scalar(ctx, "SELECT count(*) FROM ice.db.t") == 5
    # PyIceberg's variables name it too (PyIceberg reads its own configuration when imported,
    # so it is given the same properties here).
    (tmp_path / ".pyiceberg.yaml").unlink()
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", uri)
    assert scalar(host(icefloe.Catalog("lake")), "SELECT count(*) FROM ice.db.t") == 5
    assert load_catalog("lake", uri=uri).load_table("db.t").scan().to_arrow().num_rows == 5


def test_a_new_catalog_made_by_icefloe_opens_in_pyiceberg(tmp_path):
    path = tmp_path / "new.db"
    ice = icefloe.Catalog.create(str(path), name="fresh")
    assert ice.name == "fresh"
    ice.sql("CREATE SCHEMA db")
    ice.sql("CREATE TABLE db.t (id BIGINT NOT NULL)")
    host(ice).sql("INSERT INTO ice.db.t VALUES (1), (2)").collect()
    catalog = SqlCatalog("fresh", uri=f"sqlite:///{path}")
    assert catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist() == [1, 2]
    with pytest.raises(icefloe.IcefloeError):
        icefloe.Catalog.create(str(path))


def test_errors_are_exceptions_with_icefloes_messages(lake, tmp_path, monkeypatch):
    catalog, uri = lake
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
    with pytest.raises(icefloe.IcefloeError, match=r"\.pyiceberg\.yaml"):
        icefloe.Catalog("surely-no-such-catalog")
    ice = icefloe.Catalog("lake", properties={"uri": uri})
    with pytest.raises(icefloe.IcefloeError, match="db.missing"):
        ice.table("db.missing")
    with pytest.raises(icefloe.IcefloeError, match="(?i)snapshot"):
        ice.sql("SELECT * FROM db.t VERSION AS OF 12345")
    with pytest.raises(icefloe.IcefloeError):
        ice.sql("SELEC 1")
    with pytest.raises(ValueError, match="at most one"):
        ice.table("db.t", snapshot_id=1, ref="v1")
    ctx = host(ice)
    with pytest.raises(Exception, match="missing"):
        ctx.sql("SELECT * FROM ice.db.missing").collect()
    # A refused statement commits nothing.
    with pytest.raises(icefloe.IcefloeError):
        ice.sql("INSERT INTO db.t VALUES ('not a number', 'x')")
    assert len(catalog.load_table("db.t").metadata.snapshots) == 2


def test_catalog_tables_open_at_a_state_and_write_through_the_catalog(lake):
    catalog, uri = lake
    ice = icefloe.Catalog("lake", properties={"uri": uri})
    ctx = datafusion.SessionContext()
    ctx.register_table("now", ice.table("db.t"))
    ctx.register_table("then", ice.table("db.t", ref="v1"))
    ctx.register_table("files", ice.table("db.t", ref="v1").metadata("files"))
    assert scalar(ctx, "SELECT count(*) FROM then") == 3
    assert scalar(ctx, "SELECT count(*) FROM files") == 2
    ctx.sql("INSERT INTO now VALUES (9, 'x')").collect()
    assert catalog.load_table("db.t").scan().to_arrow().num_rows == 6


def leaf_partitions(ctx, sql):
    plan = ctx.sql(sql).execution_plan()
    while plan.children():
        plan = plan.children()[0]
    return plan.partition_count


def test_a_scan_splits_across_the_hosts_partitions_as_a_native_one(tmp_path):
    # The host asks the scan to split itself (by byte ranges of its files) as DataFusion's
    # optimizer asks a native scan: one file is read on every core, not one.
    ice = icefloe.Catalog.create(str(tmp_path / "c.db"))
    ice.sql("CREATE SCHEMA db")
    ice.sql("CREATE TABLE db.t (id BIGINT NOT NULL, k BIGINT)")
    config = datafusion.SessionConfig().with_target_partitions(4)
    ctx = datafusion.SessionContext(config)
    ctx.register_catalog_provider("ice", ice)
    # Scattered values, so the one file is large enough (some MB) for DataFusion to split.
    ctx.sql(
        "INSERT INTO ice.db.t SELECT value, (value * 2654435761) % 4294967296 FROM range(2000000)"
    ).collect()
    (data,) = list((tmp_path / "db" / "t" / "data").glob("*.parquet"))
    ctx.register_parquet("plain", str(data))
    query = "SELECT count(*), sum(k) FROM {} WHERE id % 2 = 0"
    assert leaf_partitions(ctx, query.format("ice.db.t")) == leaf_partitions(
        ctx, query.format("plain")
    )
    assert leaf_partitions(ctx, query.format("ice.db.t")) > 1
    rows = [list(ctx.sql(query.format(t)).to_pydict().values()) for t in ("ice.db.t", "plain")]
    assert rows[0] == rows[1] == [[1_000_000], [rows[1][1][0]]]


def test_insert_overwrite_through_the_host_and_dynamic_overwrite_through_icefloe(lake):
    catalog, uri = lake
    ice = icefloe.Catalog("lake", properties={"uri": uri})
    ctx = host(ice)
    # The host's INSERT OVERWRITE is Spark's static overwrite without a PARTITION clause: the
    # whole table is replaced, in one `overwrite` snapshot.
    ctx.sql("INSERT OVERWRITE ice.db.t VALUES (10, 'a'), (11, 'z')").collect()
    table = catalog.load_table("db.t")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [10, 11]
    assert table.metadata.snapshots[-1].summary.operation.value == "overwrite"
    # icefloe's session keeps its settings between statements: dynamic overwrite replaces only
    # the partitions the new rows fall in.
    ice.sql("SET icefloe.overwrite_mode = 'dynamic'")
    ice.sql("INSERT OVERWRITE db.t VALUES (12, 'a')")
    rows = catalog.load_table("db.t").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["category"]) for r in rows) == [(11, "z"), (12, "a")]
