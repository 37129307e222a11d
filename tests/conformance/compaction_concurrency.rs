//! Compaction racing other writers (issue 20, item 5): `rewrite_data_files` plans and starts
//! rewriting; on its first progress report (every rewrite stream waiting) another writer
//! commits through the same SQLite catalog from a thread of its own; then the compaction
//! commits, or fails. Each rule of a compaction's `replace` commit (Iceberg Java's, snapshot
//! isolation, the starting sequence number) is one test: what the rules allow commits on top
//! of the other writer's snapshot; what they forbid fails with `CommitConflict` and leaves the
//! table as the other writer left it, with no file of the compaction left behind. The rows
//! are checked against the rows the test wrote minus those it deleted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once};

use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema as ArrowSchema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{SessionContext, col, lit};
use icefloe::catalog::SqliteCatalog;
use icefloe::maintenance::{
    OrphanFiles, Progress, RewriteDataFiles, RewriteDataFilesResult, remove_orphan_files,
    rewrite_data_files,
};
use icefloe::spec::{DataContentType, DataFile, FileFormat, Literal};
use icefloe::transaction::RowDelta;
use icefloe::{Error, FileIO, Table, WriteTarget};

/// Ids written to `eu` (three commits: 1-3, 4-6, 7-9) and to `us` (ids + 100).
const EU: [i64; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 9];

fn all_ids() -> BTreeSet<i64> {
    EU.iter().flat_map(|&id| [id, id + 100]).collect()
}

async fn session(db: &Path) -> SessionContext {
    crate::support::catalog_session(db).await
}

use crate::support::run_sql as run;

async fn int_column(ctx: &SessionContext, sql: &str) -> Vec<i64> {
    let batches = run(ctx, sql).await;
    batches
        .iter()
        .flat_map(|b| {
            let column = datafusion::arrow::compute::cast(b.column(0), &DataType::Int64).unwrap();
            column.as_primitive::<Int64Type>().values().to_vec()
        })
        .collect()
}

/// A catalog with `db.t (id, region)` partitioned by region, `properties` set, written in
/// three commits each adding one file to `eu` and one to `us`.
struct Fixture {
    _dir: tempfile::TempDir,
    db: PathBuf,
    target: WriteTarget,
}

impl Fixture {
    async fn new(properties: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("catalog.db");
        SqliteCatalog::create(&db, "default", FileIO::default()).unwrap();
        let ctx = session(&db).await;
        run(&ctx, "CREATE SCHEMA db").await;
        let create = format!(
            "CREATE TABLE db.t (id BIGINT NOT NULL, region VARCHAR) PARTITION BY (region) \
             {properties}"
        );
        run(&ctx, &create).await;
        for chunk in EU.chunks(3) {
            let rows: Vec<String> = chunk
                .iter()
                .flat_map(|id| [format!("({id}, 'eu')"), format!("({}, 'us')", id + 100)])
                .collect();
            run(
                &ctx,
                &format!("INSERT INTO db.t VALUES {}", rows.join(", ")),
            )
            .await;
        }
        let catalog = Arc::new(SqliteCatalog::open(&db, None, FileIO::default()).unwrap());
        let target = WriteTarget::sqlite(catalog, "db", "t").unwrap();
        Self {
            _dir: dir,
            db,
            target,
        }
    }

    async fn ids(&self) -> BTreeSet<i64> {
        let ctx = session(&self.db).await;
        int_column(&ctx, "SELECT id FROM db.t")
            .await
            .into_iter()
            .collect()
    }

    async fn table(&self) -> Table {
        self.target.load().await.unwrap()
    }

    /// Live data files of `region`.
    async fn data_files(&self, region: &str) -> usize {
        let ctx = session(&self.db).await;
        let sql = format!(
            "SELECT count(*) FROM db.\"t$data_files\" WHERE partition['region'] = '{region}'"
        );
        int_column(&ctx, &sql).await[0] as usize
    }

