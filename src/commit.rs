//! Appending data files to a table: a fast append (one new manifest per partition spec, a new
//! manifest list that reuses every manifest of the branch head, a new metadata file) committed
//! by an atomic pointer swap, retried on a lost race.
//!
//! For tables found through their directory, the swap is the creation of the next
//! `vN.metadata.json` with create-if-absent (the store decides atomically who gets version N),
//! then `version-hint.text`. For SQLite catalog tables it is the conditional update of the
//! table's `metadata_location` row (only while it still names the base). A lost race reloads the table, rewrites only the manifest list and
//! the metadata file on the new base (the new manifests are reused), and tries again, up to
//! `commit.retry.num-retries` times with exponential waits between `commit.retry.min-wait-ms`
//! and `commit.retry.max-wait-ms`. The files of a failed attempt are deleted.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;

use crate::catalog::SqliteCatalog;
use crate::catalog::file::write_version_hint;
use crate::error::{Error, Result};
use crate::io::{FileIO, TableScope};
use crate::scan::read_manifest_list;
use crate::spec::manifest_writer::{write_manifest, write_manifest_list};
use crate::spec::metadata::update::new_snapshot_id;
use crate::spec::partition_summary::summarize;
use crate::spec::properties;
use crate::spec::snapshot::Summary;
use crate::spec::summary::append_summary;
use crate::spec::{
    DataFile, FormatVersion, ManifestContent, ManifestEntry, ManifestFile, ManifestStatus,
    Snapshot, TableMetadata,
};
use crate::table::Table;

/// What an append commits: data files with the partition spec they were written for.
#[derive(Debug, Clone)]
pub struct AppendFiles {
    /// The files, each with its partition spec id.
    pub files: Vec<(i32, DataFile)>,
    /// The branch to commit to (`main` for the table's current state).
    pub branch: String,
    /// Extra snapshot-summary properties (a cherry-pick's `source-snapshot-id`).
    pub summary_properties: BTreeMap<String, String>,
}

impl AppendFiles {
    /// An append of `files` to `main`.
    pub fn new(files: Vec<(i32, DataFile)>) -> Self {
        Self {
            files,
            branch: "main".to_string(),
            summary_properties: BTreeMap::new(),
        }
    }
}

/// The retry settings of a table (`commit.retry.*` properties, Java's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// The first wait.
    pub min_wait: Duration,
    /// The longest wait.
    pub max_wait: Duration,
}

impl RetryPolicy {
    /// The policy a table's properties set; a bad value is an error naming it.
    pub fn of(metadata: &TableMetadata) -> Result<Self> {
        Ok(Self {
            retries: properties::COMMIT_NUM_RETRIES.get(metadata)?,
            min_wait: properties::COMMIT_MIN_RETRY_WAIT.get(metadata)?,
            max_wait: properties::COMMIT_MAX_RETRY_WAIT.get(metadata)?,
        })
    }

    /// The error of a commit to `target` that lost its race on every attempt (`attempt` is
    /// the last one, 0-based).
    fn exhausted(&self, target: &CommitTarget<'_>, attempt: u32) -> Error {
        Error::CommitConflict {
            table: target.name(),
            reason: format!(
                "another writer committed first {} times (commit.retry.num-retries = {})",
                attempt + 1,
                self.retries
            ),
        }
    }

    /// The wait before retry `n` (0-based): doubling from the minimum, capped.
    fn wait(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.min(20));
        self.min_wait.saturating_mul(factor).min(self.max_wait)
    }

    /// [`RetryPolicy::wait`] spread by a random factor in [0.5, 1.5) (capped at the maximum),
    /// so that writers that lost the same race do not all come back at once and collide again.
    fn jittered_wait(&self, n: u32) -> Duration {
        self.wait(n).mul_f64(0.5 + unit_random()).min(self.max_wait)
    }
}

