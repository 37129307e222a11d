//! SQL integration: `CREATE EXTERNAL TABLE ... STORED AS ICEBERG`, time travel, refs by name,
//! table functions, and the calls that wire them into a `SessionContext`.
//!
//! Embedders make two calls: [`register`] once per session, and [`sql`] instead of
//! `SessionContext::sql` for statements that may hold a version clause.
//!
//! ```no_run
//! # async fn example() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//!
//! let ctx = SessionContext::new();
//! icefloe::sql::register(&ctx);
//! icefloe::sql::sql(&ctx, "CREATE EXTERNAL TABLE orders STORED AS ICEBERG \
//!                          LOCATION '/data/warehouse/db/orders'").await?;
//! // Time travel (needs `icefloe::sql::sql`: DataFusion's own parser does not read the clauses).
//! icefloe::sql::sql(&ctx, "SELECT count(*) FROM orders FOR SYSTEM_TIME AS OF '2024-01-01 00:00:00'").await?;
//! icefloe::sql::sql(&ctx, "SELECT count(*) FROM orders TIMESTAMP AS OF now() - INTERVAL '1 day'").await?;
//! icefloe::sql::sql(&ctx, "SELECT count(*) FROM orders VERSION AS OF 5717840931077797238").await?;
//! icefloe::sql::sql(&ctx, "SELECT count(*) FROM orders VERSION AS OF 'audit'").await?;
//! // Refs by name and table functions (these also work through `ctx.sql`).
//! ctx.sql("SELECT count(*) FROM orders.branch_audit").await?;
//! ctx.sql(r#"SELECT count(*) FROM "orders@v1""#).await?;
//! ctx.sql("SELECT count(*) FROM iceberg_scan('/data/warehouse/db/orders', 'v1')").await?;
//! // Metadata tables.
//! ctx.sql(r#"SELECT snapshot_id, operation FROM "orders$snapshots""#).await?;
//! ctx.sql("SELECT path FROM orders.manifests").await?;
//! ctx.sql("SELECT * FROM iceberg_metadata('/data/warehouse/db/orders', 'history')").await?;
//! # Ok(())
//! # }
//! ```
//!
//! - [`TimeTravelPlanner`] plans `FOR SYSTEM_TIME AS OF`, `TIMESTAMP AS OF` and `VERSION AS OF`
//!   (how each value is read: see its module); [`IcebergDialect`] parses them.
//! - Refs by name (`t.branch_x`, `t.tag_x`, `"t@x"`, and `ns.t.branch_x` for catalog tables): see
//!   the `refs` table in the README.
//! - Metadata tables (`snapshots`, `files`, ...): `"t$files"`, `t.files`, `ns.t.files`, and
//!   `"t$files" VERSION AS OF ...` for the per-snapshot ones.
//! - [`IcebergScanFunction`], [`IcebergIncrementalFunction`] and [`IcebergMetadataFunction`]:
//!   `iceberg_scan(...)`, `iceberg_incremental(...)` and `iceberg_metadata(...)`.
//! - Creating tables: `CREATE EXTERNAL TABLE t (cols) STORED AS ICEBERG LOCATION '...'` creates a
//!   table directory ([`IcebergTableFactory`] lists the options); in a SQLite catalog,
//!   `CREATE SCHEMA ns`, `CREATE TABLE ns.t (cols) [TBLPROPERTIES (...)] [PARTITION BY (...)]`,
//!   `CREATE TABLE ns.t ... AS SELECT ...` and `DROP TABLE ns.t [PURGE]` act on the catalog
//!   when run through [`sql`] (see `catalog_ddl` below for why there).

mod alter;
mod changes;
mod dialect;
mod dml;
mod factory;
mod functions;
mod merge;
mod procedures;
mod read_only;
mod show;
mod time_travel;
mod types;
mod values;
mod variant;

#[cfg(test)]
pub(crate) mod test_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::common::{ResolvedTableReference, not_impl_err, plan_datafusion_err, plan_err};
use datafusion::dataframe::DataFrame;
use datafusion::error::Result as DFResult;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::planner::object_name_to_table_reference;
use datafusion::sql::sqlparser::ast::{
    ColumnOption, CreateTable, CreateTableOptions, Expr, ObjectName, ObjectType, SchemaName,
    SqlOption, Statement as SqlStatement, Value,
};

