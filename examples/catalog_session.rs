//! A catalog session, as `icefloe sql --catalog` runs one: a new SQLite catalog (PyIceberg's
//! `SqlCatalog` layout), a namespace, a partitioned table created and written from SQL, and the
//! statements that describe it.
//!
//! ```sh
//! cargo run --example catalog_session
//! ```

use datafusion::prelude::SessionContext;
use icefloe::FileIO;
use icefloe::catalog::SqliteCatalog;
use icefloe::io::Relocation;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("icefloe-catalog-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("catalog.db");
    // Tables go under the catalog file's directory.
    SqliteCatalog::create(&db, "demo", FileIO::default())?;

    let ctx = SessionContext::new();
    icefloe::sql::register(&ctx);
    icefloe::session::register_catalog_as_default(&ctx, &db, Relocation::default()).await?;

    for statement in [
        "CREATE SCHEMA db",
        "CREATE TABLE db.events (id BIGINT NOT NULL, kind VARCHAR, at TIMESTAMP WITH TIME ZONE) \
         PARTITION BY (day(at), bucket(4, id)) TBLPROPERTIES ('write.parquet.compression-codec' = 'zstd')",
        "INSERT INTO db.events VALUES (1, 'click', '2026-12-01T10:00:00Z'), \
         (2, 'view', '2026-12-01T11:30:00+01:00'), (3, NULL, '2026-12-02T08:00:00Z')",
        "SHOW TABLES",
        "DESCRIBE db.events",
        "SHOW TBLPROPERTIES db.events",
        "SELECT date_trunc('day', at) AS day, count(*) AS n FROM db.events GROUP BY 1 ORDER BY 1",
        "SELECT operation, summary['added-records'] AS added FROM db.\"events$snapshots\"",
    ] {
        println!("{statement}");
        icefloe::sql::sql(&ctx, statement).await?.show().await?;
    }
    println!(
        "catalog: {} (icefloe sql --catalog {})",
        db.display(),
        db.display()
    );
    Ok(())
}
