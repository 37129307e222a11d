//! `icefloe demo [DIR]`: makes a warehouse with a SQLite catalog on the spot and walks through
//! the example of the format notes: `db.orders (order_id, customer_id, order_ts timestamptz,
//! amount decimal(10,2))` partitioned by `day(order_ts)`, two commits of one day each, then
//! the metadata tree (the second manifest list reusing the first commit's manifest), the
//! metadata tables, a time-travel query and a pruned query with its planning counts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::physical_plan::collect;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::args::{DemoArgs, OutputFormat};
use super::session::SqlSession;
use super::tree::{TreeOptions, render_tree};
use super::tree_load::load_tree;
use super::{CliError, CliResult};
use crate::catalog::SqliteCatalog;
use crate::io::{FileIO, Relocation};
use crate::scan::plan_metric;
use crate::session::register_catalog_as_default;
use crate::spec::{NestedField, PrimitiveType, Schema};
use crate::write::TableCreation;

/// The first commit: orders of 2026-07-13.
const FIRST_DAY: &str = "INSERT INTO db.orders VALUES
  (1, 101, TIMESTAMP '2026-07-13T09:15:00Z', 25.50),
  (2, 102, TIMESTAMP '2026-07-13T11:40:00Z', 110.00),
  (3, 101, TIMESTAMP '2026-07-13T18:05:00Z', 7.25)";

/// The second commit: orders of 2026-07-14.
const SECOND_DAY: &str = "INSERT INTO db.orders VALUES
  (4, 103, TIMESTAMP '2026-07-14T08:00:00Z', 42.00),
  (5, 102, TIMESTAMP '2026-07-14T13:30:00Z', 19.99)";

/// The query whose pruning the demo shows: one day of two.
const ONE_DAY: &str = "SELECT order_id, customer_id, amount FROM db.orders
  WHERE order_ts >= TIMESTAMP '2026-07-14T00:00:00Z' ORDER BY order_id";

