//! `icefloe check`: verifies that what a table's metadata promises is there.
//!
//! Reads (`count(*)` answered from manifest-list counts, planning from manifest metrics) trust
//! the metadata, as every Iceberg engine does: a missing manifest or a data file of another
//! size is only noticed when it is read. [`check_table`] looks, from the metadata alone:
//!
//! - every snapshot's manifest list can be read, every manifest it lists exists with the
//!   recorded `manifest_length` and decodes;
//! - each manifest's entries agree with the counts its manifest-list entry records (added,
//!   existing and deleted files and rows);
//! - every live data and delete file (ADDED or EXISTING) exists with its recorded
//!   `file_size_in_bytes`, as do the statistics and partition-statistics files;
//! - each snapshot's summary totals (`total-records`, `total-data-files`, `total-delete-files`)
//!   agree with its live entries;
//! - the previous metadata files of the metadata log exist (a warning: no read needs them).
//!
//! Every problem is collected (the check goes on after one), each naming the file or snapshot
//! and, for a data, delete or statistics file, the file that names it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::{StreamExt, stream};

use crate::error::{Error, Result};
use crate::io::FileIO;
use crate::scan::{read_manifest, read_manifest_list};
use crate::spec::{DataContentType, Manifest, ManifestFile, ManifestStatus, Snapshot};
use crate::table::Table;

/// How many objects are looked at at once.
const CONCURRENCY: usize = 32;

/// What [`check_table`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Snapshots whose manifest lists were read.
    pub snapshots: usize,
    /// Distinct manifests checked.
    pub manifests: usize,
    /// Distinct data and delete files checked (live entries).
    pub files: usize,
    /// Every problem found, each a sentence naming its file or snapshot.
    pub problems: Vec<String>,
    /// What is missing but no read needs: previous metadata files of the metadata log (often
    /// left behind when a table is copied).
    pub warnings: Vec<String>,
}

impl CheckReport {
    /// Whether the table is as its metadata says.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks the table's files against its metadata (see the module docs). Problems go into the
/// report; only a failure to start (none so far) is an error.
pub async fn check_table(table: &Table) -> Result<CheckReport> {
    let io = table.io();
    let metadata = table.metadata();
    let mut report = CheckReport::default();
    let lists = read_lists(table, &mut report).await;
    let manifests: BTreeMap<String, ManifestFile> = lists
        .values()
        .flat_map(|list| list.iter())
        .map(|m| (m.manifest_path.clone(), m.clone()))
        .collect();
    report.manifests = manifests.len();
    let decoded = read_manifests(table, manifests.into_values().collect(), &mut report).await;
    for snapshot in &metadata.snapshots {
        if let Some(list) = lists.get(&snapshot.snapshot_id) {
            check_summary(snapshot, list, &decoded, &mut report);
        }
    }
    // Each file with its recorded size and the file that names it.
    let mut sized: BTreeMap<String, (i64, String)> = BTreeMap::new();
    for (path, (_, contents)) in &decoded {
        for entry in contents
            .entries
            .iter()
            .filter(|e| e.status != ManifestStatus::Deleted)
        {
            let file = &entry.data_file;
            let named_by = format!("manifest {path}");
            sized.insert(file.file_path.clone(), (file.file_size_in_bytes, named_by));
        }
    }
    report.files = sized.len();
    let statistics = metadata
        .statistics
        .iter()
        .map(|s| (&s.statistics_path, s.file_size_in_bytes));
    let partition_statistics = metadata
        .partition_statistics
        .iter()
        .map(|s| (&s.statistics_path, s.file_size_in_bytes));
    for (path, size) in statistics.chain(partition_statistics) {
        let named_by = format!("metadata file {}", table.metadata_location());
        sized.insert(path.clone(), (size, named_by));
    }
    check_sizes(io, sized, &mut report).await;
    let logged: BTreeSet<String> = metadata
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.clone())
        .collect();
    report.warnings = missing(io, logged, "previous metadata file").await;
    report.problems.sort();
    Ok(report)
}

