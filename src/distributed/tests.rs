//! Round trips of icefloe's plan nodes through datafusion-proto with [`IcefloeCodec`]: every
//! decoded plan runs in another session (its own runtime, no store registered) and must give
//! the rows the original gives; and the bytes that are refused.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::physical_plan::{
    DefaultPhysicalExtensionCodec, DefaultPhysicalProtoConverter, PhysicalExtensionCodec,
};

use super::IcefloeCodec;
use crate::io::{Relocation, StorageProperties};
use crate::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use crate::scan::count::{CountSource, RowCountExec};
use crate::scan::plan::PlanStats;
use crate::spec::SnapshotSelector;
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

fn encode(plan: &Arc<dyn ExecutionPlan>) -> Vec<u8> {
    physical_plan_to_bytes_with_extension_codec(Arc::clone(plan), &IcefloeCodec::new())
        .unwrap()
        .to_vec()
}

/// `bytes` decoded in a new session: a runtime of its own, where no table was opened.
fn decode_elsewhere(bytes: &[u8]) -> Arc<dyn ExecutionPlan> {
    let ctx = SessionContext::new();
    physical_plan_from_bytes_with_extension_codec(bytes, &ctx.task_ctx(), &IcefloeCodec::new())
        .unwrap()
}

fn round_trip(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    decode_elsewhere(&encode(plan))
}

fn parts(plan: &Arc<dyn ExecutionPlan>) -> (usize, ArrowSchema, PlanStats, CountSource) {
    let node = plan
        .downcast_ref::<RowCountExec>()
        .expect("an IcebergRowCountExec");
    let (rows, schema, stats, source) = node.parts();
    (rows, schema.as_ref().clone(), stats.clone(), source)
}

/// The rows of `batches`, one line each, sorted.
fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let shown = pretty_format_batches(batches).unwrap().to_string();
    let mut rows: Vec<String> = shown
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(str::to_string)
        .collect();
    rows.sort();
    rows
}

async fn run(plan: Arc<dyn ExecutionPlan>) -> Vec<String> {
    let ctx = SessionContext::new();
    sorted_rows(&collect(plan, ctx.task_ctx()).await.unwrap())
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
        let back = round_trip(&plan);
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

/// The physical plan of `sql` in `ctx`.
async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

/// A session that plans like a coordinator with several workers: three partitions, every
/// file split into byte ranges.
fn coordinator() -> SessionContext {
    let mut config = SessionConfig::new().with_target_partitions(3);
    config.options_mut().optimizer.repartition_file_min_size = 0;
    let ctx = SessionContext::new_with_config(config);
    crate::sql::register(&ctx);
    ctx
}

/// A table of the PyIceberg warehouse (`wh1`).
async fn wh1(ctx: &SessionContext, table: &str) -> IcebergTableProvider {
    let location = format!("{}/db/{table}", warehouse());
    let options = TableOptions::default().with_relocation_rules(relocation());
    IcebergTableProvider::open(ctx, &location, options)
        .await
        .unwrap()
}

/// A table of the external fixtures (written by Impala, Spark, DuckDB...), relocated as
/// `expected_answers.json` says.
async fn external(ctx: &SessionContext, table: &str) -> IcebergTableProvider {
    let dir = format!("{}/tests/fixtures/external", env!("CARGO_MANIFEST_DIR"));
    let answers: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{dir}/expected_answers.json")).unwrap(),
    )
    .unwrap();
    let entry = &answers[table];
    let mut rules = Relocation::new();
    for pair in entry["relocate"].as_array().unwrap() {
        let to = pair[1].as_str().unwrap();
        rules = rules.with_rule(pair[0].as_str().unwrap(), format!("{dir}/{to}"));
    }
    let metadata = format!(
        "{dir}/{table}/{}",
        entry["latest_metadata_file"].as_str().unwrap()
    );
    let options = TableOptions::default().with_relocation_rules(rules);
    IcebergTableProvider::open(ctx, &metadata, options)
        .await
        .unwrap()
}

