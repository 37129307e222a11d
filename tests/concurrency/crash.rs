//! The crash suite (issue 14, item 13): a writer process killed (SIGKILL) at each step of the
//! commit protocol of an append, a metadata-only commit (a tag), an expiration and a
//! copy-on-write UPDATE (issue 18, item 9), on a
//! directory table and on a SQLite catalog table. Afterwards the table reads the last
//! acknowledged state (or, killed after the commit point, the committed one), it takes the next
//! commit, `remove_orphan_files` removes exactly the leftovers (after it the table's files are
//! exactly what its metadata reaches), and PyIceberg reads the same rows.
//!
//! The writer is this test executable started again (`ICEFLOE_CRASH`), with an object store
//! for `file://` that counts every mutating request (put, multipart put, copy, delete) and
//! kills the process before request `k`, in its middle (the staging file `<path>#1` that the
//! local store writes first, half written), or right after it. A dry run of each scenario
//! learns its requests; then every request and phase is a case of its own, on a fresh table.

use std::collections::BTreeSet;
use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::arrow::array::{AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionContext, col, lit};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use icefloe::catalog::SqliteCatalog;
use icefloe::maintenance::{ExpireSnapshots, SnapshotManager};
use icefloe::maintenance::{OrphanFiles, remove_orphan_files};
use icefloe::spec::{NestedField, PrimitiveType, Schema, SnapshotSelector};
use icefloe::to_arrow::schema_to_arrow;
use icefloe::write::{TableCreation, append_batches};
use icefloe::{FileIO, IcebergTableProvider, Relocation, Table, WriteTarget};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// What the killed writer does: one change to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Appends the row 99.
    Append,
    /// Creates tag `t1` (a metadata-only commit).
    Tag,
    /// Expires the snapshot a rollback left off main (deleting its files).
    Expire,
    /// `UPDATE t SET id = id + 100 WHERE id = 1` (copy-on-write: a data file written, one
    /// removed, manifests rewritten).
    Update,
}

/// Where the killed writer's request `k` dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Before,
    /// After the local store's staging file is half written (puts only).
    Mid,
    After,
}

/// One table under test: a directory table or `db.t` of a SQLite catalog.
#[derive(Debug, Clone)]
struct Place {
    dir: PathBuf,
    catalog: Option<PathBuf>,
}

impl Place {
    fn location(&self) -> String {
        self.dir.join("t").display().to_string()
    }

    /// A fresh table: created, rows 1 and 2 appended; for an expiration also row 3, then
    /// rolled back to the second commit (the third is left to expire).
    async fn create(dir: &Path, catalog: bool, action: Action) -> (Self, Option<i64>) {
        let place = Self {
            dir: dir.to_path_buf(),
            catalog: catalog.then(|| dir.join("catalog.db")),
        };
        let io = FileIO::default();
        let schema = Schema::new(0, vec![NestedField::required(1, "id", PrimitiveType::Long)]);
        let creation = TableCreation::new(schema);
        match &place.catalog {
            None => drop(
                creation
                    .create_at(&io, &place.location())
                    .await
                    .expect("create"),
            ),
            Some(db) => {
                let c = SqliteCatalog::create(db, "default", io.clone()).expect("catalog");
                c.create_namespace("db", &Default::default())
                    .expect("namespace");
                c.create_table_at("db", "t", &creation, &place.location())
                    .await
                    .expect("create");
            }
        }
        for id in [1, 2] {
            place.append(&io, id).await.expect("append");
        }
        let mut doomed = None;
        if action == Action::Expire {
            let keep = place.table(&io).await.metadata().current_snapshot_id;
            let third = place.append(&io, 3).await.expect("append");
            doomed = third.metadata().current_snapshot_id;
            let manager = SnapshotManager::new(place.target(&io));
            manager
                .rollback_to_snapshot(keep.expect("a snapshot"))
                .await
                .expect("rollback");
        }
        (place, doomed)
    }

    fn target(&self, io: &FileIO) -> WriteTarget {
        match &self.catalog {
            None => WriteTarget::directory(io, &self.location()).expect("target"),
            Some(db) => WriteTarget::sqlite(
                Arc::new(SqliteCatalog::open(db, None, io.clone()).expect("catalog")),
                "db",
                "t",
            )
            .expect("target"),
        }
    }

    /// The table's current version, loaded as a writer loads it.
    async fn table(&self, io: &FileIO) -> Table {
        self.target(io).load_for_write().await.expect("load")
    }

