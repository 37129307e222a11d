//! Time travel on the PyIceberg warehouse shipped in the repo: a snapshot by id, a branch and a
//! tag by name, the state at an instant, the rows appended since a snapshot, from Rust and SQL.
//!
//! ```sh
//! cargo run --example time_travel
//! ```

use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe::spec::SnapshotSelector;
use icefloe::spec::selection::parse_timestamp_ms;
use icefloe::{IcebergTableProvider, TableOptions};

/// `db.orders`: its first append (order ids 1..=10), committed 2026-11-30 14:42:38.886 UTC; the
/// second (ids 11..=20) followed 35 ms later.
const FIRST_APPEND: i64 = 5717840931077797238;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let warehouse = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pyiceberg/wh1");
    let orders = format!("{warehouse}/db/orders");
    let refs = format!("{warehouse}/db/refs");
    // Written at file:///data/lake/wh1; relocation reads it from the repo.
    let moved = TableOptions::default().with_relocation("file:///data/lake/wh1", warehouse);
    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);

    // A snapshot by id, read with the schema it was written with.
    let first =
        IcebergTableProvider::open(&ctx, &orders, moved.clone().with_snapshot_id(FIRST_APPEND))
            .await?;
    ctx.register_table("orders_first", Arc::new(first.clone()))?;

    // A branch by name (the current schema), and a tag of the same table without reading its
    // metadata again.
    let audit = IcebergTableProvider::open(&ctx, &refs, moved.clone().with_ref("audit")).await?;
    let v2 = audit.at(SnapshotSelector::Ref("v2".into()))?;
    ctx.register_table("refs_audit", Arc::new(audit))?;
    ctx.register_table("refs_v2", Arc::new(v2))?;

    // The snapshot current at an instant (ISO-8601; no zone means UTC).
    let instant = parse_timestamp_ms("2026-11-30 14:42:38.900")?;
    let then = IcebergTableProvider::open(&ctx, &orders, moved.clone().as_of_timestamp_ms(instant))
        .await?;
    ctx.register_table("orders_then", Arc::new(then))?;

    // The rows appended after the first append, up to the current snapshot.
    let since = IcebergTableProvider::incremental(
        first.table().clone(),
        FIRST_APPEND,
        SnapshotSelector::Current,
    )?;
    ctx.register_table("orders_since", Arc::new(since))?;

    ctx.sql(
        "SELECT 'first append' AS state, count(*) AS n FROM orders_first
         UNION ALL SELECT 'as of 14:42:38.900', count(*) FROM orders_then
         UNION ALL SELECT 'appended since', count(*) FROM orders_since
         UNION ALL SELECT 'refs: branch audit', count(*) FROM refs_audit
         UNION ALL SELECT 'refs: tag v2', count(*) FROM refs_v2",
    )
    .await?
    .show()
    .await?;

    // The same from SQL: version clauses go through `icefloe::sql::sql`.
    let orders_table = IcebergTableProvider::open(&ctx, &orders, moved).await?;
    ctx.register_table("orders", Arc::new(orders_table))?;
    for query in [
        "SELECT count(*) AS n FROM orders VERSION AS OF 5717840931077797238",
        "SELECT count(*) AS n FROM orders FOR SYSTEM_TIME AS OF '2026-11-30 14:42:38.900'",
        "SELECT snapshot_id, operation FROM \"orders$snapshots\"",
    ] {
        println!("{query}");
        icefloe::sql::sql(&ctx, query).await?.show().await?;
    }
    Ok(())
}