/// Every query plans on a coordinator, travels, and runs in another session with the same
/// rows: partitioned tables, evolved schemas and partition specs, files without field ids
/// (name mapping), v3 defaults, position deletes, deletion vectors, equality deletes (also
/// with positions), row identities (`_file`, `_pos`), time travel, joins and aggregates.
#[tokio::test]
async fn every_scan_reads_the_same_rows_after_travelling() {
    let ctx = coordinator();
    for table in [
        "orders",
        "part_evo",
        "schema_evo",
        "added_files",
        "deletes_mor",
        "deletes_eq",
        "nested",
        "part_bucket_uuid",
        "part_identity_bool",
    ] {
        ctx.register_table(table, Arc::new(wh1(&ctx, table).await))
            .unwrap();
    }
    for table in [
        "impala_v3_deletion_vectors",
        "impala_v2_delete_both_eq_and_pos",
        "impala_v2_delete_equality_partition_evolution",
        "impala_v3_default_value",
        "impala_legacy_partition_schema_evolution",
        "impala_multiple_storage_locations/iceberg_multiple_storage_locations",
    ] {
        let name = table.split('/').next().unwrap();
        ctx.register_table(name, Arc::new(external(&ctx, table).await))
            .unwrap();
    }
    // Metadata tables, now and at the first snapshot, and a data table at its first snapshot.
    let refs = wh1(&ctx, "refs").await.table();
    let first = refs.metadata().snapshots[0].snapshot_id;
    for kind in MetadataTableKind::ALL {
        let now = IcebergMetadataTable::try_new(refs.clone(), kind, SnapshotSelector::Current);
        ctx.register_table(format!("refs_{}", kind.name()), Arc::new(now.unwrap()))
            .unwrap();
    }
    let deletes = wh1(&ctx, "deletes_mor").await.table();
    let delete_files = IcebergMetadataTable::try_new(
        deletes,
        MetadataTableKind::DeleteFiles,
        SnapshotSelector::Current,
    );
    ctx.register_table("deletes_mor_delete_files", Arc::new(delete_files.unwrap()))
        .unwrap();
    let at = SnapshotSelector::SnapshotId(first);
    let files_then = IcebergMetadataTable::try_new(refs.clone(), MetadataTableKind::Files, at);
    ctx.register_table("refs_files_then", Arc::new(files_then.unwrap()))
        .unwrap();
    let location = format!("{}/db/refs", warehouse());
    let options = TableOptions::default()
        .with_relocation_rules(relocation())
        .with_snapshot_id(first);
    let then = IcebergTableProvider::open(&ctx, &location, options)
        .await
        .unwrap();
    ctx.register_table("refs_then", Arc::new(then)).unwrap();
    let with_ids = wh1(&ctx, "deletes_mor").await.with_row_ids().unwrap();
    ctx.register_table("deletes_mor_ids", Arc::new(with_ids))
        .unwrap();
    let queries = [
        "SELECT * FROM orders",
        "SELECT * FROM orders WHERE order_id > 3",
        "SELECT * FROM part_evo",
        "SELECT * FROM schema_evo",
        "SELECT * FROM added_files",
        "SELECT * FROM deletes_mor",
        "SELECT * FROM deletes_eq",
        "SELECT * FROM deletes_eq WHERE id > 10",
        "SELECT * FROM nested",
        "SELECT * FROM part_bucket_uuid",
        "SELECT * FROM part_identity_bool",
        "SELECT * FROM impala_v3_deletion_vectors",
        "SELECT * FROM impala_v2_delete_both_eq_and_pos",
        "SELECT * FROM impala_v2_delete_equality_partition_evolution",
        "SELECT * FROM impala_v3_default_value",
        "SELECT * FROM impala_legacy_partition_schema_evolution",
        "SELECT * FROM impala_multiple_storage_locations",
        "SELECT * FROM deletes_mor_ids",
        "SELECT _pos, id FROM deletes_mor_ids WHERE _pos > 1",
        "SELECT count(*), min(id), max(id) FROM deletes_eq",
        "SELECT a.id FROM deletes_eq a JOIN deletes_mor b ON a.id = b.id ORDER BY a.id LIMIT 5",
    ];
    let relations = MetadataTableKind::ALL.map(|k| format!("SELECT * FROM refs_{}", k.name()));
    let more = [
        "SELECT * FROM refs_then",
        "SELECT * FROM refs_files_then",
        "SELECT * FROM deletes_mor_delete_files",
        "SELECT file_path, record_count FROM refs_files WHERE record_count > 1 LIMIT 3",
    ];
    let queries = queries
        .iter()
        .map(|q| q.to_string())
        .chain(relations)
        .chain(more.map(String::from));
    for query in queries {
        let query = query.as_str();
        let plan = plan(&ctx, query).await;
        let back = round_trip(&plan);
        assert_eq!(
            displayable(back.as_ref()).indent(true).to_string(),
            displayable(plan.as_ref()).indent(true).to_string(),
            "{query}"
        );
        let expected = run(Arc::clone(&plan)).await;
        // The refs table has no delete files and no statistics files.
        let empty = [
            "refs_delete_files",
            "refs_all_delete_files",
            "refs_statistics",
        ];
        if !empty.iter().any(|t| query.ends_with(t)) {
            assert!(!expected.is_empty(), "{query}: no rows to compare");
        }
        assert_eq!(run(back).await, expected, "{query}");
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
    let converter = DefaultPhysicalProtoConverter {};
    let codec = IcefloeCodec::new();
    codec.try_encode(plan, &mut payload, &converter).unwrap();
    let ctx = SessionContext::new();
    let decode = |bytes: &[u8]| codec.try_decode(bytes, &[], &ctx.task_ctx(), &converter);
    assert!(decode(&payload).is_ok());
    // Every truncation, a longer buffer, another format: errors naming the bytes, no panic.
    for cut in 0..payload.len() {
        let err = decode(&payload[..cut]).unwrap_err().to_string();
        assert!(err.contains("icefloe plan node"), "{cut}: {err}");
    }
    let mut longer = payload.clone();
    longer.push(0);
    let err = decode(&longer).unwrap_err().to_string();
    assert!(err.contains("left over"), "{err}");
    let mut other = payload.clone();
    other[0] = 9;
    let err = decode(&other).unwrap_err().to_string();
    assert!(err.contains("format version 9"), "{err}");
    // A message of no known kind (an empty one).
    let err = decode(&[payload[0], 0]).unwrap_err().to_string();
    assert!(err.contains("no known kind"), "{err}");
}

/// A scan's bytes cut anywhere, or with any byte changed, never panic the decoder and never
/// decode into a scan with fewer files or fewer deleted rows than it had: a change is either
/// refused or reads the rows of a plan that says so.
#[tokio::test]
async fn a_damaged_scan_is_refused_never_read_short() {
    let ctx = coordinator();
    ctx.register_table("t", Arc::new(wh1(&ctx, "deletes_mor").await))
        .unwrap();
    let plan = plan(&ctx, "SELECT * FROM t").await;
    let scan = find(&plan, "DataSourceExec");
    let converter = DefaultPhysicalProtoConverter {};
    let codec = IcefloeCodec::new();
    let mut payload = Vec::new();
    codec.try_encode(scan, &mut payload, &converter).unwrap();
    let other = SessionContext::new();
    let decode = |bytes: &[u8]| codec.try_decode(bytes, &[], &other.task_ctx(), &converter);
    assert!(decode(&payload).is_ok());
    for cut in 0..payload.len() {
        let err = decode(&payload[..cut]).unwrap_err().to_string();
        assert!(err.contains("icefloe plan node"), "{cut}: {err}");
    }
}

/// The first node named `name` in `plan`, depth first.
fn find(plan: &Arc<dyn ExecutionPlan>, name: &str) -> Arc<dyn ExecutionPlan> {
    fn search(plan: &Arc<dyn ExecutionPlan>, name: &str) -> Option<Arc<dyn ExecutionPlan>> {
        if plan.name() == name {
            return Some(Arc::clone(plan));
        }
        plan.children().into_iter().find_map(|c| search(c, name))
    }
    search(plan, name).unwrap_or_else(|| panic!("no {name} in the plan"))
}

/// A worker names a missing file as the coordinator would: as the metadata writes it, and
/// where relocation looked for it.
#[tokio::test]
async fn a_missing_file_is_named_on_the_worker_as_on_the_coordinator() {
    let copy = tempfile::tempdir().unwrap();
    let source = format!("{}/db/orders", warehouse());
    let copied = copy.path().join("orders");
    copy_dir(std::path::Path::new(&source), &copied);
    let data = copied.join("data/order_ts_day=2024-01-01");
    let lost = std::fs::read_dir(&data)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&lost).unwrap();
    let ctx = coordinator();
    let options = TableOptions::default()
        .with_relocation("file:///data/lake/wh1/db/orders", copied.to_str().unwrap());
    let provider = IcebergTableProvider::open(&ctx, copied.to_str().unwrap(), options)
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let plan = plan(&ctx, "SELECT * FROM t").await;
    let name = lost.file_name().unwrap().to_str().unwrap();
    let here = collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap_err()
        .to_string();
    let there = collect(round_trip(&plan), SessionContext::new().task_ctx())
        .await
        .unwrap_err()
        .to_string();
    let recorded =
        format!("file:///data/lake/wh1/db/orders/data/order_ts_day=2024-01-01/{name} (read as");
    assert!(here.contains(&recorded), "{here}");
    assert!(there.contains(&recorded), "{there}");
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        match entry.file_type().unwrap().is_dir() {
            true => copy_dir(&entry.path(), &target),
            false => {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}

/// Storage credentials stay on the coordinator unless the embedder lets them travel; where a
/// store is (endpoint, region) always travels.
#[tokio::test]
async fn credentials_travel_only_when_allowed() {
    let ctx = coordinator();
    let storage = StorageProperties::from_pairs([
        ("s3.endpoint", "http://127.0.0.1:9"),
        ("s3.access-key-id", "AKIDEXAMPLEKEYID"),
        ("s3.secret-access-key", "very-secret-value"),
    ]);
    let location = format!("{}/db/orders", warehouse());
    let options = TableOptions::default()
        .with_relocation_rules(relocation())
        .with_storage(storage);
    let provider = IcebergTableProvider::open(&ctx, &location, options)
        .await
        .unwrap();
    ctx.register_table("t", Arc::new(provider)).unwrap();
    let plan = plan(&ctx, "SELECT * FROM t").await;
    let contains =
        |bytes: &[u8], text: &str| bytes.windows(text.len()).any(|w| w == text.as_bytes());
    let plain = encode(&plan);
    assert!(contains(&plain, "http://127.0.0.1:9"));
    assert!(!contains(&plain, "very-secret-value"));
    assert!(!contains(&plain, "AKIDEXAMPLEKEYID"));
    let allowed = physical_plan_to_bytes_with_extension_codec(
        Arc::clone(&plan),
        &IcefloeCodec::new().with_credentials(),
    )
    .unwrap();
    assert!(contains(&allowed, "very-secret-value"));
}

/// A worker that cannot reach the store a scan reads says which store, when it decodes.
#[tokio::test]
async fn a_store_the_worker_cannot_build_is_an_error_naming_it() {
    let ctx = coordinator();
    ctx.register_table("t", Arc::new(wh1(&ctx, "orders").await))
        .unwrap();
    let plan = plan(&ctx, "SELECT * FROM t").await;
    let scan = find(&plan, "DataSourceExec");
    let converter = DefaultPhysicalProtoConverter {};
    let mut payload = Vec::new();
    IcefloeCodec::new()
        .try_encode(scan, &mut payload, &converter)
        .unwrap();
    // The same node pointing at a store of a scheme no one builds.
    let text = String::from_utf8_lossy(&payload).to_string();
    assert!(text.contains("file://"), "the scan names its store");
    let mut node: super::wire::Node = super::wire::from_bytes(&payload).unwrap();
    let Some(super::wire::Kind::Scan(scan)) = &mut node.kind else {
        panic!("a scan")
    };
    scan.object_store_url = "hdfs://namenode:8020".into();
    scan.origin.as_mut().unwrap().store = "hdfs://namenode:8020".into();
    let mut damaged = Vec::new();
    super::wire::to_bytes(&node, &mut damaged);
    let other = SessionContext::new();
    let err = IcefloeCodec::new()
        .try_decode(&damaged, &[], &other.task_ctx(), &converter)
        .unwrap_err()
        .to_string();
    assert!(err.contains("hdfs://namenode:8020"), "{err}");
}

/// Without icefloe's codec an icefloe scan cannot be sent at all: DataFusion's default codec
/// refuses it rather than encoding a plain Parquet scan that would read deleted rows back.
#[tokio::test]
async fn the_default_codec_refuses_an_icefloe_scan() {
    let ctx = coordinator();
    ctx.register_table("t", Arc::new(wh1(&ctx, "deletes_mor").await))
        .unwrap();
    let plan = plan(&ctx, "SELECT * FROM t").await;
    let codec = DefaultPhysicalExtensionCodec {};
    assert!(physical_plan_to_bytes_with_extension_codec(plan, &codec).is_err());
}

/// What a file of a scan without deletes costs on the wire (the bound: 300 bytes).
#[tokio::test]
async fn a_file_without_deletes_costs_under_300_bytes() {
    let ctx = coordinator();
    ctx.register_table("t", Arc::new(wh1(&ctx, "orders").await))
        .unwrap();
    let plan = plan(&ctx, "SELECT * FROM t").await;
    let scan = find(&plan, "DataSourceExec");
    let (one, files) = scan_bytes(&scan, 1);
    let (many, _) = scan_bytes(&scan, 1_000);
    let per_file = (many - one) as f64 / (999 * files) as f64;
    assert!(per_file < 300.0, "{per_file} bytes per file");
}

/// Not a check: the time to encode and decode a scan of 100,000 files (`cargo test --features
/// distributed --lib distributed::tests::a_plan -- --ignored --nocapture`; use `--release`
/// for figures that mean anything).
#[tokio::test]
#[ignore]
async fn a_plan_of_100_000_files_encodes_and_decodes() {
    let ctx = coordinator();
    ctx.register_table("t", Arc::new(wh1(&ctx, "orders").await))
        .unwrap();
    let plan = plan(&ctx, "SELECT * FROM t").await;
    let scan = find(&plan, "DataSourceExec");
    let files = scan_bytes(&scan, 1).1;
    let big = bigger(&scan, 100_000 / files);
    let started = std::time::Instant::now();
    let bytes = encode(&big);
    let encoded = started.elapsed();
    let started = std::time::Instant::now();
    let back = decode_elsewhere(&bytes);
    let decoded = started.elapsed();
    println!(
        "{} files: {} bytes ({:.0} per file), encode {encoded:?}, decode {decoded:?}",
        100_000 / files * files,
        bytes.len(),
        bytes.len() as f64 / (100_000 / files * files) as f64
    );
    assert_eq!(back.name(), "DataSourceExec");
}

/// The encoded size of `scan` with its file groups repeated `times`, and its file count.
fn scan_bytes(scan: &Arc<dyn ExecutionPlan>, times: usize) -> (usize, usize) {
    let files = config_of(scan).file_groups.iter().map(|g| g.len()).sum();
    (encode(&bigger(scan, times)).len(), files)
}

fn config_of(
    scan: &Arc<dyn ExecutionPlan>,
) -> &datafusion::datasource::physical_plan::FileScanConfig {
    use datafusion::datasource::source::DataSourceExec;
    let exec = scan.downcast_ref::<DataSourceExec>().unwrap();
    exec.data_source().downcast_ref().unwrap()
}

/// `scan` with its file groups repeated `times`.
fn bigger(scan: &Arc<dyn ExecutionPlan>, times: usize) -> Arc<dyn ExecutionPlan> {
    use datafusion::datasource::physical_plan::FileScanConfigBuilder;
    use datafusion::datasource::source::DataSourceExec;
    let config = config_of(scan);
    let groups = (0..times)
        .flat_map(|_| config.file_groups.iter().cloned())
        .collect();
    let bigger = FileScanConfigBuilder::from(config.clone())
        .with_file_groups(groups)
        .build();
    DataSourceExec::from_data_source(bigger)
}

/// A table provider of a logical plan travels as the metadata file it read and what it reads
/// of it: decoded in another session, it reads the same rows (now, at a snapshot,
/// incrementally, and a metadata relation); one reading row identities is refused, and bytes
/// that are not a provider are errors naming it.
#[tokio::test]
async fn table_providers_travel_in_logical_plans() {
    use super::IcefloeLogicalCodec;
    use datafusion::catalog::TableProvider;
    use datafusion::common::TableReference;
    use datafusion_proto::logical_plan::LogicalExtensionCodec;

    let ctx = coordinator();
    let codec = IcefloeLogicalCodec::default();
    let name = TableReference::bare("t");
    let refs = wh1(&ctx, "refs").await;
    let snapshots = refs.table().metadata().snapshots.clone();
    let (first, last) = (
        snapshots[0].snapshot_id,
        snapshots[snapshots.len() - 1].snapshot_id,
    );
    let table = refs.table();
    let providers: Vec<Arc<dyn TableProvider>> = vec![
        Arc::new(refs.clone()),
        Arc::new(refs.at(SnapshotSelector::SnapshotId(first)).unwrap()),
        Arc::new(
            IcebergTableProvider::incremental(
                table.clone(),
                first,
                SnapshotSelector::SnapshotId(last),
            )
            .unwrap(),
        ),
        Arc::new(
            IcebergMetadataTable::try_new(
                table,
                MetadataTableKind::Files,
                SnapshotSelector::Current,
            )
            .unwrap(),
        ),
    ];
    for provider in providers {
        let mut bytes = Vec::new();
        codec
            .try_encode_table_provider(&name, Arc::clone(&provider), &mut bytes)
            .unwrap();
        let other = SessionContext::new();
        let decoded = codec
            .try_decode_table_provider(&bytes, &name, provider.schema(), &other.task_ctx())
            .unwrap();
        assert_eq!(decoded.schema(), provider.schema());
        let here = SessionContext::new();
        here.register_table("t", provider).unwrap();
        other.register_table("t", decoded).unwrap();
        let read = |ctx: SessionContext| async move {
            sorted_rows(
                &ctx.sql("SELECT * FROM t")
                    .await
                    .unwrap()
                    .collect()
                    .await
                    .unwrap(),
            )
        };
        let expected = read(here).await;
        assert!(!expected.is_empty());
        assert_eq!(read(other).await, expected);
        for cut in 0..bytes.len() {
            let err = codec
                .try_decode_table_provider(
                    &bytes[..cut],
                    &name,
                    Arc::new(ArrowSchema::empty()),
                    &SessionContext::new().task_ctx(),
                )
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("icefloe plan node") || err.contains("table provider"),
                "{cut}: {err}"
            );
        }
    }
    let with_ids: Arc<dyn TableProvider> = Arc::new(refs.with_row_ids().unwrap());
    let err = codec
        .try_encode_table_provider(&name, with_ids, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("DELETE, UPDATE and MERGE"), "{err}");
}

/// A failed distributed INSERT finds every file its writers wrote by their names' token,
/// also in partition directories and those no worker reported, and nothing else.
#[tokio::test]
async fn a_failed_statement_finds_its_files_by_their_token() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let files = [
        "data/abc123-0-u1.parquet",
        "data/k=1/abc123-1-u2.parquet",
        "data/k=1/x=2/abc123-0-u3.parquet",
        "data/k=1/other-0-u4.parquet",
        "data/abc1234-0-u5.parquet",
        "metadata/abc123-0-u6.parquet",
    ];
    for file in files {
        let path = table.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }
    let io = crate::io::FileIO::default();
    let location = table.to_str().unwrap();
    let mut found = super::write::statement_files(&io, location, "abc123-").await;
    found.sort();
    let mut expected: Vec<String> = files[..3]
        .iter()
        .map(|f| format!("{location}/{f}"))
        .collect();
    expected.sort();
    assert_eq!(found, expected);
}

