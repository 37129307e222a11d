//! The table-level relations and `manifests` / `all_manifests` of the in-repo PyIceberg tables
//! against the oracle's `inspect` answers (independent: written by PyIceberg 0.12).

use std::sync::Arc;

use chrono::DateTime;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit, TimestampMillisecondType};
use datafusion::catalog::TableProvider;
use datafusion::prelude::SessionContext;
use serde_json::{Value, json};

use super::*;
use crate::io::FileIO;
use crate::spec::SnapshotSelector;
use crate::sql::test_support::{ORDERS_FIRST, WRITTEN_AT, relocation, warehouse};

async fn table(name: &str) -> Table {
    let ctx = SessionContext::new();
    let io = FileIO::new(ctx.runtime_env(), relocation());
    Table::load(io, &format!("{}/db/{name}", warehouse()))
        .await
        .unwrap()
}

fn oracle(name: &str, relation: &str) -> Vec<Value> {
    let path = format!("{}/oracle/db.{name}.json", warehouse());
    let text = std::fs::read_to_string(path).unwrap();
    let answers: Value = serde_json::from_str(&text).unwrap();
    answers["inspect"][relation].as_array().unwrap().clone()
}

async fn rows(name: &str, kind: MetadataTableKind, selector: SnapshotSelector) -> Vec<Value> {
    let relation = IcebergMetadataTable::try_new(table(name).await, kind, selector).unwrap();
    let batches = relation.batches(&[], None).await.unwrap();
    let schema = relation.schema();
    batches
        .iter()
        .inspect(|b| assert_eq!(b.schema(), schema))
        .flat_map(json_rows)
        .collect()
}

/// Rows as the oracle writes them: naive ISO timestamps, maps as sorted `[key, value]`
/// pairs, paths under `{warehouse}`.
fn json_rows(batch: &RecordBatch) -> Vec<Value> {
    (0..batch.num_rows())
        .map(|row| {
            let schema = batch.schema();
            let fields = schema.fields().iter().zip(batch.columns());
            Value::Object(
                fields
                    .map(|(f, c)| (f.name().clone(), value(c, row)))
                    .collect(),
            )
        })
        .collect()
}

fn value(column: &ArrayRef, row: usize) -> Value {
    if column.is_null(row) {
        return Value::Null;
    }
    match column.data_type() {
        DataType::Timestamp(TimeUnit::Millisecond, None) => {
            let ms = column.as_primitive::<TimestampMillisecondType>().value(row);
            let at = DateTime::from_timestamp_millis(ms).unwrap().naive_utc();
            // Python's isoformat: no fraction when it is zero.
            let format = match ms % 1000 {
                0 => "%Y-%m-%dT%H:%M:%S",
                _ => "%Y-%m-%dT%H:%M:%S%.6f",
            };
            json!(at.format(format).to_string())
        }
        DataType::Int8 | DataType::Int32 | DataType::Int64 => {
            let c = cast(column, &DataType::Int64).unwrap();
            json!(c.as_primitive::<Int64Type>().value(row))
        }
        DataType::Boolean => json!(column.as_boolean().value(row)),
        DataType::Utf8 | DataType::Dictionary(..) => {
            let c = cast(column, &DataType::Utf8).unwrap();
            json!(
                c.as_string::<i32>()
                    .value(row)
                    .replace(WRITTEN_AT, "{warehouse}")
            )
        }
        DataType::Map(..) => {
            let entries = column.as_map().value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let mut pairs: Vec<Value> = (0..entries.len())
                .map(|i| json!([value(keys, i), value(values, i)]))
                .collect();
            pairs.sort_by_key(|p| p.to_string());
            Value::Array(pairs)
        }
        DataType::List(_) => {
            let items = column.as_list::<i32>().value(row);
            Value::Array((0..items.len()).map(|i| value(&items, i)).collect())
        }
        DataType::Struct(fields) => {
            let s = column.as_struct();
            let pairs = fields.iter().zip(s.columns());
            Value::Object(
                pairs
                    .map(|(f, c)| (f.name().clone(), value(c, row)))
                    .collect(),
            )
        }
        other => panic!("no JSON form for {other}"),
    }
}

/// The oracle's rows with `summary` maps sorted like [`value`] does.
fn normalised(mut rows: Vec<Value>) -> Vec<Value> {
    for row in &mut rows {
        if let Some(Value::Array(pairs)) = row.get_mut("summary") {
            pairs.sort_by_key(|p| p.to_string());
        }
    }
    rows
}

