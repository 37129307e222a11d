"""icefloe: Apache Iceberg tables in datafusion-python.

    import datafusion, icefloe
    ctx = datafusion.SessionContext()
    ctx.register_catalog_provider("ice", icefloe.Catalog("prod"))   # .pyiceberg.yaml's `prod`
    ctx.sql("SELECT count(*) FROM ice.db.orders").show()

or one table: ``ctx.register_table("t", icefloe.Table.open("s3://bucket/wh/db/t"))``, or a
PyIceberg table: ``ctx.register_table("t", icefloe.from_pyiceberg(table))``.
"""

from ._icefloe import Catalog, IcefloeError, MetadataTable, SqlResult, Table, __version__

__all__ = [
    "Catalog",
    "IcefloeError",
    "MetadataTable",
    "SqlResult",
    "Table",
    "__version__",
    "from_pyiceberg",
]


def from_pyiceberg(table, *, snapshot_id=None, ref=None, as_of=None):
    """The PyIceberg ``Table`` ``table`` as an icefloe ``Table``: its current snapshot, or the
    one ``snapshot_id``, ``ref`` or ``as_of`` (epoch milliseconds) names.

    When the table's catalog is one icefloe speaks (PyIceberg's ``SqlCatalog`` on SQLite, or
    its ``RestCatalog``), icefloe connects to the same catalog with the same properties and an
    ``INSERT INTO`` commits through it, as PyIceberg's own writes do. Any other table (a
    ``StaticTable``, a Glue or Hive catalog's) is read from its metadata file with its FileIO
    properties, read-only: an INSERT is refused and commits nothing.

        ctx.register_table("orders", icefloe.from_pyiceberg(catalog.load_table("db.orders")))
    """
    selection = dict(snapshot_id=snapshot_id, ref=ref, as_of=as_of)
    catalog = _catalog_of(table)
    if catalog is not None:
        return catalog.table(".".join(table.name()), **selection)
    storage = {k: str(v) for k, v in table.io.properties.items()}
    return Table._read_only(table.metadata_location, storage_options=storage, **selection)


def _catalog_of(table):
    """icefloe's connection to the catalog of the PyIceberg table ``table``, or ``None`` when
    icefloe does not speak it."""
    catalog = getattr(table, "catalog", None)
    kind = type(catalog).__name__
    properties = {k: str(v) for k, v in getattr(catalog, "properties", {}).items()}
    uri = properties.get("uri", "")
    if kind == "SqlCatalog" and uri.startswith("sqlite:///") and ":memory:" not in uri:
        properties.setdefault("type", "sql")
    elif kind == "RestCatalog":
        properties.setdefault("type", "rest")
    else:
        return None
    return Catalog(catalog.name, properties=properties)
