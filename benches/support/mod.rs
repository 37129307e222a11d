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
    let url = ListingTableUrl::parse(format!("{}/", data_dir.display())).expect("url");
    listing_ctx_of(vec![url]).await
}

/// A session with `t` = a DataFusion `ListingTable` over the Parquet files `files` (paths).
pub async fn listing_ctx_of_files(files: &[String]) -> SessionContext {
    let urls = files
        .iter()
        .map(|f| ListingTableUrl::parse(f).expect("url"))
        .collect();
    listing_ctx_of(urls).await
}

/// A session with `t` = a `ListingTable` over the Parquet files under `urls` (the schema the
/// first one's files give).
async fn listing_ctx_of(urls: Vec<ListingTableUrl>) -> SessionContext {
    let ctx = SessionContext::new();
    let options =
        ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let schema = options
        .infer_schema(&ctx.state(), &urls[0])
        .await
        .expect("schema");
    let config = ListingTableConfig::new_with_multi_paths(urls)
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

/// Runs `sql` to completion; its rows as text (for comparing answers).
pub async fn rows_text(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .expect("format")
        .to_string()
}
