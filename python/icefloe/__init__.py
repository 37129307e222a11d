"""icefloe: Apache Iceberg tables in datafusion-python.

    import datafusion, icefloe
    ctx = datafusion.SessionContext()
    ctx.register_table("t", icefloe.Table.open("/warehouse/db/t"))
    ctx.sql("SELECT count(*) FROM t").show()
"""

from ._icefloe import IcefloeError, MetadataTable, Table, __version__

__all__ = ["IcefloeError", "MetadataTable", "Table", "__version__"]
