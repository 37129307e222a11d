"""icefloe: Apache Iceberg tables in datafusion-python.

    import datafusion, icefloe
    ctx = datafusion.SessionContext()
    ctx.register_table("t", icefloe.Table.open("/warehouse/db/t"))
    ctx.sql("SELECT count(*) FROM t").show()
"""

from ._icefloe import IcefloeError, MetadataTable, Table, __version__

__all__ = ["IcefloeError", "MetadataTable", "Table", "__version__", "from_pyiceberg"]


def from_pyiceberg(table, *, snapshot_id=None, ref=None, as_of=None):
    """The PyIceberg ``Table`` ``table`` as an icefloe table, read-only: icefloe reads its
    current metadata file (or the snapshot ``snapshot_id``, ``ref`` or ``as_of`` names), and
    INSERTs are refused, since the table's catalog must make its commits.

        ctx.register_table("orders", icefloe.from_pyiceberg(catalog.load_table("db.orders")))
    """
    return Table._read_only(
        table.metadata_location, snapshot_id=snapshot_id, ref=ref, as_of=as_of
    )