/// Where a table's pointer lives, and so how a commit swaps it.
#[derive(Debug, Clone, Copy)]
pub enum CommitTarget<'a> {
    /// A table found through its directory: the pointer is the newest `vN.metadata.json`.
    Directory {
        /// The table directory.
        location: &'a str,
    },
    /// A table of a SQLite catalog: the pointer is its `metadata_location` row.
    Catalog {
        /// The catalog.
        catalog: &'a SqliteCatalog,
        /// The namespace.
        namespace: &'a str,
        /// The table name.
        table: &'a str,
    },
}

impl CommitTarget<'_> {
    fn name(&self) -> String {
        match self {
            Self::Directory { location } => location.to_string(),
            Self::Catalog {
                namespace, table, ..
            } => format!("{namespace}.{table}"),
        }
    }

    /// The table's current version, for a commit: loaded strictly ([`Table::load_for_write`]
    /// for a directory, the pointer row for a catalog table), refused when moved.
    pub(crate) async fn load(&self, io: &FileIO) -> Result<Base> {
        match self {
            Self::Directory { location } => {
                let (table, version) = Table::load_version_for_write(io.clone(), location).await?;
                let dir = format!(
                    "{}/metadata",
                    table.metadata().location.trim_end_matches('/')
                );
                let next_location = format!("{dir}/v{}.metadata.json", version + 1);
                Ok(Base::new(table, next_location, Some(version + 1)))
            }
            Self::Catalog {
                catalog,
                namespace,
                table,
            } => {
                let loaded = catalog.load_table(namespace, table).await?;
                loaded.ensure_writable()?;
                let next_location = catalog_metadata_location(
                    loaded.metadata_location(),
                    &loaded.metadata().location,
                );
                Ok(Base::new(loaded, next_location, None))
            }
        }
    }
}

impl CommitTarget<'_> {
    /// `None` if `base` is still the table's current version, found cheaply (a directory table's
    /// next metadata file does not exist; a catalog's pointer still names it), else the current
    /// version loaded again ([`CommitTarget::load`]). A retry after a lost race so rereads only
    /// what changed, and the first attempt does not build on a version that moved while its
    /// files were written.
    pub(crate) async fn refresh(&self, io: &FileIO, base: &Base) -> Result<Option<Base>> {
        let current = match self {
            Self::Directory { .. } => !io.exists(&base.next_location).await?,
            Self::Catalog {
                catalog,
                namespace,
                table,
            } => catalog.metadata_location(namespace, table)?.as_deref() == Some(&base.location),
        };
        match current {
            true => Ok(None),
            false => self.load(io).await.map(Some),
        }
    }
}

/// How long a commit waits for the local commit lock ([`FileIO::lock_commits`]) before it
/// goes on without it.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The version a commit builds on: the table's current metadata file and metadata, and the
/// metadata file the commit creates.
#[derive(Debug, Clone)]
pub(crate) struct Base {
    /// The current metadata file.
    pub(crate) location: String,
    /// Its metadata.
    pub(crate) metadata: TableMetadata,
    /// The metadata file the commit creates (create-if-absent: the commit point of a
    /// directory table).
    next_location: String,
    /// For a directory table, the version number of `next_location` (for the hint).
    next_version: Option<u64>,
}

impl Base {
    fn new(table: Table, next_location: String, next_version: Option<u64>) -> Self {
        Self {
            location: table.metadata_location().to_string(),
            metadata: table.metadata().as_ref().clone(),
            next_location,
            next_version,
        }
    }
}

/// Appends `append` to the table at `location` (a table directory, whose newest metadata file
/// is found as [`Table::load`] does) and returns the table as committed. See [`append`].
pub async fn append_to_directory(
    io: &FileIO,
    location: &str,
    append: AppendFiles,
) -> Result<Table> {
    self::append(io, CommitTarget::Directory { location }, append).await
}

