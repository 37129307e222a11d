//! A coordinator: runs a query over an Iceberg table on datafusion-distributed workers.
//! Planning (metadata, manifests, deletes) happens here; the workers read the data files.
//!
//! ```sh
//! cargo run --features distributed --example distributed_worker -- 127.0.0.1:50051 &
//! cargo run --features distributed --example distributed_worker -- 127.0.0.1:50052 &
//! cargo run --features distributed --example distributed_query -- \
//!     http://127.0.0.1:50051,http://127.0.0.1:50052 /path/to/warehouse/db/table \
//!     "SELECT count(*), sum(id) FROM t"
//! ```

use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use icefloe::distributed::{IcefloeCodec, cluster};
use icefloe::{IcebergTableProvider, TableOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workers, location, query] = args.as_slice() else {
        return Err(
            "usage: distributed_query <worker URLs, comma-separated> <table> <SQL over t>".into(),
        );
    };
    let workers = workers
        .split(',')
        .map(|url| url.parse())
        .collect::<Result<Vec<_>, _>>()?;
    let builder = SessionStateBuilder::new().with_default_features();
    let state = cluster::coordinator(builder, workers, IcefloeCodec::new()).build();
    let ctx = SessionContext::from(state);
    icefloe::sql::register(&ctx);
    let table = IcebergTableProvider::open(&ctx, location, TableOptions::default()).await?;
    ctx.register_table("t", std::sync::Arc::new(table))?;
    ctx.sql(query).await?.show().await?;
    Ok(())
}