    async fn append(&self, io: &FileIO, id: i64) -> icefloe::Result<Table> {
        let table = self.table(io).await;
        let schema = Arc::new(schema_to_arrow(table.metadata().current_schema())?);
        let batch = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![id]))])
            .map_err(datafusion::error::DataFusionError::from)?;
        let target = self.target(io);
        append_batches(&target, &[batch], "main").await
    }

    fn to_env(&self, action: Action, doomed: Option<i64>, kill: Option<(usize, Phase)>) -> String {
        format!(
            "{}|{}|{action:?}|{}|{}",
            self.dir.display(),
            self.catalog.is_some(),
            doomed.unwrap_or(0),
            match kill {
                None => "dry".to_string(),
                Some((k, phase)) => format!("{k}:{phase:?}"),
            }
        )
    }
}

/// The state a reader sees: the rows, the refs and the snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    rows: Vec<i64>,
    refs: BTreeSet<String>,
    snapshots: usize,
}

async fn state(place: &Place) -> State {
    let io = FileIO::default();
    let table = place.table(&io).await;
    let refs = table.metadata().refs.keys().cloned().collect();
    let snapshots = table.metadata().snapshots.len();
    let ctx = SessionContext::new();
    let provider =
        IcebergTableProvider::try_new(table, SnapshotSelector::Current).expect("provider");
    ctx.register_table("t", Arc::new(provider))
        .expect("register");
    let batches = ctx
        .sql("SELECT id FROM t ORDER BY id")
        .await
        .expect("plan")
        .collect()
        .await
        .expect("read");
    let rows = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    State {
        rows,
        refs,
        snapshots,
    }
}

/// A mutating request as the dry run logged it.
#[derive(Debug, Clone)]
struct Request {
    kind: &'static str,
    path: String,
}

/// Runs every crash case; returns the cases' descriptions and the PyIceberg checks to make.
pub(crate) fn run_all(filter: &[String]) -> Vec<(PathBuf, Option<PathBuf>, Vec<i64>)> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut for_pyiceberg = Vec::new();
    let mut cases = 0;
    let started = std::time::Instant::now();
    for catalog in [false, true] {
        for action in [Action::Append, Action::Tag, Action::Expire, Action::Update] {
            let name = format!(
                "crash_{}_{action:?}",
                if catalog { "catalog" } else { "directory" }
            )
            .to_lowercase();
            if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
                continue;
            }
            let n = runtime.block_on(scenario(catalog, action, &mut for_pyiceberg));
            println!("ok: {name}: {n} kill points");
            cases += n;
        }
    }
    if cases > 0 {
        println!(
            "ok: crash suite: {cases} writers killed, every table consistent ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    for_pyiceberg
}

/// One scenario: the dry run, then a killed writer at every request and phase.
async fn scenario(
    catalog: bool,
    action: Action,
    for_pyiceberg: &mut Vec<(PathBuf, Option<PathBuf>, Vec<i64>)>,
) -> usize {
    let dry_dir = tempfile::tempdir().expect("tempdir");
    let (place, doomed) = Place::create(dry_dir.path(), catalog, action).await;
    let before = state(&place).await;
    let log = dry_dir.path().join("requests.log");
    let status = writer(&place, action, doomed, None, Some(&log));
    assert!(status.success(), "{action:?} dry run: {status}");
    let after = state(&place).await;
    assert_ne!(before, after, "{action:?}: the dry run changed nothing");
    let requests = read_log(&log);
    let commit = requests
        .iter()
        .position(|r| r.kind == "create")
        .expect("the commit creates a metadata file")
        + 1;
    let mut kills = 0;
    for (i, request) in requests.iter().enumerate() {
        let k = i + 1;
        for phase in [Phase::Before, Phase::Mid, Phase::After] {
            if phase == Phase::Mid && request.kind == "delete" {
                continue;
            }
            let dir = tempfile::tempdir().expect("tempdir");
            let (place, doomed) = Place::create(dir.path(), catalog, action).await;
            let status = writer(&place, action, doomed, Some((k, phase)), None);
            let what = format!(
                "{action:?} killed {phase:?} request {k} ({} {})",
                request.kind, request.path
            );
            assert!(
                std::os::unix::process::ExitStatusExt::signal(&status) == Some(libc::SIGKILL),
                "{what}: the writer was not killed: {status}"
            );
            // The commit point: the metadata file's creation for a directory table (its
            // completion), the pointer row's update after it for a catalog table.
            let committed = match place.catalog {
                None => k > commit || (k == commit && phase == Phase::After),
                Some(_) => k > commit,
            };
            let expected = if committed { &after } else { &before };
            let rows = check_after_crash(&place, expected, &what).await;
            for_pyiceberg.push((place.dir.clone(), place.catalog.clone(), rows));
            std::mem::forget(dir); // kept for the PyIceberg check; removed with the run's root
            kills += 1;
        }
    }
    kills
}

/// After a crash: the expected state, then writable, then orphans removed exactly. Returns
/// the rows the table holds at the end (for PyIceberg).
async fn check_after_crash(place: &Place, expected: &State, what: &str) -> Vec<i64> {
    let read = state(place).await;
    assert_eq!(&read, expected, "{what}: the state read after the crash");
    let io = FileIO::default();
    let table = place.table(&io).await;
    let options = OrphanFiles::new().with_older_than_ms(now_ms() + 86_400_000);
    remove_orphan_files(&table, &options)
        .await
        .unwrap_or_else(|e| panic!("{what}: remove orphans: {e}"));
    let reachable: BTreeSet<String> = icefloe::write::reachable_files(&table)
        .await
        .expect("reachable")
        .into_iter()
        .map(|f| f.trim_start_matches("file://").to_string())
        .collect();
    let mut present = files_under(&place.dir.join("t"));
    present.remove(&format!("{}/metadata/version-hint.text", place.location()));
    // The local writers' commit lock (hidden: never an orphan).
    present.remove(&format!(
        "{}/metadata/.icefloe-commit.lock",
        place.location()
    ));
    assert_eq!(present, reachable, "{what}: files after removing orphans");
    assert_eq!(
        &state(place).await,
        expected,
        "{what}: after removing orphans"
    );
    place
        .append(&io, 1000)
        .await
        .unwrap_or_else(|e| panic!("{what}: the next commit: {e}"));
    let mut rows = expected.rows.clone();
    rows.push(1000);
    rows.sort();
    assert_eq!(
        state(place).await.rows,
        rows,
        "{what}: after the next commit"
    );
    rows
}

fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                pending.push(entry.path());
            } else {
                found.insert(entry.path().display().to_string());
            }
        }
    }
    found
}

fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Starts the writer process and waits for it.
fn writer(
    place: &Place,
    action: Action,
    doomed: Option<i64>,
    kill: Option<(usize, Phase)>,
    log: Option<&Path>,
) -> std::process::ExitStatus {
    let exe = std::env::current_exe().expect("test executable");
    let mut command = Command::new(exe);
    command.env("ICEFLOE_CRASH", place.to_env(action, doomed, kill));
    if let Some(log) = log {
        command.env("ICEFLOE_CRASH_LOG", log);
    }
    command.status().expect("start the writer")
}

fn read_log(path: &Path) -> Vec<Request> {
    std::fs::read_to_string(path)
        .expect("request log")
        .lines()
        .map(|line| {
            let (kind, path) = line.split_once(' ').expect("kind path");
            let kind = match kind {
                "put" => "put",
                "create" => "create",
                "delete" => "delete",
                _ => "other",
            };
            Request {
                kind,
                path: path.to_string(),
            }
        })
        .collect()
}

/// The writer process (`ICEFLOE_CRASH` set): does its action through a [`KillingStore`].
pub(crate) fn writer_main(spec: &str) {
    let parts: Vec<&str> = spec.split('|').collect();
    let [dir, catalog, action, doomed, kill] = parts.as_slice() else {
        panic!("ICEFLOE_CRASH: {spec}");
    };
    let place = Place {
        dir: PathBuf::from(dir),
        catalog: (*catalog == "true").then(|| Path::new(dir).join("catalog.db")),
    };
    let kill = kill.split_once(':').map(|(k, phase)| {
        let phase = match phase {
            "Before" => Phase::Before,
            "Mid" => Phase::Mid,
            _ => Phase::After,
        };
        (k.parse::<usize>().expect("request number"), phase)
    });
    let log = std::env::var_os("ICEFLOE_CRASH_LOG").map(PathBuf::from);
    let store = KillingStore {
        inner: Arc::new(LocalFileSystem::new()),
        requests: Arc::new(AtomicUsize::new(0)),
        kill,
        log,
    };
    let runtime_env = Arc::new(RuntimeEnv::default());
    let url = url::Url::parse("file://").expect("url");
    runtime_env.register_object_store(&url, Arc::new(store));
    let io = FileIO::new(Arc::clone(&runtime_env), Relocation::new());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        match *action {
            "Append" => drop(place.append(&io, 99).await.expect("append")),
            "Update" => {
                let ctx = SessionContext::new_with_config_rt(
                    datafusion::prelude::SessionConfig::new(),
                    Arc::clone(&runtime_env),
                );
                let name = match &place.catalog {
                    Some(db) => {
                        icefloe::session::register_catalog_as_default(&ctx, db, Relocation::new())
                            .await
                            .expect("catalog");
                        "db.t".to_string()
                    }
                    None => {
                        icefloe::sql::register(&ctx);
                        let create = format!(
                            "CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{}'",
                            place.location()
                        );
                        icefloe::sql::sql(&ctx, &create).await.expect("open");
                        "t".to_string()
                    }
                };
                let changes = icefloe::sql::TableChanges::of(&ctx, &name)
                    .await
                    .expect("table");
                let updated = changes
                    .update()
                    .set("id", col("id") + lit(100i64))
                    .filter(col("id").eq(lit(1i64)))
                    .execute()
                    .await
                    .expect("update");
                assert_eq!(updated.rows_updated, 1);
            }
            "Tag" => {
                let manager = SnapshotManager::new(place.target(&io));
                manager.create_tag("t1", None, None).await.expect("tag");
            }
            _ => {
                let manager = SnapshotManager::new(place.target(&io));
                let options = ExpireSnapshots {
                    snapshot_ids: vec![doomed.parse().expect("snapshot id")],
                    ..Default::default()
                };
                let report = manager.expire_snapshots(&options).await.expect("expire");
                assert!(
                    !report.deleted_files.is_empty(),
                    "the expiration deletes files"
                );
            }
        }
    });
}