use crate::catalog::{Catalog, Namespace, TableIdent};
use crate::session::IcebergCatalogs;
use crate::spec::DataFile;
use crate::table::Table;
use crate::to_arrow::schema_to_arrow;
use crate::write::{AppendWriter, TableCreation, WriteTarget, append_batches, create_with_files};

pub use changes::{ChangeMetrics, Delete, Merge, TableChanges, Update};
pub use dialect::{IcebergDialect, parse_statements};
pub use dml::RowLevelChanges;
pub use factory::IcebergTableFactory;
pub use functions::{IcebergIncrementalFunction, IcebergMetadataFunction, IcebergScanFunction};
pub use procedures::{
    IcebergExpireSnapshotsFunction, IcebergProcedure, IcebergRewriteDataFilesFunction,
    IcebergRollbackFunction,
};
/// The compaction options of `key=value` pairs, shared with `icefloe rewrite-data-files`.
#[cfg(feature = "cli")]
pub(crate) use procedures::{position_delete_options, rewrite_options};
pub use read_only::writes;
pub use time_travel::TimeTravelPlanner;
pub use values::ValuesTypes;

use crate::session::refs::RefsCatalog;

/// Registers icefloe's SQL extensions with a session:
///
/// - `CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '...'` opens an Iceberg table;
/// - the [`TimeTravelPlanner`] plans version clauses (parse them with [`sql`]);
/// - the table functions `iceberg_scan`, `iceberg_incremental` and `iceberg_metadata`;
/// - the scalar functions of `variant` columns: `variant_to_json`, `variant_get` and
///   `parse_json` (Iceberg v3 "Semi-structured Types");
/// - the session's default catalog is wrapped so that the tables of its default schema also
///   answer as `t.branch_<b>`, `t.tag_<g>` and `"t@<ref>"` (and every schema of it serves
///   `"t@<ref>"`). Catalogs registered later are not wrapped; call `register` again after
///   replacing the default catalog yourself (calling it twice is harmless);
/// - a session without a time zone (`datafusion.execution.time_zone`, unset by default in
///   DataFusion 55) gets UTC (`+00:00`): DataFusion types `TIMESTAMP WITH TIME ZONE` /
///   `TIMESTAMPTZ` with the session's zone and, without one, as a timestamp without zone, so
///   `CREATE TABLE t (ts TIMESTAMPTZ)` would make an Iceberg `timestamp` column and shift the
///   values it is given. A zone set before or after `register` is kept;
/// - the analyzer rule [`RowLevelChanges`], which plans `DELETE` and `UPDATE` on Iceberg tables
///   (without it the tables refuse them: DataFusion 55 alone would hand them an incomplete
///   condition);
/// - the optimizer rule [`ValuesTypes`], so that `INSERT INTO t VALUES (...)` takes lists, maps
///   and structs (DataFusion 55 otherwise fails on the field ids of nested fields).
///
/// ```
/// let ctx = datafusion::prelude::SessionContext::new();
/// icefloe::sql::register(&ctx);
/// ```
pub fn register(ctx: &SessionContext) {
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        default_time_zone(&mut state);
        let extensions = &mut state.config_mut().options_mut().extensions;
        if extensions.get::<crate::write::IcefloeOptions>().is_none() {
            extensions.insert(crate::write::IcefloeOptions::default());
        }
        state
            .table_factories_mut()
            .insert("ICEBERG".to_string(), Arc::new(IcebergTableFactory));
        // Infallible in DataFusion 55 (it only inserts into a list).
        let _ = state.register_relation_planner(Arc::new(TimeTravelPlanner));
    }
    let has_values_types = ctx
        .state_ref()
        .read()
        .optimizers()
        .iter()
        .any(|r| r.name() == ValuesTypes::NAME);
    if !has_values_types {
        ctx.add_optimizer_rule(Arc::new(ValuesTypes));
    }
    let has_row_level = ctx
        .state_ref()
        .read()
        .analyzer()
        .rules
        .iter()
        .any(|r| r.name() == RowLevelChanges::NAME);
    if !has_row_level {
        ctx.add_analyzer_rule(Arc::new(RowLevelChanges));
    }
    variant::register_functions(ctx);
    ctx.register_udtf("iceberg_scan", Arc::new(IcebergScanFunction));
    ctx.register_udtf("iceberg_incremental", Arc::new(IcebergIncrementalFunction));
    ctx.register_udtf("iceberg_metadata", Arc::new(IcebergMetadataFunction));
    ctx.register_udtf(
        "iceberg_expire_snapshots",
        Arc::new(procedures::IcebergExpireSnapshotsFunction),
    );
    ctx.register_udtf(
        "iceberg_rollback_to_snapshot",
        Arc::new(procedures::IcebergRollbackFunction),
    );
    ctx.register_udtf(
        procedures::REWRITE_DATA_FILES,
        Arc::new(IcebergRewriteDataFilesFunction),
    );
    for (name, procedure) in procedures::IcebergProcedure::ALL {
        ctx.register_udtf(name, Arc::new(procedure));
    }
    wrap_default_catalog(ctx);
}

