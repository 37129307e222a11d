//! Writing without a catalog: a table directory created from Rust, rows appended from Rust
//! (Arrow batches) and from SQL, a branch written separately, then read back.
//!
//! ```sh
//! cargo run --example writing
//! ```

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, StringViewArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use icefloe::write::{TableCreation, WriteTarget, append_batches};
use icefloe::{FileIO, IcebergTableProvider, TableOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("icefloe-writing-example-{}", std::process::id()));
    let location = dir.join("orders").display().to_string();
    let io = FileIO::default();

    // Create: v1.metadata.json and version-hint.text under `location`, partitioned by a bucket.
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        // Strings are Utf8View, as icefloe reads them: appended batches have the table's types.
        Field::new("customer", DataType::Utf8View, true),
    ]));
    TableCreation::from_arrow(Arc::clone(&schema))
        .with_partitioning("bucket(4, id)")?
        .create_at(&io, &location)
        .await?;

    // Append Arrow batches from Rust: one commit.
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
            Arc::new(StringViewArray::from(vec![
                Some("ada"),
                None,
                Some("grace"),
            ])),
        ],
    )?;
    let target = WriteTarget::directory(&io, &location)?;
    append_batches(&target, &[batch], "main").await?;

    // Append from SQL, to main and to a new branch.
    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    let table = IcebergTableProvider::open(&ctx, &location, TableOptions::default()).await?;
    ctx.register_table("orders", Arc::new(table))?;
    for statement in [
        "INSERT INTO orders VALUES (4, 'edsger'), (5, 'barbara')".to_string(),
        // Maintenance functions name a table directory (or `ns.table` in a catalog session).
        format!("SELECT * FROM iceberg_create_branch('{location}', 'staging')"),
        "INSERT INTO orders.branch_staging VALUES (6, 'staged')".to_string(),
        "SELECT id, customer FROM orders ORDER BY id".to_string(),
        "SELECT count(*) AS on_staging FROM orders.branch_staging".to_string(),
        "SELECT snapshot_id, operation, summary['added-records'] AS added FROM \"orders$snapshots\""
            .to_string(),
    ] {
        println!("{statement}");
        icefloe::sql::sql(&ctx, &statement).await?.show().await?;
    }
    println!("table directory: {location}");
    Ok(())
}
