"""icefloe in datafusion-python against real servers it did not write: tables on S3 (moto's
S3 server) in a PyIceberg SQL catalog, and a REST catalog (lakana-server). PyIceberg, with its
own FileIO and REST client, writes the tables and reads back what icefloe commits."""

import urllib.request

import datafusion
import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.sql import SqlCatalog

import icefloe


def s3_properties(endpoint):
    return {
        "s3.endpoint": endpoint,
        "s3.region": "us-east-1",
        "s3.access-key-id": "testing",
        "s3.secret-access-key": "testing",
    }


def make_bucket(endpoint, bucket):
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"), timeout=30)


def scalar(ctx, sql):
    return ctx.sql(sql).collect()[0].column(0)[0].as_py()


def test_tables_on_s3_read_and_write_through_catalog_table_and_pyiceberg(s3_endpoint, tmp_path):
    make_bucket(s3_endpoint, "pylake")
    s3 = s3_properties(s3_endpoint)
    uri = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog("lake", uri=uri, warehouse="s3://pylake/wh", **s3)
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
    table = catalog.create_table("db.t", schema=schema)
    table.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema))
    first = table.current_snapshot().snapshot_id
    table.append(pa.table({"id": [4], "name": ["d"]}, schema=schema))
    assert table.location().startswith("s3://pylake/")

    # The catalog: its s3.* properties reach the tables' store, planned and executed in the
    # host with icefloe's own store registry.
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("ice", icefloe.Catalog("lake", properties={"uri": uri, **s3}))
    assert scalar(ctx, "SELECT sum(id) FROM ice.db.t") == 10
    assert scalar(ctx, f'SELECT sum(id) FROM ice.db."t@{first}"') == 6
    assert scalar(ctx, "SELECT count(*) FROM ice.db.t WHERE name = 'b'") == 1
    ctx.sql("INSERT INTO ice.db.t VALUES (5, 'e')").collect()
    reread = catalog.load_table("db.t")
    assert sorted(reread.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4, 5]
    assert reread.metadata.snapshots[-1].summary["added-records"] == "1"

    # One table by its metadata file, with storage options.
    ctx.register_table(
        "by_location", icefloe.Table.open(reread.metadata_location, storage_options=s3)
    )
    assert scalar(ctx, "SELECT sum(id) FROM by_location") == 15

    # A PyIceberg table in one line; its writes go through its catalog.
    ctx.register_table("from_pyiceberg", icefloe.from_pyiceberg(reread))
    assert scalar(ctx, "SELECT count(*) FROM from_pyiceberg") == 5
    ctx.sql("INSERT INTO from_pyiceberg VALUES (6, 'f')").collect()
    assert catalog.load_table("db.t").scan().to_arrow().num_rows == 6

    # Without the store's credentials the table's files cannot be reached: an error naming the
    # store, not a hang or a crash.
    with pytest.raises(icefloe.IcefloeError, match="s3://pylake"):
        icefloe.Table.open(
            reread.metadata_location,
            storage_options={**s3, "s3.endpoint": "http://127.0.0.1:9"},
        )


# The table in the host: a namespace of two levels is one schema, quoted.
T = 'rest."bronze.pyns".t'


def test_a_rest_catalog_read_and_written_from_datafusion_python(lakana):
    uri, properties = lakana
    ice = icefloe.Catalog(uri, properties={k: v for k, v in properties.items() if k != "uri"})
    # lakana-server keeps tables under its top-level namespaces only (bronze, silver, gold).
    ice.sql('CREATE SCHEMA "bronze.pyns"')
    ice.sql('CREATE TABLE "bronze.pyns".t (id BIGINT NOT NULL, name VARCHAR)')
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("rest", ice)
    ctx.sql(f"INSERT INTO {T} VALUES (1, 'a'), (2, 'b'), (3, NULL)").collect()
    ctx.sql(f"INSERT INTO {T} VALUES (4, 'd')").collect()
    assert scalar(ctx, f"SELECT sum(id) FROM {T}") == 10
    assert scalar(ctx, 'SELECT count(*) FROM rest."bronze.pyns"."t$snapshots"') == 2
    ice.sql('DELETE FROM "bronze.pyns".t WHERE id = 2')

    # PyIceberg's REST client reads what icefloe committed through the server.
    pyiceberg = load_catalog("lakana", type="rest", **properties)
    table = pyiceberg.load_table("bronze.pyns.t")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 3, 4]
    assert len(table.metadata.snapshots) == 3
    # And icefloe reads PyIceberg's next commit, as the host's next query.
    table.append(pa.table({"id": pa.array([7], pa.int64()), "name": ["g"]}, schema=table.schema().as_arrow()))
    assert scalar(ctx, f"SELECT sum(id) FROM {T}") == 15