/// A session that plans a statement's writes as a coordinator does ([`super::write::ParallelWrites`]).
fn writing_coordinator() -> SessionContext {
    let state = datafusion::execution::SessionStateBuilder::new()
        .with_default_features()
        .with_config(SessionConfig::new().with_target_partitions(3))
        .with_physical_optimizer_rule(Arc::new(super::write::ParallelWrites))
        .build();
    let ctx = SessionContext::new_with_state(state);
    crate::sql::register(&ctx);
    ctx
}

/// A DELETE's writers travel (the whole subtree under the commit node, decoded in a session
/// where the table was never opened) and write there; the commit node commits their files
/// once, and the table reads as the same DELETE leaves it in one process.
#[tokio::test]
async fn a_row_change_s_writers_travel_and_their_files_are_committed_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for (name, ctx) in [
        ("one", SessionContext::new()),
        ("split", writing_coordinator()),
    ] {
        crate::sql::register(&ctx);
        let at = dir.path().join(name);
        let create = format!(
            "CREATE EXTERNAL TABLE t (id BIGINT, k BIGINT) STORED AS ICEBERG LOCATION '{}' \
             OPTIONS ('partitioning' 'identity(k)', 'write.delete.mode' 'merge-on-read')",
            at.display()
        );
        let insert = "INSERT INTO t SELECT value, value % 4 FROM generate_series(1, 1000)";
        for sql in [create.as_str(), insert] {
            ctx.sql(sql).await.unwrap().collect().await.unwrap();
        }
        let delete = plan(&ctx, "DELETE FROM t WHERE id % 7 = 3").await;
        let delete = match name {
            "one" => delete,
            _ => {
                assert_eq!(delete.name(), "IcebergChangeCommitExec");
                let gathered = Arc::clone(delete.children()[0]);
                let writers = Arc::clone(gathered.children()[0]);
                assert_eq!(writers.name(), "IcebergChangeWriteExec");
                let travelled = round_trip(&writers);
                assert_eq!(travelled.name(), "IcebergChangeWriteExec");
                use datafusion::physical_plan::execution_plan::replace_children_if_necessary;
                let gathered = replace_children_if_necessary(gathered, vec![travelled]).unwrap();
                replace_children_if_necessary(delete, vec![gathered]).unwrap()
            }
        };
        let changed = run(delete).await;
        let table = IcebergTableProvider::open(&ctx, at.to_str().unwrap(), TableOptions::default())
            .await
            .unwrap();
        assert_eq!(table.table().metadata().snapshots.len(), 2, "{name}");
        let read = SessionContext::new();
        read.register_table("t", Arc::new(table)).unwrap();
        let left = read
            .sql("SELECT * FROM t")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        rows.push((changed, sorted_rows(&left)));
    }
    // 3, 10, ..., 997.
    let changed = rows[0].0[0].trim_matches(|c| c == '|' || c == ' ');
    assert_eq!(changed, "143");
    assert_eq!(rows[0], rows[1]);
}

