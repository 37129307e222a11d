//! `icefloe.Table` and `icefloe.MetadataTable`: one Iceberg table (or one of its metadata
//! tables) for `SessionContext.register_table`.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use icefloe::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use icefloe::spec::SnapshotSelector;
use icefloe::{IcebergTableProvider, TableOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::hosted::HostedTable;
use crate::{error, ffi_provider, own_io, runtime};

/// An Iceberg table, to register in a datafusion-python `SessionContext`.
#[pyclass(module = "icefloe._icefloe", name = "Table", frozen)]
pub(crate) struct Table {
    provider: Arc<IcebergTableProvider>,
    /// As the user named it (a location, a metadata file or a catalog's table name).
    name: String,
    /// The snapshot the table was opened at.
    selector: SnapshotSelector,
}

impl Table {
    /// A table of a catalog (see [`crate::catalog::Catalog::table`]).
    pub(crate) fn of_catalog(
        provider: IcebergTableProvider,
        name: String,
        selector: SnapshotSelector,
    ) -> Self {
        Self {
            provider: Arc::new(provider),
            name,
            selector,
        }
    }

    /// The runtime environment its IO registers stores in, and its scans execute with (its
    /// own: [`own_io`]).
    fn env(&self) -> Arc<RuntimeEnv> {
        Arc::clone(self.provider.table().io().runtime())
    }
}

#[pymethods]
impl Table {
    /// Opens the table at `location` (a table directory or a metadata file, local or on a
    /// cloud store): its current snapshot, or the one `snapshot_id`, `ref` (a branch or tag)
    /// or `as_of` (epoch milliseconds) names (at most one of them). `relocate` maps path
    /// prefixes the metadata records to where the files are now (`{"file:///old/wh":
    /// "/mnt/wh"}`); `storage_options` reach a cloud store (Iceberg's FileIO properties:
    /// `s3.endpoint`, `s3.access-key-id`, `gcs.project-id`, `adls.account-name`, ...).
    #[staticmethod]
    #[pyo3(signature = (
        location, *, snapshot_id=None, r#ref=None, as_of=None, relocate=None, storage_options=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        location: String,
        snapshot_id: Option<i64>,
        r#ref: Option<String>,
        as_of: Option<i64>,
        relocate: Option<BTreeMap<String, String>>,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let io = own_io(storage_options.unwrap_or_default());
        let mut options = TableOptions::default().with_storage(io.storage().clone());
        for (old, new) in relocate.unwrap_or_default() {
            options = options.with_relocation(old, new);
        }
        options.snapshot = selection(snapshot_id, r#ref, as_of)?;
        let selector = options.snapshot.clone();
        let provider = py
            .detach(|| {
                runtime().block_on(IcebergTableProvider::open_with_runtime(
                    Arc::clone(io.runtime()),
                    &location,
                    options,
                ))
            })
            .map_err(error)?;
        Ok(Self {
            provider: Arc::new(provider),
            name: location,
            selector,
        })
    }

    /// The table whose current metadata file is `metadata_location`, read-only (a table a
    /// catalog tracks: a commit must go through the catalog); for `from_pyiceberg`.
    #[staticmethod]
    #[pyo3(signature = (
        metadata_location, *, snapshot_id=None, r#ref=None, as_of=None, storage_options=None
    ))]
    fn _read_only(
        py: Python<'_>,
        metadata_location: String,
        snapshot_id: Option<i64>,
        r#ref: Option<String>,
        as_of: Option<i64>,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let selector = selection(snapshot_id, r#ref, as_of)?;
        let io = own_io(storage_options.unwrap_or_default());
        let provider = py
            .detach(|| {
                runtime().block_on(async {
                    let table = icefloe::Table::load(io, &metadata_location).await?;
                    IcebergTableProvider::try_new(table, selector.clone())
                })
            })
            .map_err(error)?;
        Ok(Self {
            provider: Arc::new(provider),
            name: metadata_location,
            selector,
        })
    }

    /// The metadata table `name` (`snapshots`, `files`, `entries`, `manifests`, `partitions`,
    /// `history`, `refs`, ... as Spark and PyIceberg name them), at this table's snapshot for
    /// the relations of one snapshot, over the whole table for the others.
    fn metadata(&self, name: &str) -> PyResult<MetadataTable> {
        let kind = MetadataTableKind::parse(name).ok_or_else(|| {
            PyValueError::new_err(format!("{name:?} is not a metadata table icefloe knows"))
        })?;
        let selector = match kind.per_snapshot() {
            true => self.selector.clone(),
            false => SnapshotSelector::Current,
        };
        let table =
            IcebergMetadataTable::try_new(self.provider.table(), kind, selector).map_err(error)?;
        Ok(MetadataTable {
            provider: Arc::new(HostedTable::new(Arc::new(table), &self.env())),
        })
    }

    /// The FFI table provider, for `SessionContext.register_table`.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let hosted = HostedTable::new(self.provider.clone(), &self.env());
        ffi_provider(py, Arc::new(hosted), &session)
    }

    fn __repr__(&self) -> String {
        format!("icefloe.Table({:?})", self.name)
    }
}

/// The snapshot `snapshot_id`, `ref` or `as_of` names (at most one of them), else the
/// current one.
pub(crate) fn selection(
    snapshot_id: Option<i64>,
    r#ref: Option<String>,
    as_of: Option<i64>,
) -> PyResult<SnapshotSelector> {
    match (snapshot_id, r#ref, as_of) {
        (None, None, None) => Ok(SnapshotSelector::Current),
        (Some(id), None, None) => Ok(SnapshotSelector::SnapshotId(id)),
        (None, Some(name), None) => Ok(SnapshotSelector::Ref(name)),
        (None, None, Some(ms)) => Ok(SnapshotSelector::AsOfTimestamp(ms)),
        _ => Err(PyValueError::new_err(
            "at most one of snapshot_id, ref and as_of names the snapshot to read",
        )),
    }
}

/// A metadata table of an Iceberg table ([`Table::metadata`]), to register in a
/// datafusion-python `SessionContext`.
#[pyclass(module = "icefloe._icefloe", name = "MetadataTable", frozen)]
pub(crate) struct MetadataTable {
    provider: Arc<HostedTable>,
}

#[pymethods]
impl MetadataTable {
    /// The FFI table provider, for `SessionContext.register_table`.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        ffi_provider(py, self.provider.clone(), &session)
    }
}
