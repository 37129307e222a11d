//! `icefloe._icefloe`: icefloe's Iceberg tables and catalogs as DataFusion providers for
//! datafusion-python 55, through the DataFusion FFI (`datafusion-ffi` 55).
//!
//! - [`table::Table`] answers `__datafusion_table_provider__(session)` with a PyCapsule named
//!   `datafusion_table_provider` holding an `FFI_TableProvider`, which
//!   `SessionContext.register_table` accepts;
//! - [`catalog::Catalog`] answers `__datafusion_catalog_provider__(codec)` with a
//!   `datafusion_catalog_provider` capsule for `SessionContext.register_catalog_provider`, and
//!   runs statements the host cannot plan (DELETE, time travel clauses, CREATE TABLE with
//!   partitions, ...) in icefloe's own session (`Catalog.sql`);
//! - [`hosted`] makes icefloe's providers work inside the foreign host: its own object stores
//!   and runtime environment, its futures on this module's tokio runtime.
//!
//! The host hands its logical extension codec over through the session
//! (`__datafusion_logical_extension_codec__`), or as the capsule itself.
//!
//! icefloe's futures run on one multi-thread tokio runtime of this module: datafusion-python
//! links its own tokio, and the FFI enters this runtime's handle while it executes our plans.

mod catalog;
mod hosted;
mod result;
mod table;

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use datafusion::catalog::TableProvider;
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use icefloe::io::StorageProperties;
use icefloe::{FileIO, Relocation};
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

/// An error of a statement as a Python exception: icefloe's own error when DataFusion carries
/// one (as [`error`] maps it), else `IcefloeError` with DataFusion's message.
fn statement_error(e: DataFusionError) -> PyErr {
    match e.find_root() {
        DataFusionError::External(inner) => match inner.downcast_ref::<icefloe::Error>() {
            Some(icefloe::Error::InvalidArgument { .. }) => PyValueError::new_err(e.to_string()),
            _ => IcefloeError::new_err(e.to_string()),
        },
        _ => IcefloeError::new_err(e.to_string()),
    }
}

/// The IO of one table or catalog: a fresh runtime environment of its own (the object stores
/// it builds are registered there and its scans execute with it, see [`hosted`]), reaching its
/// stores with `storage` (Iceberg's FileIO properties).
fn own_io(storage: BTreeMap<String, String>) -> FileIO {
    FileIO::new(Arc::new(RuntimeEnv::default()), Relocation::default())
        .with_storage(StorageProperties::from_pairs(storage))
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
/// `__datafusion_logical_extension_codec__`, or the argument itself when it is the capsule.
fn logical_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let capsule = match session.hasattr("__datafusion_logical_extension_codec__")? {
        true => session.call_method0("__datafusion_logical_extension_codec__")?,
        false => session.clone(),
    };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(
            "register it in a datafusion SessionContext (datafusion 55): the session gave no \
             logical extension codec",
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
    m.add_class::<table::Table>()?;
    m.add_class::<table::MetadataTable>()?;
    m.add_class::<catalog::Catalog>()?;
    m.add_class::<result::SqlResult>()?;
    m.add("IcefloeError", m.py().get_type::<IcefloeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
