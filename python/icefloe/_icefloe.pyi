"""Type stubs of icefloe's native module (python/src/lib.rs)."""

from typing import Any, Mapping, Optional

__version__: str

class IcefloeError(Exception):
    """An error of icefloe: a table, file or catalog that cannot be read or written, with
    icefloe's message naming it."""

class Table:
    """An Iceberg table, to register in a datafusion-python ``SessionContext``."""

    @staticmethod
    def open(
        location: str,
        *,
        snapshot_id: Optional[int] = None,
        ref: Optional[str] = None,
        as_of: Optional[int] = None,
        relocate: Optional[Mapping[str, str]] = None,
    ) -> "Table":
        """Opens the table at ``location`` (a table directory or a metadata file): its current
        snapshot, or the one ``snapshot_id``, ``ref`` (a branch or tag) or ``as_of`` (epoch
        milliseconds) names (at most one of them). ``relocate`` maps path prefixes the metadata
        records to where the files are now.

        Raises ``IcefloeError`` for a table that cannot be read (naming it) and ``ValueError``
        for conflicting arguments."""

    @staticmethod
    def _read_only(
        metadata_location: str,
        *,
        snapshot_id: Optional[int] = None,
        ref: Optional[str] = None,
        as_of: Optional[int] = None,
    ) -> "Table":
        """The table of the metadata file ``metadata_location``, read-only (for
        ``icefloe.from_pyiceberg``)."""

    def metadata(self, name: str) -> "MetadataTable":
        """The metadata table ``name`` (``snapshots``, ``files``, ``entries``, ``manifests``,
        ``partitions``, ``history``, ``refs``, ...): at this table's snapshot for the relations
        of one snapshot, over the whole table for the others. ``ValueError`` for an unknown
        name."""

    def __datafusion_table_provider__(self, session: Any) -> Any:
        """The FFI table provider capsule ``SessionContext.register_table`` takes."""

class MetadataTable:
    """A metadata table of an Iceberg table, to register in a datafusion-python
    ``SessionContext``."""

    def __datafusion_table_provider__(self, session: Any) -> Any:
        """The FFI table provider capsule ``SessionContext.register_table`` takes."""