/// The tasks a row-level change's writers are sent read back as they were planned: data
/// files with their partition values, and every kind of delete (position deletes, deletion
/// vectors, equality deletes), each delete file sent once however many tasks it applies to.
#[tokio::test]
async fn planned_tasks_travel_with_their_deletes() {
    let ctx = coordinator();
    let tables = [
        wh1(&ctx, "deletes_mor").await,
        wh1(&ctx, "deletes_eq").await,
        wh1(&ctx, "part_evo").await,
        external(&ctx, "impala_v3_deletion_vectors").await,
        external(&ctx, "impala_v2_delete_both_eq_and_pos").await,
    ];
    let mut kinds = std::collections::BTreeSet::new();
    for provider in tables {
        let table = provider.table();
        let metadata = table.metadata();
        let snapshot = metadata.current_snapshot().unwrap();
        let tasks = crate::scan::plan_files(table.io(), metadata, snapshot)
            .await
            .unwrap();
        let (scanned, deletes) = super::changes::tasks_to_wire(&tasks);
        let mut distinct: Vec<(String, Option<i64>)> = tasks
            .iter()
            .flat_map(|t| &t.deletes)
            .map(|d| (d.file.file_path.clone(), d.file.content_offset))
            .collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(deletes.len(), distinct.len());
        let read = super::changes::tasks_from_wire(&scanned, &deletes, metadata).unwrap();
        let shown = |tasks: &[crate::scan::FileScanTask]| -> Vec<String> {
            tasks
                .iter()
                .map(|t| {
                    let deletes: Vec<String> = t
                        .deletes
                        .iter()
                        .map(|d| {
                            let file = file_fields(&d.file);
                            format!("{file} {} {}", d.partition_spec_id, d.data_sequence_number)
                        })
                        .collect();
                    let file = file_fields(&t.data_file);
                    let (spec, sequence) = (t.partition_spec_id, t.data_sequence_number);
                    format!("{file} {spec} {sequence} {deletes:?}")
                })
                .collect()
        };
        assert_eq!(shown(&read), shown(&tasks));
        for task in &tasks {
            kinds.extend(
                task.deletes
                    .iter()
                    .map(|d| (d.file.content as i32, d.is_deletion_vector())),
            );
        }
    }
    // Position deletes, deletion vectors and equality deletes were all sent.
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [(1, false), (1, true), (2, false)]
    );
}