/// PyIceberg 0.12 shows an empty stored partition bound (`''`) as null (Python truthiness);
/// icefloe shows the stored value. Ours with PyIceberg's rendering, for comparison.
fn pyiceberg_empty_bounds(mut row: Value) -> Value {
    if let Some(Value::Array(summaries)) = row.get_mut("partition_summaries") {
        for summary in summaries.iter_mut() {
            for key in ["lower_bound", "upper_bound"] {
                if summary[key] == json!("") {
                    summary[key] = Value::Null;
                }
            }
        }
    }
    row
}

fn sorted_by(mut rows: Vec<Value>, key: &str) -> Vec<Value> {
    rows.sort_by_key(|r| r[key].to_string());
    rows
}

#[test]
fn kinds_parse_their_names() {
    for kind in MetadataTableKind::ALL {
        assert_eq!(MetadataTableKind::parse(kind.name()), Some(kind));
        assert_eq!(
            MetadataTableKind::parse(&kind.name().to_uppercase()),
            Some(kind)
        );
    }
    assert_eq!(MetadataTableKind::parse("branch_main"), None);
    let per_snapshot: Vec<_> = MetadataTableKind::ALL
        .into_iter()
        .filter(|k| k.per_snapshot())
        .map(MetadataTableKind::name)
        .collect();
    let expected = [
        "manifests",
        "entries",
        "files",
        "data_files",
        "delete_files",
        "partitions",
    ];
    assert_eq!(per_snapshot, expected);
}

#[tokio::test]
async fn table_level_relations_equal_pyiceberg() {
    use MetadataTableKind as K;
    let current = SnapshotSelector::Current;
    for name in ["orders", "refs"] {
        for kind in [
            K::Snapshots,
            K::History,
            K::MetadataLogEntries,
            K::Manifests,
        ] {
            let ours = rows(name, kind, current.clone()).await;
            let expected = normalised(oracle(name, kind.name()));
            assert_eq!(ours, expected, "{name} {kind}");
        }
        let ours = sorted_by(rows(name, K::Refs, current.clone()).await, "name");
        assert_eq!(ours, sorted_by(oracle(name, "refs"), "name"), "{name} refs");
    }
}

#[tokio::test]
async fn all_manifests_equal_pyiceberg() {
    let ours = rows(
        "orders",
        MetadataTableKind::AllManifests,
        SnapshotSelector::Current,
    )
    .await;
    assert_eq!(ours, oracle("orders", "all_manifests"));
}

#[tokio::test]
async fn manifests_at_a_snapshot() {
    let at = SnapshotSelector::SnapshotId(ORDERS_FIRST);
    let ours = rows("orders", MetadataTableKind::Manifests, at).await;
    let all = oracle("orders", "all_manifests");
    let expected: Vec<Value> = all
        .into_iter()
        .filter(|r| r["reference_snapshot_id"] == json!(ORDERS_FIRST))
        .map(|mut r| {
            let o = r.as_object_mut().unwrap();
            o.remove("reference_snapshot_id");
            o.remove("key_metadata");
            r
        })
        .collect();
    assert_eq!(ours, expected);
}

#[tokio::test]
async fn whole_table_relations_refuse_time_travel() {
    let table = table("refs").await;
    let at = SnapshotSelector::Ref("v1".into());
    let err = IcebergMetadataTable::try_new(table.clone(), MetadataTableKind::History, at.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("history") && err.contains("ref 'v1'") && err.contains("time travel"),
        "{err}"
    );
    let unknown = SnapshotSelector::Ref("nope".into());
    let err = IcebergMetadataTable::try_new(table.clone(), MetadataTableKind::Manifests, unknown)
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
    assert!(IcebergMetadataTable::try_new(table, MetadataTableKind::Manifests, at).is_ok());
}

#[tokio::test]
async fn scans_project_and_limit() {
    let ctx = SessionContext::new();
    let kind = MetadataTableKind::Snapshots;
    let relation = IcebergMetadataTable::try_new(table("refs").await, kind, Default::default());
    ctx.register_table("s", Arc::new(relation.unwrap()))
        .unwrap();
    let df = ctx.sql("SELECT snapshot_id FROM s LIMIT 2").await.unwrap();
    let plan = df.clone().create_physical_plan().await.unwrap();
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    assert!(
        shown.contains("IcebergMetadataScanExec") && shown.contains("fetch=2"),
        "{shown}"
    );
    let batches = df.collect().await.unwrap();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 2);
    assert_eq!(batches[0].num_columns(), 1);
    let query = "SELECT count(*) FROM s WHERE operation = 'overwrite'";
    let batches = ctx.sql(query).await.unwrap().collect().await.unwrap();
    let count = batches[0].column(0).as_primitive::<Int64Type>().value(0);
    assert_eq!(count, 1);
}