/// Appends `append` to the table `target` names and returns the table as committed.
///
/// Errors: [`Error::CommitConflict`] when every attempt lost its race; IO and spec errors as
/// they come. The table is never left half-written: the pointer swap comes last, and the
/// files of a failed commit are deleted.
pub async fn append(io: &FileIO, target: CommitTarget<'_>, append: AppendFiles) -> Result<Table> {
    let mut base = target.load(io).await?;
    let policy = RetryPolicy::of(&base.metadata)?;
    // Read again by each attempt, after its manifest list is written: checked before that.
    properties::METADATA_PREVIOUS_VERSIONS_MAX.get(&base.metadata)?;
    let snapshot_id = new_snapshot_id();
    let manifests = write_new_manifests(io, &base.metadata, &append, snapshot_id).await?;
    let mut attempt = 0;
    loop {
        let lock = io.lock_commits(&base.metadata.location, LOCK_WAIT).await;
        let result = match target.refresh(io, &base).await {
            Ok(fresh) => {
                base = fresh.unwrap_or(base);
                commit_attempt(io, &target, &base, &append, &manifests, snapshot_id).await
            }
            Err(e) => Err(AttemptError::Failed(e)),
        };
        drop(lock);
        match result {
            Ok(table) => return Ok(table),
            Err(AttemptError::Lost) if attempt < policy.retries => {
                tokio::time::sleep(policy.jittered_wait(attempt)).await;
                attempt += 1;
            }
            Err(AttemptError::Lost) => {
                delete_all(io, &manifest_paths(&manifests)).await;
                return Err(policy.exhausted(&target, attempt));
            }
            Err(AttemptError::Failed(e)) => {
                delete_all(io, &manifest_paths(&manifests)).await;
                return Err(e);
            }
        }
    }
}

/// Why an attempt did not commit.
enum AttemptError {
    /// Another writer took the version first.
    Lost,
    /// Anything else: not retried.
    Failed(Error),
}

impl From<Error> for AttemptError {
    fn from(e: Error) -> Self {
        AttemptError::Failed(e)
    }
}

/// One attempt on `base`: the manifest list and metadata file, then the swap.
async fn commit_attempt(
    io: &FileIO,
    target: &CommitTarget<'_>,
    base_version: &Base,
    append: &AppendFiles,
    new_manifests: &[ManifestFile],
    snapshot_id: i64,
) -> std::result::Result<Table, AttemptError> {
    let (base_location, base) = (&base_version.location, &base_version.metadata);
    let sequence_number = base.next_sequence_number();
    let parent = base
        .branch_head(&append.branch)
        .and_then(|id| base.snapshot_by_id(id));
    let mut listed: Vec<ManifestFile> = new_manifests
        .iter()
        .cloned()
        .map(|mut m| {
            m.sequence_number = sequence_number;
            m.min_sequence_number = sequence_number;
            m
        })
        .collect();
    if let Some(parent) = parent {
        listed.extend(read_manifest_list(io, base, parent).await?.iter().cloned());
    }
    let list_path = format!(
        "{}/metadata/snap-{snapshot_id}-{}-{}.avro",
        base.location.trim_end_matches('/'),
        sequence_number,
        uuid::Uuid::new_v4()
    );
    let parent_id = parent.map(|p| p.snapshot_id);
    let list = write_manifest_list(
        base.format_version,
        snapshot_id,
        parent_id,
        sequence_number,
        &listed,
    )?;
    io.write(&list_path, Bytes::from(list)).await?;
    let added: Vec<(i32, &DataFile)> = append.files.iter().map(|(s, f)| (*s, f)).collect();
    let mut summary = append_summary(parent.and_then(|p| p.summary.as_ref()), &added);
    summary
        .properties_mut()
        .extend(append.summary_properties.clone());
    let added_rows = added.iter().map(|(_, f)| f.record_count).sum();
    let snapshot = Snapshot {
        snapshot_id,
        parent_snapshot_id: parent_id,
        sequence_number,
        timestamp_ms: now_ms().max(base.last_updated_ms),
        manifest_list: Some(list_path.clone()),
        manifests: None,
        summary: Some(summary_with_engine(summary)),
        schema_id: Some(base.current_schema_id),
        first_row_id: None,
        added_rows: (base.format_version == FormatVersion::V3).then_some(added_rows),
        key_id: None,
    };
    let next = base.with_snapshot(snapshot, &append.branch, Some(base_location))?;
    swap(io, target, base_version, next, vec![list_path]).await
}