/// Every field of `file`, maps in key order.
fn file_fields(file: &crate::spec::DataFile) -> String {
    use std::collections::BTreeMap;
    let sorted = |m: &std::collections::HashMap<i32, i64>| {
        format!("{:?}", m.iter().collect::<BTreeMap<_, _>>())
    };
    let bounds = |m: &Option<std::collections::HashMap<i32, Vec<u8>>>| {
        format!(
            "{:?}",
            m.as_ref().map(|m| m.iter().collect::<BTreeMap<_, _>>())
        )
    };
    let crate::spec::DataFile {
        content,
        file_path,
        file_format,
        partition,
        record_count,
        file_size_in_bytes,
        column_sizes,
        value_counts,
        null_value_counts,
        nan_value_counts,
        lower_bounds,
        upper_bounds,
        key_metadata,
        split_offsets,
        equality_ids,
        sort_order_id,
        first_row_id,
        referenced_data_file,
        content_offset,
        content_size_in_bytes,
    } = file;
    format!(
        "{content:?} {file_path} {file_format:?} {partition:?} {record_count} \
         {file_size_in_bytes} {} {} {} {} {} {} {key_metadata:?} {split_offsets:?} \
         {equality_ids:?} {sort_order_id:?} {first_row_id:?} {referenced_data_file:?} \
         {content_offset:?} {content_size_in_bytes:?}",
        sorted(column_sizes),
        sorted(value_counts),
        sorted(null_value_counts),
        sorted(nan_value_counts),
        bounds(lower_bounds),
        bounds(upper_bounds),
    )
}

