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

mod dialect;
mod factory;
mod functions;
pub(crate) mod refs;
mod time_travel;

#[cfg(test)]
pub(crate) mod test_support;

use std::sync::Arc;

use datafusion::common::{not_impl_err, plan_datafusion_err};
use datafusion::dataframe::DataFrame;
use datafusion::error::Result as DFResult;
use datafusion::prelude::SessionContext;

pub use dialect::{IcebergDialect, parse_statements};
pub use factory::IcebergTableFactory;
pub use functions::{IcebergIncrementalFunction, IcebergMetadataFunction, IcebergScanFunction};
pub use time_travel::TimeTravelPlanner;

use refs::RefsCatalog;

/// Registers icefloe's SQL extensions with a session:
///
/// - `CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '...'` opens an Iceberg table;
/// - the [`TimeTravelPlanner`] plans version clauses (parse them with [`sql`]);
/// - the table functions `iceberg_scan`, `iceberg_incremental` and `iceberg_metadata`;
/// - the session's default catalog is wrapped so that the tables of its default schema also
///   answer as `t.branch_<b>`, `t.tag_<g>` and `"t@<ref>"` (and every schema of it serves
///   `"t@<ref>"`). Catalogs registered later are not wrapped; call `register` again after
///   replacing the default catalog yourself (calling it twice is harmless).
///
/// ```
/// let ctx = datafusion::prelude::SessionContext::new();
/// icefloe::sql::register(&ctx);
/// ```
pub fn register(ctx: &SessionContext) {
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        state
            .table_factories_mut()
            .insert("ICEBERG".to_string(), Arc::new(IcebergTableFactory));
        // Infallible in DataFusion 55 (it only inserts into a list).
        let _ = state.register_relation_planner(Arc::new(TimeTravelPlanner));
    }
    ctx.register_udtf("iceberg_scan", Arc::new(IcebergScanFunction));
    ctx.register_udtf("iceberg_incremental", Arc::new(IcebergIncrementalFunction));
    ctx.register_udtf("iceberg_metadata", Arc::new(IcebergMetadataFunction));
    wrap_default_catalog(ctx);
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
/// as with `SessionContext::sql`.
pub async fn sql(ctx: &SessionContext, query: &str) -> DFResult<DataFrame> {
    let mut state = ctx.state();
    // Plans version clauses also in sessions without `register`: DataFusion's own planner would
    // silently read the current snapshot. A second registration is harmless.
    state.register_relation_planner(Arc::new(TimeTravelPlanner))?;
    let mut statements = parse_with_icefloe_dialect(&state, query)?;
    let Some(statement) = statements.pop_front() else {
        return Err(plan_datafusion_err!("no SQL statement in the query string"));
    };
    if !statements.is_empty() {
        return not_impl_err!("one SQL statement at a time");
    }
    let plan = state.statement_to_plan(statement).await?;
    ctx.execute_logical_plan(plan).await
}

/// Parses with the session's dialect plus table versioning. A separate function so the
/// dialect (not `Send`) is gone before the caller awaits, keeping [`sql`]'s future `Send`.
fn parse_with_icefloe_dialect(
    state: &datafusion::execution::SessionState,
    query: &str,
) -> DFResult<std::collections::VecDeque<datafusion::sql::parser::Statement>> {
    let parser_options = &state.config().options().sql_parser;
    let dialect_name = parser_options.dialect;
    let dialect = IcebergDialect::from_name(dialect_name.as_ref())
        .ok_or_else(|| plan_datafusion_err!("unsupported SQL dialect: {dialect_name}"))?;
    let limit = parser_options.recursion_limit.get();
    parse_statements(query, &dialect, limit)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod metadata_tables_tests;