/// The zone `TIMESTAMP WITH TIME ZONE` gets in a session without one (see [`register`]).
pub const DEFAULT_TIME_ZONE: &str = "+00:00";

/// Sets the session's time zone to [`DEFAULT_TIME_ZONE`] when it has none.
fn default_time_zone(state: &mut SessionState) {
    let zone = &mut state.config_mut().options_mut().execution.time_zone;
    if zone.is_none() {
        *zone = Some(DEFAULT_TIME_ZONE.to_string());
    }
}

/// Wraps the default catalog in a [`RefsCatalog`], unless it already is one.
fn wrap_default_catalog(ctx: &SessionContext) {
    let config = ctx.copied_config();
    let names = &config.options().catalog;
    if let Some(catalog) = ctx.catalog(&names.default_catalog)
        && !catalog.is::<RefsCatalog>()
    {
        let wrapped = RefsCatalog::new(catalog, names.default_schema.clone());
        ctx.register_catalog(names.default_catalog.clone(), Arc::new(wrapped));
    }
}

/// Runs one SQL statement like `SessionContext::sql`, parsed with the session's dialect
/// (`datafusion.sql_parser.dialect`) wrapped in an [`IcebergDialect`], so that version clauses
/// (`FOR SYSTEM_TIME AS OF`, `TIMESTAMP AS OF`, `VERSION AS OF <id or 'ref'>`) parse. DDL runs
/// as with `SessionContext::sql`, except `CREATE SCHEMA`, `CREATE TABLE` (also `AS SELECT`) and
/// `DROP TABLE` on a namespace of an Iceberg catalog, which act on the catalog:
///
/// ```sql
/// CREATE SCHEMA db;
/// CREATE TABLE db.orders (order_id BIGINT NOT NULL, order_ts TIMESTAMP, amount DECIMAL(10, 2))
///   TBLPROPERTIES ('format-version' = '3', 'write.target-file-size-bytes' = '134217728')
///   PARTITION BY (day(order_ts), bucket(16, order_id));
/// CREATE TABLE db.big PARTITION BY (day(order_ts)) AS SELECT * FROM db.orders WHERE amount > 100;
/// DROP TABLE db.big PURGE;
/// ```
///
/// `PARTITION BY` and `TBLPROPERTIES` may come in either order, as in Spark.
pub async fn sql(ctx: &SessionContext, query: &str) -> DFResult<DataFrame> {
    let mut state = ctx.state();
    // Plans version clauses also in sessions without `register`: DataFusion's own planner would
    // silently read the current snapshot. A second registration is harmless.
    state.register_relation_planner(Arc::new(TimeTravelPlanner))?;
    // Likewise `TIMESTAMP WITH TIME ZONE` means a zone also without `register`.
    default_time_zone(&mut state);
    if let Some(show) = parse_show_statement(&state, query)?
        && let Some(frame) = show::run_show(ctx, &state, &show).await?
    {
        return Ok(frame);
    }
    if let Some(alter) = parse_alter_statement(&state, query)? {
        let Some(target) = iceberg_target(&state, &alter.table).await? else {
            return plan_err!(
                "ALTER TABLE {}: not a table of an Iceberg catalog's namespace (ALTER TABLE \
                 changes Iceberg tables of a catalog)",
                alter.table
            );
        };
        return alter::run_alter(ctx, &state, &alter, &target).await;
    }
    let mut statements = parse_with_icefloe_dialect(&state, query)?;
    let Some(statement) = statements.pop_front() else {
        return Err(plan_datafusion_err!("no SQL statement in the query string"));
    };
    if !statements.is_empty() {
        return not_impl_err!("one SQL statement at a time");
    }
    if let Some(frame) = catalog_ddl(ctx, &state, &statement).await? {
        return Ok(frame);
    }
    let plan = state.statement_to_plan(statement).await?;
    ctx.execute_logical_plan(plan).await
}