/// Writes `next` as the table's next metadata file and swaps the pointer to it from
/// `base`. On a lost race (the file name taken, or the catalog row moved on) the
/// metadata file and `written` (the attempt's own files) are deleted.
async fn swap(
    io: &FileIO,
    target: &CommitTarget<'_>,
    base: &Base,
    next: TableMetadata,
    mut written: Vec<String>,
) -> std::result::Result<Table, AttemptError> {
    let next_location = base.next_location.clone();
    let delete_dropped = match properties::METADATA_DELETE_AFTER_COMMIT.get(&next) {
        Ok(enabled) => enabled,
        Err(e) => {
            delete_all(io, &written).await;
            return Err(e.into());
        }
    };
    let json = serde_json::to_vec_pretty(&next.to_json()).map_err(|e| {
        Error::InvalidArgument(format!(
            "metadata of {next_location} is not serializable: {e}"
        ))
    })?;
    if !io.write_new(&next_location, Bytes::from(json)).await? {
        delete_all(io, &written).await;
        return Err(AttemptError::Lost);
    }
    match target {
        CommitTarget::Directory { .. } => {
            if let Some(version) = base.next_version {
                write_version_hint(io, &base.metadata.location, version).await;
            }
        }
        CommitTarget::Catalog {
            catalog,
            namespace,
            table,
        } => {
            let swapped =
                catalog.commit_metadata_location(namespace, table, &base.location, &next_location);
            if let Err(e) = swapped {
                written.push(next_location);
                delete_all(io, &written).await;
                return Err(match e {
                    Error::CommitConflict { .. } => AttemptError::Lost,
                    other => AttemptError::Failed(other),
                });
            }
        }
    }
    if delete_dropped {
        delete_dropped_metadata_files(io, &base.metadata, &next).await;
    }
    Ok(Table::from_parts(
        io.clone(),
        next_location,
        std::sync::Arc::new(next),
    ))
}

/// Commits a change of metadata alone (refs, a rollback, expired snapshots): `change` turns
/// the table's current metadata into the next one (without the metadata-log entry, which is
/// added here), and the pointer is swapped as an append's is. On a lost race the table is
/// reloaded and `change` applied to the new base, per the table's `commit.retry.*`; an error
/// from `change` ends the commit.
pub async fn commit_metadata_change(
    io: &FileIO,
    target: CommitTarget<'_>,
    change: impl Fn(&TableMetadata) -> Result<TableMetadata>,
) -> Result<Table> {
    let mut base = target.load(io).await?;
    let policy = RetryPolicy::of(&base.metadata)?;
    let mut attempt = 0;
    loop {
        let lock = io.lock_commits(&base.metadata.location, LOCK_WAIT).await;
        if let Some(fresh) = target.refresh(io, &base).await? {
            base = fresh;
        }
        let mut next = change(&base.metadata)?;
        next.log_previous_file(&base.location, base.metadata.last_updated_ms)?;
        let swapped = swap(io, &target, &base, next, Vec::new()).await;
        drop(lock);
        match swapped {
            Ok(table) => return Ok(table),
            Err(AttemptError::Lost) if attempt < policy.retries => {
                tokio::time::sleep(policy.jittered_wait(attempt)).await;
                attempt += 1;
            }
            Err(AttemptError::Lost) => return Err(policy.exhausted(&target, attempt)),
            Err(AttemptError::Failed(e)) => return Err(e),
        }
    }
}

/// With [`properties::METADATA_DELETE_AFTER_COMMIT`] set in the new metadata, deletes the
/// metadata files the base's log named and the new log no longer does, as Java's commit does.
/// Best effort (after the swap, the commit stands whatever happens here); a file still named
/// by the new log is never deleted.
async fn delete_dropped_metadata_files(io: &FileIO, base: &TableMetadata, next: &TableMetadata) {
    let kept: std::collections::HashSet<&str> = next
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.as_str())
        .collect();
    let Ok(scope) = TableScope::new(io, &next.location) else {
        return;
    };
    let dropped = base
        .metadata_log
        .iter()
        .map(|e| e.metadata_file.as_str())
        .filter(|file| !kept.contains(file));
    for file in dropped {
        // Only under the table location (a crafted log may name any path).
        let _ = scope.delete(file).await;
    }
}