/// The local file system, killing its process at one mutating request (see the module docs).
#[derive(Debug)]
struct KillingStore {
    inner: Arc<LocalFileSystem>,
    requests: Arc<AtomicUsize>,
    kill: Option<(usize, Phase)>,
    log: Option<PathBuf>,
}

impl fmt::Display for KillingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KillingStore({})", self.inner)
    }
}

impl KillingStore {
    /// Counts a mutating request; kills the process when it is the chosen one and `phase`
    /// is the chosen phase (`Mid` first leaves a half-written staging file at `staging`).
    fn step(
        &self,
        kind: &str,
        location: &ObjectPath,
        n: Option<usize>,
        phase: Phase,
        payload: Option<&[u8]>,
    ) -> usize {
        let n = n.unwrap_or_else(|| self.requests.fetch_add(1, Ordering::SeqCst) + 1);
        if phase == Phase::Before
            && let Some(log) = &self.log
        {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .expect("log");
            writeln!(file, "{kind} {location}").expect("log");
        }
        if self.kill == Some((n, phase)) {
            if phase == Phase::Mid
                && let (Some(bytes), Ok(path)) = (payload, self.inner.path_to_filesystem(location))
            {
                let staging = PathBuf::from(format!("{}#1", path.display()));
                if let Some(parent) = staging.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = std::fs::write(&staging, &bytes[..bytes.len() / 2]);
            }
            // SAFETY: kill(2) on our own pid; the process ends here.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        n
    }
}

#[async_trait]
impl ObjectStore for KillingStore {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let kind = match opts.mode {
            object_store::PutMode::Create if location.as_ref().ends_with(".metadata.json") => {
                "create"
            }
            _ => "put",
        };
        let bytes: Bytes = payload.clone().into();
        let n = self.step(kind, location, None, Phase::Before, None);
        self.step(kind, location, Some(n), Phase::Mid, Some(&bytes));
        let result = self.inner.put_opts(location, payload, opts).await;
        self.step(kind, location, Some(n), Phase::After, None);
        result
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        // Small test files never take this path; counted, killed before, like a put.
        let n = self.step("put", location, None, Phase::Before, None);
        let upload = self.inner.put_multipart_opts(location, opts).await;
        self.step("put", location, Some(n), Phase::After, None);
        upload
    }

    async fn get_opts(
        &self,
        location: &ObjectPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &ObjectPath,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
        let store = Self {
            inner: Arc::clone(&self.inner),
            requests: Arc::clone(&self.requests),
            kill: self.kill,
            log: self.log.clone(),
        };
        let store = Arc::new(store);
        locations
            .and_then(move |location| {
                let store = Arc::clone(&store);
                async move {
                    let n = store.step("delete", &location, None, Phase::Before, None);
                    let owned = location.clone();
                    let one = futures::stream::once(async move { Ok(owned) }).boxed();
                    let deleted: Vec<ObjectPath> =
                        store.inner.delete_stream(one).try_collect().await?;
                    store.step("delete", &location, Some(n), Phase::After, None);
                    Ok(deleted.into_iter().next().unwrap_or(location))
                }
            })
            .boxed()
    }

    fn list(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &ObjectPath,
        to: &ObjectPath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        let n = self.step("put", to, None, Phase::Before, None);
        let copied = self.inner.copy_opts(from, to, options).await;
        self.step("put", to, Some(n), Phase::After, None);
        copied
    }
}