/// DDL on an Iceberg catalog, run here rather than by DataFusion.
///
/// DataFusion plans `CREATE TABLE` and CTAS as `CreateMemoryTable`: it rejects `PARTITION BY`
/// and table properties, runs the query itself, and hands a finished `MemTable` to the
/// synchronous `SchemaProvider::register_table`, where neither a partition spec nor async file
/// writes fit. So [`sql`], which parses every statement itself already, recognises these
/// statements when they name a namespace of a catalog registered with
/// [`crate::session::attach`] or [`crate::session::attach_as_default`] (or the SQLite shortcuts)
/// (found through [`crate::session::IcebergCatalogs`]) and runs them against the catalog:
///
/// - `CREATE TABLE [IF NOT EXISTS] ns.t (cols) [PARTITION BY (terms)] [TBLPROPERTIES ('k' = 'v', ...)]`
///   and `CREATE TABLE ns.t [PARTITION BY ...] [TBLPROPERTIES ...] AS SELECT ...`: DataFusion
///   plans the statement without the two clauses (so column types and the query's schema are
///   DataFusion's own), then the table is created in the catalog
///   ([`crate::catalog::Catalog::create_table`]). CTAS is one commit that creates the table with
///   the query's rows ([`crate::catalog::Catalog::stage_create`], then
///   [`crate::transaction::Transaction::create`]): until it, nobody sees the table, and a
///   failed query leaves none. A catalog that cannot stage gets the table created, then the
///   rows appended (a failed append drops the table again). `PARTITION BY` takes one term or a
///   parenthesised list of terms (`day(order_ts)`, `bucket(16, id)`, `truncate(4, name)`,
///   `col`, ...); `'format-version'`
///   among the properties sets the format version (`WITH (...)` and `OPTIONS (...)` work as
///   `TBLPROPERTIES`).
/// - `DROP TABLE [IF EXISTS] ns.t [PURGE]`: the catalog entry goes; with `PURGE` also every file
///   the table's metadata reaches.
/// - `CREATE SCHEMA [IF NOT EXISTS] ns`: a namespace.
///
/// Other statements, and these on other catalogs or on schemas that are no namespace, go to
/// DataFusion unchanged. Through `SessionContext::sql` (no interception) `DROP TABLE ns.t`
/// still drops the catalog entry (`IcebergSchemaProvider::deregister_table`), while `CREATE
/// TABLE` is refused with a message pointing here.
async fn catalog_ddl(
    ctx: &SessionContext,
    state: &SessionState,
    statement: &Statement,
) -> DFResult<Option<DataFrame>> {
    let Statement::Statement(inner) = statement else {
        return Ok(None);
    };
    match inner.as_ref() {
        SqlStatement::CreateTable(create) => {
            let Some(target) = iceberg_target(state, &create.name).await? else {
                refuse_lost_table(state, &create.name).await?;
                return Ok(None);
            };
            create_table(ctx, state, create, &target).await.map(Some)
        }
        SqlStatement::Drop {
            object_type: ObjectType::Table,
            if_exists,
            names,
            purge,
            ..
        } if names.len() == 1 => {
            let Some(target) = iceberg_target(state, &names[0]).await? else {
                return Ok(None);
            };
            if target.catalog.table_exists(&target.ident).await? {
                target.catalog.drop_table(&target.ident, *purge).await?;
            } else if !if_exists {
                return plan_err!("table {} does not exist", target.ident);
            }
            Ok(Some(done(ctx)?))
        }
        SqlStatement::CreateSchema {
            schema_name: SchemaName::Simple(name),
            if_not_exists,
            with,
            options,
            ..
        } => {
            let parts = normalized_parts(state, name);
            let default_catalog = state.config().options().catalog.default_catalog.clone();
            let (catalog_name, namespace) = match parts.as_slice() {
                [ns] => (default_catalog, ns.clone()),
                [catalog, ns] => (catalog.clone(), ns.clone()),
                _ => return Ok(None),
            };
            let Some(catalog) = IcebergCatalogs::lookup(state, &catalog_name) else {
                return Ok(None);
            };
            let namespace = Namespace::parse_dotted(&namespace)?;
            let props = with.iter().chain(options).flatten();
            match catalog
                .create_namespace(&namespace, option_map(props))
                .await
            {
                Ok(()) => {}
                Err(crate::Error::AlreadyExists { .. }) if *if_not_exists => {
                    return Ok(Some(done(ctx)?));
                }
                Err(crate::Error::AlreadyExists { .. }) => {
                    return plan_err!("namespace {namespace} already exists");
                }
                Err(e) => return Err(e.into()),
            }
            if catalog_name == state.config().options().catalog.default_catalog {
                // `ns.t.branch_x` works in the new namespace at once.
                crate::session::register_namespace_catalogs(ctx, &catalog).await?;
            }
            Ok(Some(done(ctx)?))
        }
        _ => Ok(None),
    }
}

