//! Quickstart: open an Iceberg table written by PyIceberg (shipped in the repo) and query it.
//!
//! ```sh
//! cargo run --example quickstart
//! ```

use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe::{IcebergTableProvider, TableOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let warehouse = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pyiceberg/wh1");
    let ctx = SessionContext::new();

    // The table was written at file:///data/lake/wh1; relocation reads it from the repo.
    let options = TableOptions::default().with_relocation("file:///data/lake/wh1", warehouse);
    let orders =
        IcebergTableProvider::open(&ctx, &format!("{warehouse}/db/orders"), options).await?;
    ctx.register_table("orders", Arc::new(orders))?;

    ctx.sql("SELECT count(*) AS orders, sum(amount) AS revenue FROM orders")
        .await?
        .show()
        .await?;
    Ok(())
}