    /// The live delete files' formats.
    async fn delete_file_formats(&self) -> Vec<String> {
        let ctx = session(&self.db).await;
        let batches = run(&ctx, "SELECT file_format FROM db.\"t$delete_files\"").await;
        batches
            .iter()
            .flat_map(|b| {
                let column =
                    datafusion::arrow::compute::cast(b.column(0), &DataType::Utf8).unwrap();
                let strings: Vec<String> = column
                    .as_string::<i32>()
                    .iter()
                    .flatten()
                    .map(String::from)
                    .collect();
                strings
            })
            .collect()
    }

    /// Files under the table location that no metadata reaches (of any age).
    async fn orphans(&self) -> Vec<String> {
        let options = OrphanFiles::new().with_older_than_ms(i64::MAX).dry_run();
        remove_orphan_files(&self.table().await, &options)
            .await
            .unwrap()
            .orphan_files
    }

    /// Compacts with `options`; on the first progress report, `other` commits (run to the end
    /// on a thread of its own while every rewrite stream waits).
    async fn compact_racing<F, Fut>(
        &self,
        options: RewriteDataFiles,
        other: F,
    ) -> icefloe::Result<RewriteDataFilesResult>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let race = Race::new(other);
        let result =
            rewrite_data_files(&self.target, &options.with_progress(race.progress())).await;
        assert!(
            race.ran(),
            "the other writer never ran: no progress was reported"
        );
        result
    }
}

/// The other writer's work, taken by the first progress report.
type Job = Arc<Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// Another writer's commit, run once from inside a compaction (see [`Fixture::compact_racing`]).
struct Race {
    once: Arc<Once>,
    job: Job,
}

impl Race {
    fn new<F, Fut>(other: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let job = move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(other());
        };
        Self {
            once: Arc::new(Once::new()),
            job: Arc::new(Mutex::new(Some(Box::new(job)))),
        }
    }

    /// The callback: the first call runs the job on a new thread and waits for it; calls
    /// meanwhile (other streams) wait too.
    fn progress(&self) -> Progress {
        let (once, job) = (Arc::clone(&self.once), Arc::clone(&self.job));
        Progress::new(move |_, _| {
            tokio::task::block_in_place(|| {
                once.call_once(|| {
                    let job = job.lock().unwrap().take().unwrap();
                    std::thread::spawn(job)
                        .join()
                        .expect("the other writer panicked");
                })
            })
        })
    }

    fn ran(&self) -> bool {
        self.once.is_completed()
    }
}

/// The other writer: `statements` through a session of its own on the catalog `db`.
fn writer(
    db: &Path,
    statements: &[&str],
) -> impl FnOnce() -> futures::future::BoxFuture<'static, ()> + Send + 'static {
    let db = db.to_path_buf();
    let statements: Vec<String> = statements.iter().map(|s| s.to_string()).collect();
    move || {
        Box::pin(async move {
            let ctx = session(&db).await;
            for statement in &statements {
                run(&ctx, statement).await;
            }
        })
    }
}

fn rewrite_all() -> RewriteDataFiles {
    RewriteDataFiles::new()
        .with_option("rewrite-all", "true")
        .unwrap()
}

/// The error is a commit conflict; the table's head is still the other writer's snapshot and
/// nothing the compaction wrote is left.
async fn assert_conflict_left_nothing(
    fixture: &Fixture,
    outcome: icefloe::Result<RewriteDataFilesResult>,
    head_before: Option<i64>,
) {
    let table = fixture.table().await;
    let current = table.metadata().current_snapshot().unwrap();
    assert_eq!(
        current.parent_snapshot_id, head_before,
        "only the other writer committed"
    );
    match outcome {
        Err(e @ Error::CommitConflict { .. }) => assert!(
            e.to_string().contains(&current.snapshot_id.to_string()),
            "the error names the other writer's snapshot {}: {e}",
            current.snapshot_id
        ),
        other => panic!("expected a commit conflict, got {other:?}"),
    }
    assert_eq!(fixture.orphans().await, Vec::<String>::new());
}