/// Every snapshot's manifest list, by snapshot id (unreadable ones become problems).
async fn read_lists(
    table: &Table,
    report: &mut CheckReport,
) -> BTreeMap<i64, Arc<Vec<ManifestFile>>> {
    let (io, metadata) = (table.io(), table.metadata());
    let read: Vec<(i64, Result<Arc<Vec<ManifestFile>>>)> =
        stream::iter(metadata.snapshots.iter().cloned())
            .map(|snapshot| async move {
                let listed = read_manifest_list(io, metadata, &snapshot).await;
                (snapshot.snapshot_id, listed)
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
    report.snapshots = read.len();
    let mut lists = BTreeMap::new();
    for (id, listed) in read {
        match listed {
            Ok(list) => {
                lists.insert(id, list);
            }
            Err(e) => report
                .problems
                .push(format!("snapshot {id}: {}", chain(&e))),
        }
    }
    lists
}

/// Each manifest: its size against `manifest_length`, its entries against its counts.
async fn read_manifests(
    table: &Table,
    manifests: Vec<ManifestFile>,
    report: &mut CheckReport,
) -> BTreeMap<String, (ManifestFile, Manifest)> {
    let (io, metadata) = (table.io(), table.metadata());
    let read: Vec<(ManifestFile, Result<u64>, Result<Manifest>)> = stream::iter(manifests)
        .map(|manifest| async move {
            let size = io.head(&manifest.manifest_path).await.map(|m| m.size);
            let decoded = match &size {
                Ok(_) => read_manifest(io, metadata, &manifest).await,
                Err(_) => Err(Error::not_found(manifest.manifest_path.clone())),
            };
            (manifest, size, decoded)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut decoded = BTreeMap::new();
    for (manifest, size, contents) in read {
        let path = manifest.manifest_path.clone();
        match size {
            Err(e) => {
                report
                    .problems
                    .push(format!("manifest {path} is missing: {}", chain(&e)));
                continue;
            }
            Ok(size) if i64::try_from(size).ok() != Some(manifest.manifest_length) => {
                report.problems.push(format!(
                    "manifest {path} is {size} bytes, the manifest list records {}",
                    manifest.manifest_length
                ));
            }
            Ok(_) => {}
        }
        match contents {
            Ok(contents) => {
                check_manifest_counts(&manifest, &contents, report);
                decoded.insert(path, (manifest, contents));
            }
            Err(e) => report
                .problems
                .push(format!("manifest {path}: {}", chain(&e))),
        }
    }
    decoded
}

/// The counts a manifest-list entry records against the manifest's entries.
fn check_manifest_counts(manifest: &ManifestFile, contents: &Manifest, report: &mut CheckReport) {
    let counts = |status: ManifestStatus| {
        let of = contents.entries.iter().filter(|e| e.status == status);
        let files = of.clone().count() as i64;
        (files, of.map(|e| e.data_file.record_count).sum::<i64>())
    };
    let recorded = [
        (
            "added",
            ManifestStatus::Added,
            manifest.added_files_count,
            manifest.added_rows_count,
        ),
        (
            "existing",
            ManifestStatus::Existing,
            manifest.existing_files_count,
            manifest.existing_rows_count,
        ),
        (
            "deleted",
            ManifestStatus::Deleted,
            manifest.deleted_files_count,
            manifest.deleted_rows_count,
        ),
    ];
    for (word, status, files, rows) in recorded {
        let (actual_files, actual_rows) = counts(status);
        if let Some(files) = files
            && i64::from(files) != actual_files
        {
            report.problems.push(format!(
                "manifest {}: the manifest list records {files} {word} file(s), it holds {actual_files}",
                manifest.manifest_path
            ));
        }
        if let Some(rows) = rows
            && rows != actual_rows
        {
            report.problems.push(format!(
                "manifest {}: the manifest list records {rows} {word} row(s), it holds {actual_rows}",
                manifest.manifest_path
            ));
        }
    }
}

/// A snapshot's summary totals against its live entries.
fn check_summary(
    snapshot: &Snapshot,
    list: &[ManifestFile],
    decoded: &BTreeMap<String, (ManifestFile, Manifest)>,
    report: &mut CheckReport,
) {
    let Some(summary) = &snapshot.summary else {
        return;
    };
    let (mut records, mut data_files, mut delete_files) = (0i64, 0i64, 0i64);
    for manifest in list {
        let Some((_, contents)) = decoded.get(&manifest.manifest_path) else {
            return; // already a problem: the totals cannot be known
        };
        for entry in contents
            .entries
            .iter()
            .filter(|e| e.status != ManifestStatus::Deleted)
        {
            match entry.data_file.content {
                DataContentType::Data => {
                    records += entry.data_file.record_count;
                    data_files += 1;
                }
                _ => delete_files += 1,
            }
        }
    }
    for (key, actual) in [
        ("total-records", records),
        ("total-data-files", data_files),
        ("total-delete-files", delete_files),
    ] {
        let recorded = summary.get(key).and_then(|v| v.trim().parse::<i64>().ok());
        if let Some(recorded) = recorded
            && recorded != actual
        {
            report.problems.push(format!(
                "snapshot {}: its summary says {key} = {recorded}, its manifests hold {actual}",
                snapshot.snapshot_id
            ));
        }
    }
}

/// Each file exists with its recorded size.
async fn check_sizes(
    io: &FileIO,
    files: BTreeMap<String, (i64, String)>,
    report: &mut CheckReport,
) {
    let problems: Vec<Option<String>> = stream::iter(files)
        .map(|(path, (recorded, named_by))| async move {
            match io.head(&path).await {
                Err(e) => Some(format!(
                    "file {path} (named by {named_by}) is missing: {}",
                    chain(&e)
                )),
                Ok(meta) if i64::try_from(meta.size).ok() != Some(recorded) => Some(format!(
                    "file {path} (named by {named_by}) is {} bytes, its metadata records \
                     {recorded}",
                    meta.size
                )),
                Ok(_) => None,
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    report.problems.extend(problems.into_iter().flatten());
}

/// The files of `files` that do not exist, each a sentence.
async fn missing(io: &FileIO, files: BTreeSet<String>, what: &str) -> Vec<String> {
    let found: Vec<Option<String>> = stream::iter(files)
        .map(|path| async move {
            match io.exists(&path).await {
                Ok(true) => None,
                Ok(false) => Some(format!("{what} {path} is missing")),
                Err(e) => Some(format!("{what} {path}: {}", chain(&e))),
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut found: Vec<String> = found.into_iter().flatten().collect();
    found.sort();
    found
}

/// An error with its sources, `: `-joined (a source the message already says is skipped).
fn chain(e: &Error) -> String {
    crate::error::chain(e)
}
