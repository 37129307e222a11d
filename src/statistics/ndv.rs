//! The number of distinct values of a scan's columns, from the table statistics serving its
//! snapshot (spec: "Table Statistics"): the `ndv` property of each one-field
//! `apache-datasketches-theta-v1` blob, from the table metadata's `blob-metadata` when it has
//! it (no IO), else from the Puffin footer, else from the sketch itself.
//!
//! These only feed DataFusion's optimizer, so a missing, unreadable or corrupt statistics
//! file gives no distinct counts and never fails the query. The counts are always
//! `Inexact`: a theta sketch estimates (exactly only below 4,096 values), statistics of an
//! ancestor describe an older state, and an `Exact` count would let DataFusion call a join's
//! estimated row count exact.

use std::collections::HashMap;

use datafusion::common::stats::Precision;

use super::theta::ndv_of_blob;
use crate::error::Result;
use crate::spec::Schema;
use crate::spec::metadata::StatisticsFile;
use crate::spec::puffin::{NDV_PROPERTY, PuffinFooter, THETA_BLOB_TYPE, decode_blob};
use crate::spec::statistics::{BlobMetadata, statistics_for};
use crate::table::Table;

/// The largest theta sketch blob read (a sketch of lg k 12 is under 40 KiB).
const MAX_SKETCH_BYTES: u64 = 16 << 20;

/// Per top-level column of `schema`, the distinct count the statistics serving `snapshot_id`
/// give (`Absent` where they have none; empty when the table has no statistics for it).
pub(crate) async fn distinct_counts(
    table: &Table,
    snapshot_id: i64,
    schema: &Schema,
) -> Vec<Precision<usize>> {
    let Some((file, _age)) = statistics_for(table.metadata(), snapshot_id) else {
        return Vec::new();
    };
    let blobs = file.blobs();
    let mut ndvs: HashMap<i32, u64> = blobs.iter().filter_map(BlobMetadata::ndv).collect();
    let wanted = |id: i32| schema.field_by_id(id).is_some() && !ndvs.contains_key(&id);
    let unread = blobs
        .iter()
        .any(|b| b.kind == THETA_BLOB_TYPE && matches!(b.fields[..], [id] if wanted(id)));
    if unread && let Ok(more) = footer_ndvs(table, file).await {
        for (id, ndv) in more {
            ndvs.entry(id).or_insert(ndv);
        }
    }
    schema
        .columns()
        .iter()
        .map(|c| match ndvs.get(&c.id) {
            Some(&n) => Precision::Inexact(usize::try_from(n).unwrap_or(usize::MAX)),
            None => Precision::Absent,
        })
        .collect()
}

/// The distinct counts of the one-field theta blobs of the Puffin file: the footer's `ndv`
/// properties, else each sketch's estimate.
async fn footer_ndvs(table: &Table, file: &StatisticsFile) -> Result<HashMap<i32, u64>> {
    let io = table.io();
    let path = &file.statistics_path;
    let size = u64::try_from(file.file_size_in_bytes).unwrap_or(0);
    let footer_size = u64::try_from(file.file_footer_size_in_bytes).unwrap_or(0);
    let start = size.saturating_sub(footer_size);
    let bytes = io.read_range(path, start..size).await?;
    let footer = PuffinFooter::parse(&bytes, size).map_err(|e| e.in_file(path))?;
    let mut ndvs = HashMap::new();
    for blob in &footer.blobs {
        let [id] = blob.fields[..] else { continue };
        if blob.kind != THETA_BLOB_TYPE {
            continue;
        }
        let ndv = match blob
            .properties
            .get(NDV_PROPERTY)
            .and_then(|n| n.parse().ok())
        {
            Some(ndv) => ndv,
            None => {
                let stored = io
                    .read_range(path, blob.offset..blob.offset + blob.length)
                    .await?;
                let sketch =
                    decode_blob(blob, &stored, MAX_SKETCH_BYTES).map_err(|e| e.in_file(path))?;
                ndv_of_blob(&sketch).map_err(|e| e.in_file(path))?
            }
        };
        ndvs.insert(id, ndv);
    }
    Ok(ndvs)
}