/// A table name inside an Iceberg catalog's existing namespace.
struct IcebergTarget {
    catalog: Arc<dyn Catalog>,
    ident: TableIdent,
}

async fn iceberg_target(
    state: &SessionState,
    name: &ObjectName,
) -> DFResult<Option<IcebergTarget>> {
    let Some((catalog, resolved)) = iceberg_catalog_of(state, name)? else {
        return Ok(None);
    };
    let Ok(namespace) = Namespace::parse_dotted(&resolved.schema) else {
        return Ok(None);
    };
    if !catalog.namespace_exists(&namespace).await? {
        return Ok(None);
    }
    Ok(Some(IcebergTarget {
        catalog,
        ident: TableIdent::new(namespace, resolved.table.as_ref())?,
    }))
}

/// The Iceberg catalog a table name resolves into (with the session's default catalog and
/// schema), and the resolved name; `None` when the catalog is no Iceberg catalog.
fn iceberg_catalog_of(
    state: &SessionState,
    name: &ObjectName,
) -> DFResult<Option<(Arc<dyn Catalog>, ResolvedTableReference)>> {
    let normalize = state
        .config()
        .options()
        .sql_parser
        .enable_ident_normalization;
    let reference = object_name_to_table_reference(name.clone(), normalize)?;
    let names = &state.config().options().catalog;
    let resolved = reference.resolve(&names.default_catalog, &names.default_schema);
    Ok(IcebergCatalogs::lookup(state, &resolved.catalog).map(|catalog| (catalog, resolved)))
}

/// Refuses `CREATE TABLE` of a name in an Iceberg catalog whose namespace does not exist:
/// DataFusion would make an in-memory table there, gone when the session ends, which is never
/// what the user of a catalog session means.
async fn refuse_lost_table(state: &SessionState, name: &ObjectName) -> DFResult<()> {
    let Some((catalog, resolved)) = iceberg_catalog_of(state, name)? else {
        return Ok(());
    };
    let namespaces = crate::session::namespace_names(catalog.as_ref()).await?;
    let known = match namespaces.as_slice() {
        [] => "it has none yet".to_string(),
        some => format!("it has {}", some.join(", ")),
    };
    plan_err!(
        "cannot create table {}: namespace '{}' does not exist in the Iceberg catalog '{}' ({known}); \
         create it first (CREATE SCHEMA {}) or name the table with its namespace (ns.{})",
        resolved.table,
        resolved.schema,
        resolved.catalog,
        resolved.schema,
        resolved.table
    )
}

/// The parts of a name as DataFusion reads them (unquoted parts lower-cased by default).
fn normalized_parts(state: &SessionState, name: &ObjectName) -> Vec<String> {
    let normalize = state
        .config()
        .options()
        .sql_parser
        .enable_ident_normalization;
    name.0
        .iter()
        .filter_map(|part| part.as_ident())
        .map(|ident| match (normalize, ident.quote_style) {
            (true, None) => ident.value.to_lowercase(),
            _ => ident.value.clone(),
        })
        .collect()
}

