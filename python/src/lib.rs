//! `icefloe._icefloe`: icefloe's Iceberg tables as DataFusion table providers for
//! datafusion-python 55, through the DataFusion FFI (`datafusion-ffi` 55).
//!
//! A `Table` answers `__datafusion_table_provider__(session)` with a PyCapsule named
//! `datafusion_table_provider` holding an `FFI_TableProvider`, which
//! `SessionContext.register_table` accepts. The host hands its logical extension codec over
//! through the session (`__datafusion_logical_extension_codec__`), or as the capsule itself.
//!
//! icefloe's async work runs on one multi-thread tokio runtime of this module: datafusion-python
//! links its own tokio, and the FFI enters this runtime's handle while it executes our plans.

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use datafusion::catalog::TableProvider;
use datafusion::prelude::SessionContext;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use icefloe::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use icefloe::spec::SnapshotSelector;
use icefloe::{FileIO, IcebergTableProvider, Relocation, TableOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The capsule names of the FFI protocol.
const TABLE_PROVIDER: &std::ffi::CStr = c"datafusion_table_provider";
const LOGICAL_CODEC: &std::ffi::CStr = c"datafusion_logical_extension_codec";

/// The runtime icefloe's futures run on (built on first use).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("icefloe")
            .build()
            .expect("a tokio runtime for icefloe")
    })
}

pyo3::create_exception!(
    _icefloe,
    IcefloeError,
    pyo3::exceptions::PyException,
    "An error of icefloe: a table, file or catalog that cannot be read or written, with \
     icefloe's message naming it."
);

/// An error of icefloe as a Python exception carrying icefloe's message: `ValueError` for a
/// bad argument, `IcefloeError` otherwise.
fn error(e: icefloe::Error) -> PyErr {
    match e {
        icefloe::Error::InvalidArgument { .. } => PyValueError::new_err(e.to_string()),
        other => IcefloeError::new_err(other.to_string()),
    }
}

/// An Iceberg table, to register in a datafusion-python `SessionContext`.
#[pyclass(module = "icefloe._icefloe", name = "Table", frozen)]
struct Table {
    provider: Arc<IcebergTableProvider>,
    location: String,
    /// The snapshot the table was opened at.
    selector: SnapshotSelector,
}

#[pymethods]
impl Table {
    /// Opens the table at `location` (a table directory or a metadata file): its current
    /// snapshot, or the one `snapshot_id`, `ref` (a branch or tag) or `as_of` (epoch
    /// milliseconds) names (at most one of them). `relocate` maps path prefixes the metadata
    /// records to where the files are now (`{"file:///old/wh": "/mnt/wh"}`).
    #[staticmethod]
    #[pyo3(signature = (location, *, snapshot_id=None, r#ref=None, as_of=None, relocate=None))]
    fn open(
        py: Python<'_>,
        location: String,
        snapshot_id: Option<i64>,
        r#ref: Option<String>,
        as_of: Option<i64>,
        relocate: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let mut options = TableOptions::default();
        for (old, new) in relocate.unwrap_or_default() {
            options = options.with_relocation(old, new);
        }
        options.snapshot = selection(snapshot_id, r#ref, as_of)?;
        let selector = options.snapshot.clone();
        let provider = py
            .detach(|| {
                runtime().block_on(async {
                    let ctx = SessionContext::new();
                    IcebergTableProvider::open(&ctx, &location, options).await
                })
            })
            .map_err(error)?;
        Ok(Self {
            provider: Arc::new(provider),
            location,
            selector,
        })
    }

    /// The table whose current metadata file is `metadata_location`, read-only (a table a
    /// catalog tracks: a commit must go through the catalog); for `from_pyiceberg`.
    #[staticmethod]
    #[pyo3(signature = (metadata_location, *, snapshot_id=None, r#ref=None, as_of=None))]
    fn _read_only(
        py: Python<'_>,
        metadata_location: String,
        snapshot_id: Option<i64>,
        r#ref: Option<String>,
        as_of: Option<i64>,
    ) -> PyResult<Self> {
        let selector = selection(snapshot_id, r#ref, as_of)?;
        let provider = py
            .detach(|| {
                runtime().block_on(async {
                    let io =
                        FileIO::new(SessionContext::new().runtime_env(), Relocation::default());
                    let table = icefloe::Table::load(io, &metadata_location).await?;
                    IcebergTableProvider::try_new(table, selector.clone())
                })
            })
            .map_err(error)?;
        Ok(Self {
            provider: Arc::new(provider),
            location: metadata_location,
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
            provider: Arc::new(table),
        })
    }

    /// The FFI table provider, for `SessionContext.register_table`.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        ffi_provider(py, self.provider.clone(), &session)
    }

    fn __repr__(&self) -> String {
        format!("icefloe.Table({:?})", self.location)
    }
}

/// The snapshot `snapshot_id`, `ref` or `as_of` names (at most one of them), else the
/// current one.
fn selection(
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
struct MetadataTable {
    provider: Arc<IcebergMetadataTable>,
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

/// `provider` as the capsule `SessionContext.register_table` takes, built on the host's codec.
fn ffi_provider<'py>(
    py: Python<'py>,
    provider: Arc<dyn TableProvider>,
    session: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let codec = logical_codec(session)?;
    let provider = FFI_TableProvider::new_with_ffi_codec(
        provider,
        true,
        Some(runtime().handle().clone()),
        codec,
    );
    PyCapsule::new_with_value(py, provider, TABLE_PROVIDER)
}

/// The host's logical extension codec: from the session's
/// `__datafusion_logical_extension_codec__`, or the session argument when it is the capsule.
fn logical_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let capsule = match session.hasattr("__datafusion_logical_extension_codec__")? {
        true => session.call_method0("__datafusion_logical_extension_codec__")?,
        false => session.clone(),
    };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(
            "register the table in a datafusion SessionContext (datafusion 55): the session \
             gave no logical extension codec",
        )
    })?;
    let pointer: NonNull<FFI_LogicalExtensionCodec> =
        capsule.pointer_checked(Some(LOGICAL_CODEC))?.cast();
    // SAFETY: a capsule of this name holds an `FFI_LogicalExtensionCodec` (the FFI protocol of
    // datafusion-python 55), alive while the capsule is; the clone is ours.
    Ok(unsafe { pointer.as_ref() }.clone())
}

#[pymodule]
fn _icefloe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Table>()?;
    m.add_class::<MetadataTable>()?;
    m.add("IcefloeError", m.py().get_type::<IcefloeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