/// Runs the demo in `args.dir` (a new temporary directory, kept, when not given), printing
/// to `out`.
pub async fn run_demo<W: Write>(args: &DemoArgs, out: &mut W) -> CliResult<()> {
    let dir = warehouse_dir(args.dir.as_deref())?;
    let warehouse = dir.display().to_string();
    let io = FileIO::default();
    let db = dir.join("catalog.db");
    heading(out, &format!("A warehouse in {warehouse}"))?;
    let catalog = SqliteCatalog::create(&db, "demo", io.clone())?.with_warehouse(&warehouse);
    catalog.create_namespace("db", &Default::default())?;
    let creation = TableCreation::new(orders_schema()).with_partitioning("day(order_ts)")?;
    let table = catalog.create_table("db", "orders", &creation).await?;
    writeln!(
        out,
        "catalog 'demo' in {} (SQLite, PyIceberg layout)\n{}\ncreated db.orders, partitioned by day(order_ts):\n  {}",
        db.display(),
        super::pyiceberg_line("demo", &db, &catalog.warehouse()),
        table.metadata_location()
    )?;

    let config = SessionConfig::new().with_information_schema(true);
    let ctx = SessionContext::new_with_config(config);
    crate::sql::register(&ctx);
    register_catalog_as_default(&ctx, &db, Relocation::default()).await?;
    let session = SqlSession::new(ctx.clone(), OutputFormat::Table);

    heading(out, "Two commits, one day each")?;
    for insert in [FIRST_DAY, SECOND_DAY] {
        statement(&session, out, insert).await?;
    }

    heading(
        out,
        "The metadata tree: the second manifest list reuses the first manifest",
    )?;
    let table = catalog.load_table("db", "orders").await?;
    let tree = load_tree(&table, "db.orders".into(), Some(db.display().to_string())).await;
    writeln!(out, "{}", render_tree(&tree, TreeOptions::default()))?;

    heading(out, "Metadata tables")?;
    statement(
        &session,
        out,
        "SELECT snapshot_id, parent_id, operation, summary['added-records'] AS added_records, \
         summary['total-records'] AS total_records FROM db.\"orders$snapshots\" ORDER BY committed_at",
    )
    .await?;
    statement(
        &session,
        out,
        "SELECT added_snapshot_id, added_data_files_count, existing_data_files_count, path \
         FROM db.\"orders$manifests\" ORDER BY added_snapshot_id",
    )
    .await?;
    statement(
        &session,
        out,
        "SELECT partition, record_count, file_count FROM db.\"orders$partitions\" ORDER BY partition",
    )
    .await?;

    heading(out, "Time travel: the table as the first commit left it")?;
    let first = table
        .metadata()
        .snapshots
        .first()
        .map(|s| s.snapshot_id)
        .ok_or_else(|| CliError::Usage("the demo table has no snapshot".into()))?;
    statement(
        &session,
        out,
        &format!(
            "SELECT count(*) AS orders, sum(amount) AS revenue FROM db.orders VERSION AS OF {first}"
        ),
    )
    .await?;
    statement(
        &session,
        out,
        "SELECT count(*) AS orders, sum(amount) AS revenue FROM db.orders",
    )
    .await?;

    heading(
        out,
        "A pruned query: only the matching day's manifest is read",
    )?;
    statement(&session, out, ONE_DAY).await?;
    let plan = crate::sql::sql(&ctx, ONE_DAY)
        .await?
        .create_physical_plan()
        .await?;
    collect(Arc::clone(&plan), ctx.task_ctx()).await?;
    let metric = |name: &str| plan_metric(&plan, name).unwrap_or(0);
    writeln!(
        out,
        "EXPLAIN ANALYZE counts: manifests_total={} manifests_pruned={} data_files_scanned={} \
         data_files_pruned_by_partition={}",
        metric("manifests_total"),
        metric("manifests_pruned"),
        metric("data_files_scanned"),
        metric("data_files_pruned_by_partition"),
    )?;
    writeln!(
        out,
        "\nTry it yourself:\n  icefloe sql --catalog {} \"SELECT * FROM db.orders\"",
        db.display()
    )?;
    out.flush()?;
    Ok(())
}

/// `db.orders` of the format notes.
fn orders_schema() -> Schema {
    Schema::new(
        0,
        vec![
            NestedField::required(1, "order_id", PrimitiveType::Long),
            NestedField::optional(2, "customer_id", PrimitiveType::Long),
            NestedField::required(3, "order_ts", PrimitiveType::Timestamptz),
            NestedField::optional(
                4,
                "amount",
                PrimitiveType::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
        ],
    )
}

/// `dir`, which must not exist yet or be empty, or a new temporary directory that is kept.
fn warehouse_dir(dir: Option<&Path>) -> CliResult<PathBuf> {
    let dir = match dir {
        Some(dir) => {
            let empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
            if !empty {
                return Err(CliError::Usage(format!(
                    "{} is not empty: give the demo a new or empty directory",
                    dir.display()
                )));
            }
            std::fs::create_dir_all(dir)?;
            dir.to_path_buf()
        }
        None => tempfile_dir()?,
    };
    Ok(dir.canonicalize()?)
}

/// A new directory under the system's temporary directory, kept after the demo.
fn tempfile_dir() -> CliResult<PathBuf> {
    let dir = std::env::temp_dir().join(format!("icefloe-demo-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn heading<W: Write>(out: &mut W, title: &str) -> CliResult<()> {
    writeln!(out, "\n== {title}\n")?;
    Ok(())
}

/// Prints `sql`, runs it, prints its result.
async fn statement<W: Write>(session: &SqlSession, out: &mut W, sql: &str) -> CliResult<()> {
    writeln!(out, "> {sql};")?;
    session.run_statement(sql, out).await.map(|_| ())
}