#[tokio::test]
async fn every_relation_scans_through_sql() {
    let ctx = SessionContext::new();
    for kind in MetadataTableKind::ALL {
        let relation =
            IcebergMetadataTable::try_new(table("orders").await, kind, Default::default());
        let relation = Arc::new(relation.unwrap());
        let fields: Vec<String> = relation
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert!(!fields.is_empty(), "{kind}");
        let batches = ctx.read_table(relation).unwrap().collect().await.unwrap();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        // db.orders has no delete files and no statistics files.
        let empty = kind.name().ends_with("delete_files") || kind == MetadataTableKind::Statistics;
        assert_eq!(rows > 0, !empty, "{kind}");
    }
}

#[tokio::test]
async fn all_manifests_reads_only_the_pinned_snapshots() {
    use datafusion::logical_expr::{col, lit};
    let kind = MetadataTableKind::AllManifests;
    let relation = IcebergMetadataTable::try_new(table("orders").await, kind, Default::default());
    let relation = relation.unwrap();
    let filter = col("reference_snapshot_id").eq(lit(ORDERS_FIRST));
    let batches = relation.batches(&[filter], None).await.unwrap();
    // Rows of other snapshots are absent before DataFusion filters: their lists were not read.
    let ours: Vec<Value> = batches.iter().flat_map(json_rows).collect();
    let expected: Vec<Value> = oracle("orders", "all_manifests")
        .into_iter()
        .filter(|r| r["reference_snapshot_id"] == json!(ORDERS_FIRST))
        .collect();
    assert_eq!(ours, expected);
    let limited = relation.batches(&[], Some(1)).await.unwrap();
    assert_eq!(limited.iter().map(RecordBatch::num_rows).sum::<usize>(), 1);
}

/// With `ICEFLOE_FIXTURES` set (the full PyIceberg warehouse), every table's table-level
/// relations and manifests against its oracle.
#[tokio::test]
async fn every_pyiceberg_table_agrees_when_the_full_fixtures_are_given() {
    let Ok(fixtures) = std::env::var("ICEFLOE_FIXTURES") else {
        return;
    };
    let wh = format!("{fixtures}/pyiceberg/wh1");
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(format!("{wh}/oracle")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let answers: Value = serde_json::from_str(&text).unwrap();
        let Some(location) = answers["metadata_location"].as_str() else {
            continue; // summary.json
        };
        let location = location.replace("{warehouse}", &wh);
        let io = FileIO::new(
            SessionContext::new().runtime_env(),
            crate::Relocation::new().with_rule(WRITTEN_AT, &wh),
        );
        let table = Table::load_metadata_file(io, location).await.unwrap();
        use MetadataTableKind as K;
        for kind in [
            K::Snapshots,
            K::History,
            K::MetadataLogEntries,
            K::Refs,
            K::Manifests,
            K::AllManifests,
        ] {
            let relation =
                IcebergMetadataTable::try_new(table.clone(), kind, Default::default()).unwrap();
            let ours = match relation.batches(&[], None).await {
                Ok(batches) => batches.iter().flat_map(json_rows).collect(),
                Err(e) => vec![json!(e.to_string())],
            };
            // db.empty has no manifests answers (PyIceberg has no snapshot to list).
            let Some(expected) = answers["inspect"][kind.name()].as_array() else {
                continue;
            };
            let expected = normalised(expected.clone());
            let ours = ours.into_iter().map(pyiceberg_empty_bounds).collect();
            let (ours, expected) = match kind {
                K::Refs => (sorted_by(ours, "name"), sorted_by(expected, "name")),
                _ => (ours, expected),
            };
            if ours != expected {
                let first = ours.iter().zip(&expected).find(|(a, b)| a != b);
                let sizes = (ours.len(), expected.len());
                let id = &answers["identifier"];
                failures.push(format!("{id} {kind} {sizes:?}: {first:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn planning_reads_nothing_and_run_errors_name_the_relation() {
    // Relocated to where nothing is, the manifest lists cannot be read (the caller's rule
    // wins over the implicit relocation of a moved table).
    let ctx = SessionContext::new();
    let nowhere = crate::Relocation::new().with_rule("file:///data/lake/wh1", "/nonexistent/wh1");
    let io = FileIO::new(ctx.runtime_env(), nowhere);
    let table = Table::load(io, &format!("{}/db/orders", warehouse()))
        .await
        .unwrap();
    let kind = MetadataTableKind::AllManifests;
    let relation = IcebergMetadataTable::try_new(table, kind, Default::default()).unwrap();
    let df = ctx.read_table(Arc::new(relation)).unwrap();
    df.clone().create_physical_plan().await.unwrap();
    let err = df.collect().await.unwrap_err().to_string();
    assert!(
        err.contains("reading all_manifests of") && err.contains("snap-"),
        "{err}"
    );
}
