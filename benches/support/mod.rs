//! Pieces every bench uses: plain DataFusion over a directory of Parquet files (the baseline
//! icefloe is compared with) and running a query to completion. Each bench uses some of them.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::SessionContext;

/// A session with `t` = a DataFusion `ListingTable` over the Parquet files of `data_dir`.
pub async fn listing_ctx(data_dir: &Path) -> SessionContext {
    let ctx = SessionContext::new();
    let url = ListingTableUrl::parse(format!("{}/", data_dir.display())).expect("url");
    let options =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let schema = options
        .infer_schema(&ctx.state(), &url)
        .await
        .expect("schema");
    let config = ListingTableConfig::new(url)
        .with_listing_options(options)
        .with_schema(schema);
    let table = ListingTable::try_new(config).expect("listing table");
    ctx.register_table("t", Arc::new(table)).expect("register");
    ctx
}

/// Runs `sql` to completion; the number of rows.
pub async fn run(ctx: &SessionContext, sql: &str) -> usize {
    let batches = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    batches.iter().map(|b| b.num_rows()).sum()
}