fn head(table: &Table) -> Option<i64> {
    table.metadata().current_snapshot().map(|s| s.snapshot_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_and_a_concurrent_insert_both_commit() {
    let fixture = Fixture::new("").await;
    let other = writer(
        &fixture.db,
        &["INSERT INTO db.t VALUES (50, 'eu'), (150, 'us')"],
    );
    let done = fixture.compact_racing(rewrite_all(), other).await.unwrap();
    assert_eq!(done.rewritten_data_files, 6);
    assert_eq!(done.added_data_files, 2);
    let mut expected = all_ids();
    expected.extend([50, 150]);
    assert_eq!(fixture.ids().await, expected);
    // The compacted file and the inserted one, per partition.
    assert_eq!(fixture.data_files("eu").await, 2);
    assert_eq!(fixture.data_files("us").await, 2);
    assert_eq!(fixture.orphans().await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_copy_on_write_delete_of_a_rewritten_file_conflicts() {
    let fixture = Fixture::new("").await;
    let before = head(&fixture.table().await);
    let other = writer(&fixture.db, &["DELETE FROM db.t WHERE id = 5"]);
    let outcome = fixture.compact_racing(rewrite_all(), other).await;
    assert_conflict_left_nothing(&fixture, outcome, before).await;
    let mut expected = all_ids();
    expected.remove(&5);
    assert_eq!(fixture.ids().await, expected, "no row lost or resurrected");
    assert_eq!(fixture.data_files("eu").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_position_delete_of_a_rewritten_file_conflicts() {
    let props = "TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')";
    let fixture = Fixture::new(props).await;
    let before = head(&fixture.table().await);
    let other = writer(&fixture.db, &["DELETE FROM db.t WHERE id IN (2, 102)"]);
    let outcome = fixture.compact_racing(rewrite_all(), other).await;
    assert_conflict_left_nothing(&fixture, outcome, before).await;
    assert_eq!(fixture.delete_file_formats().await.len(), 2);
    assert!(
        fixture
            .delete_file_formats()
            .await
            .iter()
            .all(|f| f.eq_ignore_ascii_case("parquet")),
        "v2 position delete files"
    );
    let mut expected = all_ids();
    expected.remove(&2);
    expected.remove(&102);
    assert_eq!(fixture.ids().await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_deletion_vector_on_a_rewritten_file_conflicts() {
    let props = "TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read')";
    let fixture = Fixture::new(props).await;
    let before = head(&fixture.table().await);
    let other = writer(&fixture.db, &["DELETE FROM db.t WHERE id = 8"]);
    let outcome = fixture.compact_racing(rewrite_all(), other).await;
    assert_conflict_left_nothing(&fixture, outcome, before).await;
    let formats = fixture.delete_file_formats().await;
    assert_eq!(formats.len(), 1);
    assert!(formats[0].eq_ignore_ascii_case("puffin"), "{formats:?}");
    let mut expected = all_ids();
    expected.remove(&8);
    assert_eq!(fixture.ids().await, expected);
}

/// Compaction of `eu` only (its `where`) while a DELETE of each mode removes rows of `us`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_delete_in_another_partition_does_not_conflict() {
    for mode in ["copy-on-write", "merge-on-read"] {
        let props = format!("TBLPROPERTIES ('write.delete.mode' = '{mode}')");
        let fixture = Fixture::new(&props).await;
        let table = fixture.table().await;
        let schema = table.metadata().current_schema();
        let eu = icefloe::expr::convert::convert(&col("region").eq(lit("eu")), schema).unwrap();
        let options = rewrite_all().with_filter(eu);
        let other = writer(&fixture.db, &["DELETE FROM db.t WHERE id IN (104, 105)"]);
        let done = fixture.compact_racing(options, other).await.unwrap();
        assert_eq!(done.rewritten_data_files, 3, "{mode}");
        assert_eq!(fixture.data_files("eu").await, 1, "{mode}");
        let mut expected = all_ids();
        expected.remove(&104);
        expected.remove(&105);
        assert_eq!(fixture.ids().await, expected, "{mode}");
        assert_eq!(fixture.orphans().await, Vec::<String>::new(), "{mode}");
    }
}

/// With partial progress each partition's group commits on its own: the `eu` group, whose file
/// a concurrent DELETE rewrote, fails; the `us` group commits; the `eu` group's files are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_partial_progress_only_the_conflicting_group_fails() {
    let fixture = Fixture::new("").await;
    let options = rewrite_all()
        .with_option("partial-progress.enabled", "true")
        .unwrap()
        .with_option("partial-progress.max-commits", "10")
        .unwrap();
    let other = writer(&fixture.db, &["DELETE FROM db.t WHERE id = 1"]);
    let done = fixture.compact_racing(options, other).await.unwrap();
    assert_eq!(done.rewritten_data_files, 3);
    assert_eq!(done.failed_data_files, 3);
    assert_eq!(done.snapshots.len(), 1);
    assert_eq!(fixture.data_files("us").await, 1);
    assert_eq!(fixture.data_files("eu").await, 3);
    let mut expected = all_ids();
    expected.remove(&1);
    assert_eq!(fixture.ids().await, expected);
    assert_eq!(fixture.orphans().await, Vec::<String>::new());
}

/// An equality delete file (written here with the parquet crate, as Flink or PyIceberg would:
/// icefloe writes none) committed while the compaction runs: the compaction commits (its files
/// keep the starting sequence number, below the delete's) and the delete still applies to the
/// rewritten rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_equality_delete_still_applies_after_the_compaction() {
    let fixture = Fixture::new("").await;
    let table = fixture.table().await;
    let location = table.metadata().location.clone();
    let spec_id = table.metadata().default_spec_id;
    let delete = equality_delete(&location, &[3, 7]);
    let target = fixture.target.clone();
    let other = move || async move {
        let base = target.load().await.unwrap();
        let delta = RowDelta::new(head(&base)).add_delete_files([(spec_id, delete)]);
        target
            .transaction(base)
            .with_action(delta)
            .commit()
            .await
            .unwrap();
    };
    let done = fixture.compact_racing(rewrite_all(), other).await.unwrap();
    assert_eq!(done.rewritten_data_files, 6);
    let mut expected = all_ids();
    expected.remove(&3);
    expected.remove(&7);
    assert_eq!(fixture.ids().await, expected, "the equality delete applies");
    assert_eq!(fixture.data_files("eu").await, 1);
    assert_eq!(fixture.delete_file_formats().await.len(), 1);
    assert_eq!(fixture.orphans().await, Vec::<String>::new());
}

/// An equality delete file on `id` (field 1) in partition `eu` deleting `ids`.
fn equality_delete(location: &str, ids: &[i64]) -> DataFile {
    let field = Field::new("id", DataType::Int64, false).with_metadata(
        [("PARQUET:field_id".to_string(), "1".to_string())]
            .into_iter()
            .collect(),
    );
    let schema = Arc::new(ArrowSchema::new(vec![field]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Int64Array::from(ids.to_vec()))],
    )
    .unwrap();
    let path = format!("{location}/data/region=eu/eq-deletes.parquet");
    let local = path.strip_prefix("file://").unwrap_or(&path).to_string();
    let file = std::fs::File::create(&local).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let size = std::fs::metadata(&local).unwrap().len() as i64;
    let mut delete = DataFile::new(
        DataContentType::EqualityDeletes,
        path,
        FileFormat::Parquet,
        ids.len() as i64,
        size,
    );
    delete.equality_ids = Some(vec![1]);
    delete.partition = vec![Some(Literal::String("eu".to_string()))];
    delete
}
