"""Type stubs of icefloe's native module (python/src)."""

from typing import Any, Mapping, Optional

import pyarrow

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
        storage_options: Optional[Mapping[str, str]] = None,
    ) -> "Table":
        """Opens the table at ``location`` (a table directory or a metadata file, local or on
        a cloud store): its current snapshot, or the one ``snapshot_id``, ``ref`` (a branch or
        tag) or ``as_of`` (epoch milliseconds) names (at most one of them). ``relocate`` maps
        path prefixes the metadata records to where the files are now; ``storage_options``
        reach a cloud store (Iceberg's FileIO properties: ``s3.endpoint``,
        ``s3.access-key-id``, ``gcs.project-id``, ``adls.account-name``, ...).

        A table opened by location is a directory table: an INSERT commits the next
        ``vN.metadata.json`` beside the current one. Write a catalog's tables through
        ``Catalog``.

        Raises ``IcefloeError`` for a table that cannot be read (naming it) and ``ValueError``
        for conflicting arguments."""

    @staticmethod
    def _read_only(
        metadata_location: str,
        *,
        snapshot_id: Optional[int] = None,
        ref: Optional[str] = None,
        as_of: Optional[int] = None,
        storage_options: Optional[Mapping[str, str]] = None,
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

class Catalog:
    """An Iceberg catalog, to register in a datafusion-python ``SessionContext`` with
    ``register_catalog_provider``: its namespaces are the schemas and its tables the tables
    (``ice.db.orders``; ``ice.db."orders@audit"`` reads a branch, tag or snapshot id,
    ``ice.db."orders$files"`` a metadata table). ``INSERT INTO`` commits through the catalog."""

    def __init__(self, spec: str, *, properties: Optional[Mapping[str, str]] = None) -> None:
        """Connects to the catalog ``spec`` names: a SQLite catalog database (a path or
        ``sqlite:///path``), a REST catalog (``http(s)://host/path``, the base URI without
        ``/v1``), or a catalog of PyIceberg's ``.pyiceberg.yaml`` / ``PYICEBERG_CATALOG__*``
        variables by name. ``properties`` are PyIceberg's catalog properties (``uri``,
        ``type``, ``credential``, ``token``, ``warehouse``, ``s3.endpoint``, ...) on top of the
        configured ones; with a ``uri`` they define a catalog of that name without any
        configuration, as ``pyiceberg.catalog.load_catalog(name, **properties)`` does.

        Raises ``IcefloeError`` naming the catalog when it cannot be reached or found."""

    @staticmethod
    def create(
        path: str, *, name: str = "default", properties: Optional[Mapping[str, str]] = None
    ) -> "Catalog":
        """Makes a new SQLite catalog database at ``path`` (PyIceberg's SQL catalog layout)
        whose catalog is named ``name``, and connects to it. New tables go under the
        ``warehouse`` property (a location: ``file:///...``, ``s3://...``), by default the
        database's directory. An existing file is an error."""

    @property
    def name(self) -> str:
        """The catalog's name (a SQL catalog's ``catalog_name``, a REST catalog's host)."""

    def table(
        self,
        name: str,
        *,
        snapshot_id: Optional[int] = None,
        ref: Optional[str] = None,
        as_of: Optional[int] = None,
    ) -> Table:
        """The table ``name`` (``namespace.table``), whose INSERTs commit through this catalog:
        its current snapshot, or the one ``snapshot_id``, ``ref`` or ``as_of`` (epoch
        milliseconds) names."""

    def sql(self, query: str) -> "SqlResult":
        """Runs one statement of icefloe's SQL in icefloe's own session over this catalog
        (its default catalog: ``namespace.table`` names a table) and returns the rows once it
        has run. For what datafusion-python's SQL cannot plan: ``DELETE``, ``UPDATE``, ``MERGE
        INTO``, ``CREATE TABLE ... PARTITION BY``, ``ALTER TABLE``, ``VERSION AS OF``,
        ``TIMESTAMP AS OF``, ``FOR SYSTEM_TIME AS OF``, the ``iceberg_*`` procedures, ``SHOW
        CREATE TABLE``. The rows
        are held in memory; run large reads in the host session.

        Raises ``IcefloeError`` with icefloe's message when the statement fails (nothing is
        committed then)."""

    def __datafusion_catalog_provider__(self, codec: Any) -> Any:
        """The FFI catalog provider capsule ``SessionContext.register_catalog_provider``
        takes."""

class SqlResult:
    """The rows of a statement ``Catalog.sql`` ran, as an Arrow stream:
    ``pyarrow.table(result)``, ``SessionContext.from_arrow(result)``, polars and DuckDB take
    it."""

    @property
    def num_rows(self) -> int:
        """How many rows there are."""

    def to_arrow(self) -> pyarrow.Table:
        """The rows as a ``pyarrow.Table`` (needs pyarrow)."""

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow C stream capsule (the Arrow PyCapsule interface)."""

    def __len__(self) -> int: ...
