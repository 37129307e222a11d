//! Round trips of icefloe's plan nodes through datafusion-proto with [`IcefloeCodec`], and the
//! nodes it refuses.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion::prelude::SessionContext;
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::physical_plan::DefaultPhysicalExtensionCodec;

use super::IcefloeCodec;
use crate::scan::count::{CountSource, RowCountExec};
use crate::scan::plan::PlanStats;
use crate::sql::test_support::{relocation, warehouse};
use crate::{IcebergTableProvider, TableOptions};

fn stats() -> PlanStats {
    PlanStats {
        manifests_total: 2_000,
        manifests_pruned: 998,
        data_files_total: 7,
        data_files_pruned_by_partition: 3,
        data_files_pruned_by_metrics: 2,
        data_files_scanned: 2,
        delete_files_matched: 1,
        bytes_scanned: 123_456,
        planning_time: std::time::Duration::from_micros(1_234),
    }
}

fn round_trip(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let bytes = physical_plan_to_bytes_with_extension_codec(plan, &IcefloeCodec).unwrap();
    let ctx = SessionContext::new();
    physical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &IcefloeCodec).unwrap()
}

fn parts(plan: &Arc<dyn ExecutionPlan>) -> (usize, ArrowSchema, PlanStats, CountSource) {
    let node = plan
        .downcast_ref::<RowCountExec>()
        .expect("an IcebergRowCountExec");
    let (rows, schema, stats, source) = node.parts();
    (rows, schema.as_ref().clone(), stats.clone(), source)
}

#[tokio::test]
async fn a_row_count_travels_with_its_rows_schema_and_planning_counts() {
    let field_id = |id: &str| {
        [("PARQUET:field_id".to_string(), id.to_string())]
            .into_iter()
            .collect()
    };
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, false).with_metadata(field_id("1")),
        Field::new("name", DataType::Utf8View, true).with_metadata(field_id("2")),
    ]));
    for node in [
        RowCountExec::rows(1_000_003, &stats()),
        RowCountExec::empty(Arc::clone(&schema), &stats()),
    ] {
        let plan: Arc<dyn ExecutionPlan> = Arc::new(node);
        let back = round_trip(Arc::clone(&plan));
        assert_eq!(parts(&back), parts(&plan));
        assert_eq!(
            displayable(back.as_ref()).one_line().to_string(),
            displayable(plan.as_ref()).one_line().to_string()
        );
        // The planning counts are the decoded node's metrics again.
        let metrics = back.metrics().unwrap().to_string();
        assert!(metrics.contains("manifests_pruned=998"), "{metrics}");
        let ctx = SessionContext::new();
        let rows: usize = collect(back, ctx.task_ctx())
            .await
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(rows, parts(&plan).0);
    }
}

#[tokio::test]
async fn bytes_that_are_not_a_node_are_errors_naming_them() {
    let plan: Arc<dyn ExecutionPlan> = Arc::new(RowCountExec::empty(
        Arc::new(ArrowSchema::new(vec![Field::new(
            "a",
            DataType::Int32,
            true,
        )])),
        &stats(),
    ));
    let mut payload = Vec::new();
    let converter = datafusion_proto::physical_plan::DefaultPhysicalProtoConverter {};
    use datafusion_proto::physical_plan::PhysicalExtensionCodec;
    IcefloeCodec
        .try_encode(plan, &mut payload, &converter)
        .unwrap();
    let ctx = SessionContext::new();
    let decode = |bytes: &[u8]| IcefloeCodec.try_decode(bytes, &[], &ctx.task_ctx(), &converter);
    assert!(decode(&payload).is_ok());
    // Every truncation, a longer buffer, another format and an unknown tag: errors, no panic.
    for cut in 0..payload.len() {
        let err = decode(&payload[..cut]).unwrap_err().to_string();
        assert!(err.contains("icefloe plan node"), "{cut}: {err}");
    }
    let mut longer = payload.clone();
    longer.push(0);
    assert!(
        decode(&longer)
            .unwrap_err()
            .to_string()
            .contains("left over")
    );
    let mut other = payload.clone();
    other[0] = 9;
    assert!(
        decode(&other)
            .unwrap_err()
            .to_string()
            .contains("format version 9")
    );
    other[0] = payload[0];
    other[1] = 200;
    assert!(
        decode(&other)
            .unwrap_err()
            .to_string()
            .contains("node tag 200")
    );
}

/// An icefloe scan must never travel as DataFusion's plain Parquet scan: decoded, it would
/// read back the rows its position deletes remove. Both codecs refuse it (icefloe's until it
/// carries the scan whole).
#[tokio::test]
async fn a_scan_with_position_deletes_is_refused_not_sent_as_a_plain_parquet_scan() {
    let ctx = SessionContext::new();
    let location = format!("{}/db/deletes_mor", warehouse());
    let options = TableOptions::default().with_relocation_rules(relocation());
    let provider = IcebergTableProvider::open(&ctx, &location, options)
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let plan = ctx
        .sql("SELECT * FROM t")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let err = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &IcefloeCodec)
        .unwrap_err()
        .to_string();
    assert!(err.contains("DataSourceExec"), "{err}");
    assert!(err.contains("position deletes"), "{err}");
    let codec = DefaultPhysicalExtensionCodec {};
    assert!(physical_plan_to_bytes_with_extension_codec(plan, &codec).is_err());
}
