//! Catalogs and transactions: create a table in a SQLite catalog (the PyIceberg / JdbcCatalog
//! layout), append rows, tag the snapshot and set a property in one atomic commit, and read
//! the result back with SQL.
//!
//! ```sh
//! cargo run --example transaction
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Int64Array, RecordBatch, StringViewArray};
use datafusion::prelude::SessionContext;
use icefloe::catalog::{Catalog, Namespace, SqliteCatalog, TableIdent};
use icefloe::spec::{NestedField, PrimitiveType, Schema};
use icefloe::to_arrow::schema_to_arrow;
use icefloe::transaction::Transaction;
use icefloe::write::AppendWriter;
use icefloe::{FileIO, IcebergTableProvider, TableCreation, TableOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("icefloe-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    // A catalog is any `Catalog`: here a new SQLite database with its warehouse beside it.
    let catalog: Arc<dyn Catalog> = Arc::new(
        SqliteCatalog::create(dir.join("catalog.db"), "demo", FileIO::default())?
            .with_warehouse(dir.join("warehouse").display().to_string()),
    );
    catalog
        .create_namespace(&Namespace::new(["db"])?, BTreeMap::new())
        .await?;
    let ident = TableIdent::parse_dotted("db.events")?;
    let schema = Schema::new(
        0,
        vec![
            NestedField::required(1, "id", PrimitiveType::Long),
            NestedField::optional(2, "kind", PrimitiveType::String),
        ],
    );
    let table = catalog
        .create_table(&ident, &TableCreation::new(schema))
        .await?;

    // Data files are written first (nothing is committed yet) ...
    let arrow = Arc::new(schema_to_arrow(table.metadata().current_schema())?);
    let batch = RecordBatch::try_new(
        arrow,
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3])),
            Arc::new(StringViewArray::from(vec!["click", "view", "click"])),
        ],
    )?;
    let mut writer = AppendWriter::new(
        table.io(),
        table.metadata(),
        table.metadata().current_schema(),
    )?;
    writer.write(&batch).await?;
    let files = writer.finish().await?;

    // ... then one transaction commits an append, a tag on the new snapshot and a property:
    // one new metadata version, or none (a lost race is retried on the new version).
    let committed = Transaction::on(Arc::clone(&catalog), ident.clone(), table)
        .fast_append(files)
        .create_tag("first-load", None, None)
        .set_properties([("owner", "analytics")])
        .commit()
        .await?;
    let metadata = committed.metadata();
    println!(
        "committed {}: snapshot {:?}, tag first-load -> {}, owner = {:?}",
        committed.metadata_location(),
        metadata.current_snapshot_id,
        metadata.refs["first-load"].snapshot_id,
        metadata.property("owner")
    );

    // Any reader sees it: here DataFusion, through the table's current metadata file.
    let ctx = SessionContext::new();
    let provider =
        IcebergTableProvider::open(&ctx, committed.metadata_location(), TableOptions::default())
            .await?;
    ctx.register_table("events", Arc::new(provider))?;
    ctx.sql("SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind")
        .await?
        .show()
        .await?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