/// The columns' `COMMENT`s (docs) and `DEFAULT`s (v3 defaults, evaluated to the column's
/// type) of a `CREATE TABLE`, added to `creation`.
async fn column_options(
    ctx: &SessionContext,
    state: &SessionState,
    create: &CreateTable,
    arrow: &datafusion::arrow::datatypes::SchemaRef,
    mut creation: TableCreation,
) -> DFResult<TableCreation> {
    let normalize = state
        .config()
        .options()
        .sql_parser
        .enable_ident_normalization;
    let version = creation.format_version()?;
    for column in &create.columns {
        let name = match (normalize, column.name.quote_style) {
            (true, None) => column.name.value.to_lowercase(),
            _ => column.name.value.clone(),
        };
        for option in &column.options {
            match &option.option {
                ColumnOption::Comment(doc) => creation = creation.with_column_doc(&name, doc),
                ColumnOption::Default(expr) => {
                    let field = arrow.field_with_name(&name)?;
                    let ty = crate::table::arrow_to_iceberg_type(field, version, &name)?;
                    let value = alter::default_value(ctx, expr, &ty, &name).await?;
                    creation = creation.with_column_default(&name, value);
                }
                _ => {}
            }
        }
    }
    Ok(creation)
}

/// `CREATE TABLE` / CTAS in an Iceberg catalog (see [`catalog_ddl`]).
async fn create_table(
    ctx: &SessionContext,
    state: &SessionState,
    create: &CreateTable,
    target: &IcebergTarget,
) -> DFResult<DataFrame> {
    if create.or_replace {
        return not_impl_err!("CREATE OR REPLACE of the Iceberg table {}", create.name);
    }
    let terms = create
        .partition_by
        .as_deref()
        .map(partition_terms)
        .unwrap_or_default();
    let properties = match &create.table_options {
        CreateTableOptions::With(o)
        | CreateTableOptions::TableProperties(o)
        | CreateTableOptions::Options(o) => option_map(o),
        _ => BTreeMap::new(),
    };
    let mut plain = create.clone();
    plain.partition_by = None;
    plain.table_options = CreateTableOptions::None;
    let custom = types::take_custom_types(&mut plain.columns)?;
    let plan = state
        .statement_to_plan(Statement::Statement(Box::new(SqlStatement::CreateTable(
            plain,
        ))))
        .await?;
    let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(memory)) = plan else {
        return not_impl_err!("CREATE TABLE {} planned as {}", create.name, plan.display());
    };
    let IcebergTarget { catalog, ident } = target;
    if catalog.table_exists(ident).await? {
        if memory.if_not_exists {
            return done(ctx);
        }
        return plan_err!("table {ident} already exists");
    }
    let schema = types::restore_custom_types(memory.input.schema().inner(), &custom)?;
    let mut creation = TableCreation::from_arrow(schema).with_properties(properties);
    for term in &terms {
        creation = creation.with_partitioning(term)?;
    }
    creation = column_options(ctx, state, create, memory.input.schema().inner(), creation).await?;
    if create.query.is_none() {
        catalog.create_table(ident, &creation).await?;
        return done(ctx);
    }
    let input = DataFrame::new(state.clone(), memory.input.as_ref().clone());
    match catalog.stage_create(ident, &creation).await {
        Ok(staged) => {
            let batches = query_batches(&staged, input).await?;
            let files = write_files(&staged, &batches).await?;
            create_with_files(Arc::clone(catalog), ident.clone(), staged, files).await?;
        }
        // A catalog that cannot stage: create, then append; a failed append drops the table.
        Err(crate::Error::Unsupported(_)) => {
            let created = catalog.create_table(ident, &creation).await?;
            let target = WriteTarget::new(Arc::clone(catalog), ident.clone());
            let appended = match query_batches(&created, input).await {
                Ok(batches) if batches.is_empty() => Ok(()),
                Ok(batches) => append_batches(&target, &batches, "main").await.map(drop),
                Err(e) => Err(e.into()),
            };
            if let Err(e) = appended {
                let _ = catalog.drop_table(ident, true).await;
                return Err(e.into());
            }
        }
        Err(e) => return Err(e.into()),
    }
    done(ctx)
}

