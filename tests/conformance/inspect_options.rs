//! Metadata tables at a chosen state through the Rust API and through `TIMESTAMP AS OF`:
//!
//! - `IcebergMetadataTable::open(.., MetadataTableKind::Files, options)` with
//!   `with_snapshot_id` for every snapshot of the oracle and `with_ref` for every branch and
//!   tag: the data files of that snapshot (`snapshots[].files`);
//! - `"t$files" TIMESTAMP AS OF` every instant of the oracle's `time_travel` entries: the data
//!   files of the snapshot the oracle resolved, or an error before the first snapshot.

use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe::TableOptions;
use icefloe::metadata_tables::{IcebergMetadataTable, MetadataTableKind};
use icefloe::spec::SnapshotSelector;
use serde_json::Value;

use crate::inspect::{InspectTable, catalog_session, is_checked, query};
use crate::inspect_compare;
use crate::pyiceberg::WRITTEN_AT;
use crate::support::{error_chain, utc_timestamp};

/// (checks, problems) for one table.
pub async fn problems(table: InspectTable) -> (usize, Vec<String>) {
    if !is_checked("files") {
        return (0, Vec::new());
    }
    let files = snapshot_files(&table);
    let mut checked = 0;
    let mut problems = Vec::new();
    let refs = table.oracle["refs"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut selectors: Vec<(SnapshotSelector, i64)> = files
        .iter()
        .map(|(id, _)| (SnapshotSelector::SnapshotId(*id), *id))
        .collect();
    for (name, target) in refs {
        if let Some(id) = target["snapshot-id"].as_i64() {
            selectors.push((SnapshotSelector::Ref(name), id));
        }
    }
    for (selector, id) in selectors {
        let Some((_, expected)) = files.iter().find(|(sid, _)| *sid == id) else {
            continue;
        };
        checked += 1;
        if let Some(p) = through_options(&table, selector.clone(), expected).await {
            problems.push(format!("{selector:?}: {p}"));
        }
    }
    let (n, p) = as_of_timestamps(&table, &files).await;
    (checked + n, [problems, p].concat())
}

/// Per snapshot of the oracle, its data files as `{file_path, record_count}` rows.
fn snapshot_files(table: &InspectTable) -> Vec<(i64, Vec<Value>)> {
    let snapshots = table.oracle["snapshots"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    snapshots
        .iter()
        .filter_map(|s| {
            let rows = s["files"]
                .as_array()?
                .iter()
                .map(|f| {
                    let path = f["path"].as_str().unwrap_or_default();
                    serde_json::json!({
                        "file_path": path.replace("{warehouse}", WRITTEN_AT),
                        "record_count": f["record_count"],
                    })
                })
                .collect();
            Some((s["snapshot_id"].as_i64()?, rows))
        })
        .collect()
}

async fn through_options(
    table: &InspectTable,
    selector: SnapshotSelector,
    expected: &[Value],
) -> Option<String> {
    let ctx = SessionContext::new();
    let options = TableOptions::default()
        .with_relocation(WRITTEN_AT, table.warehouse.to_string_lossy())
        .with_snapshot(selector);
    let location = &table.metadata_location;
    let opened =
        IcebergMetadataTable::open(&ctx, location, MetadataTableKind::Files, options).await;
    let relation = match opened {
        Ok(relation) => relation,
        Err(e) => {
            return Some(format!(
                "IcebergMetadataTable::open failed: {}",
                error_chain(&e)
            ));
        }
    };
    if let Err(e) = ctx.register_table("mt", Arc::new(relation)) {
        return Some(format!("register: {e}"));
    }
    let sql = "SELECT file_path, record_count FROM mt WHERE content = 0";
    match query(&ctx, sql).await {
        Ok(actual) => {
            let problems = inspect_compare::compare(expected, &actual, false);
            (!problems.is_empty()).then(|| format!("{sql}: {}", problems.join("; ")))
        }
        Err(e) => Some(format!("{sql} failed: {e}")),
    }
}

/// `TIMESTAMP AS OF` each instant of the oracle's `time_travel` entries.
async fn as_of_timestamps(
    table: &InspectTable,
    files: &[(i64, Vec<Value>)],
) -> (usize, Vec<String>) {
    let entries = table.oracle["time_travel"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if entries.is_empty() {
        return (0, Vec::new());
    }
    let ctx = match catalog_session(&table.warehouse).await {
        Ok(ctx) => ctx,
        Err(e) => return (0, vec![format!("session: {e}")]),
    };
    let relation = table.relation_name("files");
    let mut checked = 0;
    let mut problems = Vec::new();
    for entry in entries {
        let Some(ms) = entry["timestamp_ms"].as_i64() else {
            continue;
        };
        let sql = format!(
            "SELECT file_path, record_count FROM {relation} TIMESTAMP AS OF TIMESTAMP '{}' WHERE content = 0",
            utc_timestamp(ms)
        );
        let expected = match entry["snapshot_id"].as_i64() {
            Some(id) => match files.iter().find(|(sid, _)| *sid == id) {
                Some((_, rows)) => Some(rows.clone()),
                None => continue,
            },
            None => None,
        };
        checked += 1;
        match (query(&ctx, &sql).await, expected) {
            (Ok(actual), Some(rows)) => problems.extend(
                inspect_compare::compare(&rows, &actual, false)
                    .into_iter()
                    .map(|p| format!("{sql}: {p}")),
            ),
            (Ok(actual), None) => problems.push(format!(
                "{sql}: before the first snapshot, expected an error, got {} rows",
                actual.rows.len()
            )),
            (Err(_), None) => {}
            (Err(e), Some(_)) => problems.push(format!("{sql} failed: {e}")),
        }
    }
    (checked, problems)
}
