//! Reads of the in-repo fixture `tests/fixtures/pyiceberg/wh1/db/orders`: two appends of ten
//! rows (order ids 1..=10, then 11..=20).

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;

use super::*;
use crate::io::Relocation;

const FIRST: i64 = 5_717_840_931_077_797_238;
const SECOND: i64 = 2_307_351_587_894_854_234;
const FIRST_COMMIT_MS: i64 = 1_796_049_758_886;

fn warehouse() -> String {
    format!(
        "{}/tests/fixtures/pyiceberg/wh1",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn relocation() -> Relocation {
    Relocation::new().with_rule("file:///data/lake/wh1", warehouse())
}

async fn orders(ctx: &SessionContext) -> Table {
    let io = FileIO::new(ctx.runtime_env(), relocation());
    Table::load(io, &format!("{}/db/orders", warehouse()))
        .await
        .unwrap()
}

/// `(count(*), sum(order_id))` of a provider.
async fn count_and_sum(ctx: &SessionContext, provider: IcebergTableProvider) -> (i64, i64) {
    ctx.deregister_table("t").unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let batches = ctx
        .sql("SELECT count(*), coalesce(sum(order_id), 0) FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let batch = &batches[0];
    let value = |i: usize| batch.column(i).as_primitive::<Int64Type>().value(0);
    assert_eq!(batch.column(0).len(), 1);
    (value(0), value(1))
}

#[tokio::test]
async fn incremental_reads_exactly_the_second_commit() {
    let ctx = SessionContext::new();
    let table = orders(&ctx).await;
    let provider =
        IcebergTableProvider::incremental(table.clone(), FIRST, SnapshotSelector::Current).unwrap();
    assert_eq!(provider.snapshot_id(), Some(SECOND));
    assert_eq!(
        provider.incremental_range().map(|r| r.snapshot_ids.clone()),
        Some(vec![SECOND])
    );
    assert_eq!(provider.plan_files().await.unwrap().len(), 1);
    assert_eq!(count_and_sum(&ctx, provider).await, (10, 210 - 55));

    let by_branch =
        IcebergTableProvider::incremental(table, FIRST, SnapshotSelector::Ref("main".into()))
            .unwrap();
    assert_eq!(count_and_sum(&ctx, by_branch).await, (10, 155));
}

#[tokio::test]
async fn incremental_from_equal_to_is_empty() {
    let ctx = SessionContext::new();
    let table = orders(&ctx).await;
    let provider =
        IcebergTableProvider::incremental(table, SECOND, SnapshotSelector::SnapshotId(SECOND))
            .unwrap();
    assert!(provider.plan_files().await.unwrap().is_empty());
    assert_eq!(count_and_sum(&ctx, provider).await, (0, 0));
}

#[tokio::test]
async fn incremental_refuses_a_newer_from() {
    let ctx = SessionContext::new();
    let table = orders(&ctx).await;
    let err = IcebergTableProvider::incremental(table, SECOND, SnapshotSelector::SnapshotId(FIRST))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[tokio::test]
async fn time_travel_reads_each_commit() {
    let ctx = SessionContext::new();
    let location = format!("{}/db/orders", warehouse());
    let open = |options: TableOptions| {
        let (ctx, location) = (&ctx, &location);
        async move {
            let options = options.with_relocation_rules(relocation());
            IcebergTableProvider::open(ctx, location, options)
                .await
                .unwrap()
        }
    };
    let first_day = open(TableOptions::default().as_of_timestamp_ms(FIRST_COMMIT_MS + 1)).await;
    assert_eq!(first_day.snapshot_id(), Some(FIRST));
    assert_eq!(count_and_sum(&ctx, first_day).await, (10, 55));
    let by_id = open(TableOptions::default().with_snapshot_id(FIRST)).await;
    assert_eq!(count_and_sum(&ctx, by_id).await, (10, 55));
    let main = open(TableOptions::default().with_ref("main")).await;
    assert_eq!(count_and_sum(&ctx, main).await, (20, 210));

    let too_early = IcebergTableProvider::open(
        &ctx,
        &location,
        TableOptions::default()
            .with_relocation_rules(relocation())
            .as_of_timestamp_ms(FIRST_COMMIT_MS - 1),
    )
    .await
    .unwrap_err();
    assert!(matches!(too_early, Error::NotFound { .. }), "{too_early}");
    assert!(
        too_early.to_string().contains("no snapshot as of"),
        "{too_early}"
    );
}