/// The new manifests of an append: one per partition spec, with every file ADDED. Entries
/// leave their sequence numbers to inheritance, so the manifests stay valid when a retry
/// commits them with another sequence number.
async fn write_new_manifests(
    io: &FileIO,
    base: &TableMetadata,
    append: &AppendFiles,
    snapshot_id: i64,
) -> Result<Vec<ManifestFile>> {
    let mut by_spec: BTreeMap<i32, Vec<&DataFile>> = BTreeMap::new();
    for (spec, file) in &append.files {
        by_spec.entry(*spec).or_default().push(file);
    }
    let schema = base.current_schema();
    let mut written = Vec::new();
    for (spec_id, files) in by_spec {
        let spec = base.partition_spec_by_id(spec_id).ok_or_else(|| {
            Error::InvalidArgument(format!("partition spec {spec_id} is not in the table"))
        })?;
        let partition_type = crate::scan::partition_type(base, spec)?;
        let entries: Vec<ManifestEntry> = files
            .iter()
            .map(|f| ManifestEntry {
                status: ManifestStatus::Added,
                snapshot_id: Some(snapshot_id),
                sequence_number: None,
                file_sequence_number: None,
                data_file: (*f).clone(),
            })
            .collect();
        let bytes = write_manifest(base, schema, spec, ManifestContent::Data, &entries)?;
        let path = format!(
            "{}/metadata/{}-m{}.avro",
            base.location.trim_end_matches('/'),
            uuid::Uuid::new_v4(),
            written.len()
        );
        let length = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        io.write(&path, Bytes::from(bytes)).await?;
        let mut manifest =
            ManifestFile::new(path, length, spec_id, ManifestContent::Data, snapshot_id);
        manifest.added_files_count = Some(i32::try_from(files.len()).unwrap_or(i32::MAX));
        manifest.existing_files_count = Some(0);
        manifest.deleted_files_count = Some(0);
        manifest.added_rows_count = Some(files.iter().map(|f| f.record_count).sum());
        manifest.existing_rows_count = Some(0);
        manifest.deleted_rows_count = Some(0);
        manifest.partitions = Some(summarize(
            &partition_type,
            files.iter().map(|f| f.partition.as_slice()),
        ));
        written.push(manifest);
    }
    Ok(written)
}

/// A catalog table's next metadata file: `NNNNN-uuid.metadata.json`, numbered after the
/// current one (a fresh uuid keeps concurrent writers' files apart; the catalog decides).
fn catalog_metadata_location(current: &str, table_location: &str) -> String {
    let dir = format!("{}/metadata", table_location.trim_end_matches('/'));
    let name = current.rsplit('/').next().unwrap_or(current);
    let number = name
        .split(['-', '.'])
        .next()
        .and_then(|n| n.trim_start_matches('v').parse::<u64>().ok())
        .unwrap_or(0);
    format!(
        "{dir}/{:05}-{}.metadata.json",
        number + 1,
        uuid::Uuid::new_v4()
    )
}

/// Deletes files of a failed attempt (best effort: they are unreferenced either way).
async fn delete_all(io: &FileIO, paths: &[String]) {
    for path in paths {
        let _ = io.delete(path).await;
    }
}

fn manifest_paths(manifests: &[ManifestFile]) -> Vec<String> {
    manifests.iter().map(|m| m.manifest_path.clone()).collect()
}

fn summary_with_engine(mut summary: Summary) -> Summary {
    let properties = summary.properties_mut();
    properties.insert("engine-name".into(), "icefloe".into());
    properties.insert(
        "engine-version".into(),
        env!("CARGO_PKG_VERSION").to_string(),
    );
    summary
}

/// A uniform random number in [0, 1), from the operating system's randomness (through
/// `uuid`'s v4 generator, already a dependency).
fn unit_random() -> f64 {
    let bits = (uuid::Uuid::new_v4().as_u128() >> 75) as u64; // 53 random bits
    bits as f64 / (1u64 << 53) as f64
}

/// The current time in epoch milliseconds (0 before 1970).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
