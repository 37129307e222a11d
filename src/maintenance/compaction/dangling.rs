//! Delete files no live data file needs any more (Iceberg Java's `RemoveDanglingDeleteFiles`),
//! found from metadata: a delete file applies only to data files of its partition (every
//! partition, for an unpartitioned spec) with a lower data sequence number (position deletes
//! and deletion vectors: lower or equal), so once compaction has rewritten a partition's old
//! files, the deletes older than every file left there apply to nothing.
//!
//! - A position delete file or deletion vector is dangling when the data file it references
//!   is no longer live, or when its sequence number is below that of every live data file of
//!   its partition (or there is none);
//! - an equality delete file when its sequence number is at most that of every live data file
//!   of its partition (or there is none).

use std::collections::{HashMap, HashSet};

use super::plan::{PartitionKey, partition_key};
use crate::error::Result;
use crate::io::FileIO;
use crate::scan::{read_manifest_list, read_manifests};
use crate::spec::{DataContentType, DataFile, ManifestContent, Snapshot, TableMetadata};

/// The live delete files of `snapshot` that apply to no live data file (see the module docs),
/// each with its partition spec id.
pub(crate) async fn dangling_deletes(
    io: &FileIO,
    metadata: &TableMetadata,
    snapshot: &Snapshot,
) -> Result<Vec<(i32, DataFile)>> {
    let listed = read_manifest_list(io, metadata, snapshot).await?;
    let manifests = read_manifests(io, metadata, &listed).await?;
    let mut live_data = HashSet::new();
    let mut min_by_partition: HashMap<PartitionKey, i64> = HashMap::new();
    let mut min_overall: Option<i64> = None;
    let mut deletes = Vec::new();
    for (manifest_file, manifest) in listed.iter().zip(manifests) {
        let spec_id = manifest_file.partition_spec_id;
        for entry in manifest.entries.into_iter().filter(|e| e.is_alive()) {
            let sequence = entry.sequence_number.unwrap_or(0);
            match manifest_file.content {
                ManifestContent::Data => {
                    live_data.insert(entry.data_file.file_path.clone());
                    let min = min_by_partition
                        .entry(partition_key(spec_id, &entry.data_file))
                        .or_insert(sequence);
                    *min = (*min).min(sequence);
                    min_overall = Some(min_overall.map_or(sequence, |m| m.min(sequence)));
                }
                ManifestContent::Deletes => deletes.push((spec_id, sequence, entry.data_file)),
            }
        }
    }
    let global = |spec_id: i32| {
        metadata
            .partition_spec_by_id(spec_id)
            .is_none_or(|spec| spec.fields.is_empty())
    };
    let dangling = deletes
        .into_iter()
        .filter(|(spec_id, sequence, file)| {
            if let Some(referenced) = &file.referenced_data_file
                && !live_data.contains(referenced)
            {
                return true;
            }
            let min = match global(*spec_id) {
                true => min_overall,
                false => min_by_partition
                    .get(&partition_key(*spec_id, file))
                    .copied(),
            };
            let Some(min) = min else {
                return true;
            };
            match file.content {
                DataContentType::EqualityDeletes => *sequence <= min,
                _ => *sequence < min,
            }
        })
        .map(|(spec_id, _, file)| (spec_id, file))
        .collect();
    Ok(dangling)
}
