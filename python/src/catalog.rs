//! `icefloe.Catalog`: an Iceberg catalog (SQLite, REST, or a catalog of PyIceberg's
//! configuration) for `SessionContext.register_catalog_provider`, and icefloe's own SQL over
//! it for what the host cannot plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_ffi::catalog_provider::FFI_CatalogProvider;
use icefloe::catalog::{SqliteCatalog, TableIdent};
use icefloe::session::{IcebergCatalogProvider, attach_as_default};
use icefloe::{IcebergTableProvider, WriteTarget};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use tokio::sync::OnceCell;

use crate::hosted::HostedCatalog;
use crate::result::SqlResult;
use crate::table::{Table, selection};
use crate::{error, logical_codec, own_io, runtime, statement_error};

/// The capsule name of a catalog provider in the FFI protocol.
const CATALOG_PROVIDER: &std::ffi::CStr = c"datafusion_catalog_provider";

/// An Iceberg catalog, to register in a datafusion-python `SessionContext` with
/// `register_catalog_provider`: its namespaces are the schemas, its tables the tables.
#[pyclass(module = "icefloe._icefloe", name = "Catalog", frozen)]
pub(crate) struct Catalog {
    catalog: Arc<dyn icefloe::catalog::Catalog>,
    /// icefloe's own session over this catalog, for [`Catalog::sql`] (made on first use).
    session: OnceCell<SessionContext>,
}

impl Catalog {
    fn with(catalog: Arc<dyn icefloe::catalog::Catalog>) -> Self {
        Self {
            catalog,
            session: OnceCell::new(),
        }
    }

    /// The runtime environment the catalog's IO registers stores in (its own: [`own_io`]).
    fn env(&self) -> &Arc<RuntimeEnv> {
        self.catalog.io().runtime()
    }

    /// The session of [`Catalog::sql`]: icefloe's SQL, this catalog the default one.
    async fn session(&self) -> icefloe::Result<&SessionContext> {
        self.session
            .get_or_try_init(|| async {
                let config = (self.catalog.io().storage().clone())
                    .for_session(SessionConfig::new().with_information_schema(true));
                let ctx = SessionContext::new_with_config_rt(config, Arc::clone(self.env()));
                icefloe::sql::register(&ctx);
                attach_as_default(&ctx, Arc::clone(&self.catalog)).await?;
                Ok(ctx)
            })
            .await
    }
}

#[pymethods]
impl Catalog {
    /// Connects to the catalog `spec` names: a SQLite catalog database (a path or
    /// `sqlite:///path`), a REST catalog (`http(s)://host/path`, the base URI without `/v1`),
    /// or a catalog of PyIceberg's `.pyiceberg.yaml` / `PYICEBERG_CATALOG__*` variables by
    /// name. `properties` are PyIceberg's catalog properties (`uri`, `type`, `credential`,
    /// `token`, `warehouse`, `s3.endpoint`, ...), on top of the configured ones; with a `uri`
    /// they define a catalog of that name also without configuration, as PyIceberg's
    /// `load_catalog(name, **properties)` does.
    #[new]
    #[pyo3(signature = (spec, *, properties=None))]
    fn new(
        py: Python<'_>,
        spec: String,
        properties: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let properties = properties.unwrap_or_default();
        let io = own_io(properties.clone());
        let catalog = py
            .detach(|| runtime().block_on(icefloe::catalog::connect(&spec, properties, io)))
            .map_err(error)?;
        Ok(Self::with(catalog))
    }

    /// Makes a new SQLite catalog database at `path` (PyIceberg's SQL catalog layout) whose
    /// catalog is named `name`, and connects to it. New tables go under the `warehouse`
    /// property (a location, `file:///...` or `s3://...`), by default the database's
    /// directory. An existing file is an error.
    #[staticmethod]
    #[pyo3(signature = (path, *, name="default", properties=None))]
    fn create(
        py: Python<'_>,
        path: String,
        name: &str,
        properties: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let properties = properties.unwrap_or_default();
        let warehouse = properties.get("warehouse").cloned();
        let io = own_io(properties);
        let mut catalog = py
            .detach(|| SqliteCatalog::create(&path, name, io))
            .map_err(error)?;
        if let Some(warehouse) = warehouse {
            catalog = catalog.with_warehouse(warehouse);
        }
        Ok(Self::with(Arc::new(catalog)))
    }

    /// The catalog's name (the `catalog_name` of a SQL catalog, the host of a REST one).
    #[getter]
    fn name(&self) -> String {
        self.catalog.name().to_string()
    }

    /// The table `name` (`namespace.table`) as a `Table` whose INSERTs commit through this
    /// catalog: its current snapshot, or the one `snapshot_id`, `ref` or `as_of` (epoch
    /// milliseconds) names.
    #[pyo3(signature = (name, *, snapshot_id=None, r#ref=None, as_of=None))]
    fn table(
        &self,
        py: Python<'_>,
        name: String,
        snapshot_id: Option<i64>,
        r#ref: Option<String>,
        as_of: Option<i64>,
    ) -> PyResult<Table> {
        let selector = selection(snapshot_id, r#ref, as_of)?;
        let provider = py
            .detach(|| {
                runtime().block_on(async {
                    let ident = TableIdent::parse_dotted(&name)?;
                    let table = self.catalog.load_table(&ident).await?;
                    let target = WriteTarget::new(Arc::clone(&self.catalog), ident);
                    Ok::<_, icefloe::Error>(
                        IcebergTableProvider::try_new(table, selector.clone())?
                            .with_write_target(target),
                    )
                })
            })
            .map_err(error)?;
        Ok(Table::of_catalog(provider, name, selector))
    }

    /// Runs one statement of icefloe's SQL in icefloe's own session over this catalog (the
    /// default catalog there: `namespace.table` names its tables), and returns its rows once it
    /// has run: what the host's SQL cannot plan, `DELETE`, `UPDATE`, `MERGE INTO`, `CREATE
    /// TABLE ... PARTITION BY`, `ALTER TABLE`, `VERSION AS OF`, `TIMESTAMP AS OF`, `FOR
    /// SYSTEM_TIME AS OF`, the `iceberg_*` procedures, `SHOW CREATE TABLE`. The rows are held
    /// in memory: run large reads in the host session.
    fn sql(&self, py: Python<'_>, query: String) -> PyResult<SqlResult> {
        py.detach(|| {
            runtime().block_on(async {
                let ctx = self.session().await.map_err(error)?;
                let frame = icefloe::sql::sql(ctx, &query)
                    .await
                    .map_err(statement_error)?;
                let schema = Arc::clone(frame.schema().inner());
                let batches = frame.collect().await.map_err(statement_error)?;
                Ok(SqlResult::new(schema, batches))
            })
        })
    }

    /// The FFI catalog provider, for `SessionContext.register_catalog_provider`.
    fn __datafusion_catalog_provider__<'py>(
        &self,
        py: Python<'py>,
        codec: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec(&codec)?;
        let provider = IcebergCatalogProvider::new(Arc::clone(&self.catalog));
        let hosted = HostedCatalog::new(Arc::new(provider), self.env());
        let provider = FFI_CatalogProvider::new_with_ffi_codec(
            Arc::new(hosted),
            Some(runtime().handle().clone()),
            codec,
        );
        PyCapsule::new_with_value(py, provider, CATALOG_PROVIDER)
    }

    fn __repr__(&self) -> String {
        format!("icefloe.Catalog({:?})", self.catalog.name())
    }
}
