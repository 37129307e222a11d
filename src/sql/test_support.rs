//! Fixtures shared by the SQL tests: the in-repo PyIceberg warehouse `wh1` (`db.orders`: two
//! appends of ten rows; `db.refs`: tags `v1`, `v2` and branches `main`, `dev`, `audit`) read
//! through relocation, and a one-number query helper.

use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::Result as DFResult;
use datafusion::prelude::SessionContext;

use crate::io::Relocation;
use crate::{IcebergTableProvider, TableOptions};

/// `db.orders`: the first append (order ids 1..=10).
pub(crate) const ORDERS_FIRST: i64 = 5_717_840_931_077_797_238;
/// `db.orders`: the second append (order ids 11..=20), current.
pub(crate) const ORDERS_SECOND: i64 = 2_307_351_587_894_854_234;
/// `db.orders`: commit time of the first append.
pub(crate) const ORDERS_FIRST_MS: i64 = 1_796_049_758_886;
/// `db.orders`: commit time of the second append.
pub(crate) const ORDERS_SECOND_MS: i64 = 1_796_049_758_921;
/// `db.refs`: the snapshot of tag `v1` and branch `audit` (10 rows, sum(id) 45).
pub(crate) const REFS_V1: i64 = 7_019_671_183_757_973_925;

/// The warehouse directory.
pub(crate) fn warehouse() -> String {
    format!(
        "{}/tests/fixtures/pyiceberg/wh1",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Where the warehouse was written, as its metadata names it.
pub(crate) const WRITTEN_AT: &str = "file:///data/lake/wh1";

/// Reads the warehouse's paths from the repository.
pub(crate) fn relocation() -> Relocation {
    Relocation::new().with_rule(WRITTEN_AT, warehouse())
}

/// A session with icefloe registered and `db.orders`, `db.refs` registered as `orders`, `refs`.
pub(crate) async fn session() -> SessionContext {
    let ctx = SessionContext::new();
    super::register(&ctx);
    for name in ["orders", "refs"] {
        let options = TableOptions::default().with_relocation_rules(relocation());
        let location = format!("{}/db/{name}", warehouse());
        let provider = IcebergTableProvider::open(&ctx, &location, options)
            .await
            .unwrap();
        ctx.register_table(name, Arc::new(provider)).unwrap();
    }
    ctx
}

/// Runs `query` through [`super::sql`] and returns its one row of integers.
pub(crate) async fn row(ctx: &SessionContext, query: &str) -> DFResult<Vec<i64>> {
    let batches = super::sql(ctx, query).await?.collect().await?;
    let batch = &batches[0];
    assert_eq!(batch.num_rows(), 1, "{query}");
    Ok(batch
        .columns()
        .iter()
        .map(|c| {
            let c = datafusion::arrow::compute::cast(c, &DataType::Int64).unwrap();
            c.as_primitive::<Int64Type>().value(0)
        })
        .collect())
}

/// The error of `query` as text (with its context chain).
pub(crate) async fn error(ctx: &SessionContext, query: &str) -> String {
    match super::sql(ctx, query).await {
        Ok(df) => match df.collect().await {
            Ok(_) => panic!("{query} succeeded"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}