/// A statement's answer after its commit stands whatever the runtime reports next; before
/// the commit an error is the answer.
#[tokio::test]
async fn an_error_after_the_commit_does_not_fail_the_statement() {
    use datafusion::arrow::array::UInt64Array;
    use datafusion::error::DataFusionError;
    use datafusion::physical_plan::metrics::Count;
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    use futures::StreamExt;

    let schema = Arc::new(ArrowSchema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]));
    let answer = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(UInt64Array::from(vec![7u64]))],
    )
    .unwrap();
    let lost = || DataFusionError::Execution("worker lost: connection reset".into());
    // (what the runtime yields, whether the commit happened) -> (rows answered, failed)
    let cases = [
        (
            vec![Ok(answer.clone()), Err(lost())],
            true,
            (vec![7], false),
        ),
        (vec![Err(lost())], true, (vec![7], false)),
        (vec![Err(lost())], false, (vec![], true)),
        (vec![Ok(answer.clone())], true, (vec![7], false)),
    ];
    for (items, happened, expected) in cases {
        let input = Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&schema),
            futures::stream::iter(items),
        ));
        let committed = super::nodes::Committed::default();
        if happened {
            committed.set(7).unwrap();
        }
        let late = Count::new();
        let mut answered = super::nodes::answered_by_commit(input, committed, late.clone());
        let (mut rows, mut failed) = (Vec::new(), false);
        while let Some(item) = answered.next().await {
            match item {
                Ok(batch) => rows.extend(
                    batch
                        .column(0)
                        .as_any()
                        .downcast_ref::<UInt64Array>()
                        .unwrap()
                        .values()
                        .iter()
                        .copied(),
                ),
                Err(_) => failed = true,
            }
        }
        assert_eq!((rows, failed), expected);
    }
}