/// The data files of `batches` written for `staged`; none are left when writing fails.
async fn write_files(
    staged: &Table,
    batches: &[RecordBatch],
) -> crate::Result<Vec<(i32, DataFile)>> {
    if batches.is_empty() {
        return Ok(Vec::new());
    }
    let metadata = staged.metadata();
    let mut writer = AppendWriter::new(staged.io(), metadata, metadata.current_schema())?;
    for batch in batches {
        if let Err(e) = writer.write(batch).await {
            writer.abort().await;
            return Err(e);
        }
    }
    writer.finish().await
}

/// The rows of a CTAS query, cast to the table's Arrow schema (empty batches left out).
async fn query_batches(table: &Table, input: DataFrame) -> DFResult<Vec<RecordBatch>> {
    let schema = Arc::new(schema_to_arrow(table.metadata().current_schema())?);
    let mut batches = Vec::new();
    for batch in input.collect().await? {
        if batch.num_rows() == 0 {
            continue;
        }
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(column, field)| cast(column, field.data_type()))
            .collect::<Result<Vec<_>, _>>()?;
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns)?);
    }
    Ok(batches)
}

/// The terms of `PARTITION BY term` or `PARTITION BY (term, ...)`, as text.
fn partition_terms(expr: &Expr) -> Vec<String> {
    match expr {
        Expr::Tuple(items) => items.iter().map(ToString::to_string).collect(),
        Expr::Nested(inner) => vec![inner.to_string()],
        other => vec![other.to_string()],
    }
}

/// `key = value` options as strings (quoted keys and values unquoted).
fn option_map<'a>(options: impl IntoIterator<Item = &'a SqlOption>) -> BTreeMap<String, String> {
    options
        .into_iter()
        .filter_map(|option| match option {
            SqlOption::KeyValue { key, value } => {
                let value = match value {
                    Expr::Value(v) => match &v.value {
                        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    other => other.to_string(),
                };
                Some((key.value.clone(), value))
            }
            _ => None,
        })
        .collect()
}

/// What DDL answers: no columns, no rows.
fn done(ctx: &SessionContext) -> DFResult<DataFrame> {
    let plan = LogicalPlanBuilder::empty(false).build()?;
    Ok(DataFrame::new(ctx.state(), plan))
}

/// Parses with the session's dialect plus table versioning. A separate function so the
/// dialect (not `Send`) is gone before the caller awaits, keeping [`sql`]'s future `Send`.
/// `query` as one of the statements [`show`] answers.
fn parse_show_statement(
    state: &datafusion::execution::SessionState,
    query: &str,
) -> DFResult<Option<show::Show>> {
    let normalize = state
        .config()
        .options()
        .sql_parser
        .enable_ident_normalization;
    Ok(show::parse_show(query, &session_dialect(state)?, normalize))
}

/// `query` as an `ALTER TABLE` statement ([`alter`]).
fn parse_alter_statement(state: &SessionState, query: &str) -> DFResult<Option<alter::Alter>> {
    let normalize = state
        .config()
        .options()
        .sql_parser
        .enable_ident_normalization;
    alter::parse_alter(query, &session_dialect(state)?, normalize)
}

/// A sort order as `WRITE ORDERED BY` takes it (`id DESC NULLS LAST, bucket(4, x)`), in the
/// session's dialect.
fn parse_sort_order(
    state: &SessionState,
    text: &str,
) -> crate::Result<crate::transaction::ReplaceSortOrder> {
    let normalize = state
        .config()
        .options()
        .sql_parser
        .enable_ident_normalization;
    alter::parse_sort_order(text, &session_dialect(state)?, normalize)
}

fn parse_with_icefloe_dialect(
    state: &datafusion::execution::SessionState,
    query: &str,
) -> DFResult<std::collections::VecDeque<datafusion::sql::parser::Statement>> {
    let limit = state.config().options().sql_parser.recursion_limit.get();
    parse_statements(query, &session_dialect(state)?, limit)
}

/// The session's SQL dialect (`datafusion.sql_parser.dialect`) with icefloe's table versioning.
fn session_dialect(state: &datafusion::execution::SessionState) -> DFResult<IcebergDialect> {
    let dialect_name = state.config().options().sql_parser.dialect;
    IcebergDialect::from_name(dialect_name.as_ref())
        .ok_or_else(|| plan_datafusion_err!("unsupported SQL dialect: {dialect_name}"))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod metadata_tables_tests;
