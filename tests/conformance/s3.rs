//! icefloe on S3, against a real S3 server: moto's (`moto[server]` from PyPI), started on
//! 127.0.0.1 by these tests through `tests/interop/s3.py` and ended with them (it stops when
//! its standard input closes, so it never outlives the test process).
//!
//! Runs when `ICEFLOE_PYTHON` names a Python with moto (`.ci/run` sets it up); otherwise each
//! test says loudly that the S3 checks were NOT run, and passes.
//!
//! - a table directory on S3: created, written, read, read back in time, maintained, and read by
//!   PyIceberg (pyarrow's S3 file system);
//! - the PyIceberg fixture warehouse copied into a bucket gives every oracle answer;
//! - writers racing on one S3 table directory lose no commit (S3's conditional writes);
//! - an unreachable endpoint, missing credentials and a store without conditional writes give
//!   typed errors that name the location and never a secret.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionConfig, SessionContext};
use icefloe::io::{FileIO, Relocation, StorageProperties};
use icefloe::{Error, Table};

use crate::pyiceberg::{self, WRITTEN_AT};
use crate::support::{self, FixtureRoot, collect, error_chain, scalar};

use crate::servers::S3 as S3Server;

/// Says something on the test's real stderr: seen in CI logs even when the test passes.
fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

/// The S3 server shared by this binary's tests, started on first use; `None` (said loudly)
/// when there is no Python with moto.
fn server(test: &str) -> Option<&'static S3Server> {
    static SERVER: OnceLock<Result<S3Server, String>> = OnceLock::new();
    let start = || {
        let server = S3Server::start()?;
        say(&format!("s3: moto's S3 server is at {}", server.endpoint));
        Ok(server)
    };
    crate::servers::shared(&SERVER, start, "s3", test)
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/s3.py")
}

fn python() -> Option<PathBuf> {
    std::env::var_os("ICEFLOE_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// A session whose tables reach `server`.
fn session(server: &S3Server) -> SessionContext {
    let config = server
        .storage()
        .for_session(SessionConfig::new().with_information_schema(true));
    let ctx = SessionContext::new_with_config(config);
    icefloe::sql::register(&ctx);
    ctx
}

/// An IO over a runtime of its own (as another process would have).
fn own_io(server: &S3Server) -> FileIO {
    FileIO::new(Arc::new(RuntimeEnv::default()), Relocation::default())
        .with_storage(server.storage())
}

/// What PyIceberg reads of the table whose metadata file is `metadata`: its rows (JSON lines,
/// sorted) and `{"snapshot": id, "rows": n}` lines.
fn pyiceberg_read(server: &S3Server, metadata: &str) -> Vec<String> {
    let out = Command::new(python().unwrap())
        .arg(script())
        .args(["read", &server.endpoint, metadata])
        .output()
        .expect("run s3.py read");
    assert!(
        out.status.success(),
        "PyIceberg could not read {metadata}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

async fn sql(ctx: &SessionContext, query: &str) -> Vec<datafusion::arrow::array::RecordBatch> {
    collect(ctx, query)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

async fn number(ctx: &SessionContext, query: &str) -> i64 {
    scalar(ctx, query, crate::render::Style::PYICEBERG)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"))
        .as_i64()
        .unwrap_or_else(|| panic!("{query}: not a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_table_is_created_written_read_back_in_time_and_maintained() {
    let Some(server) = server("table") else {
        return;
    };
    server.create_bucket("lake-one");
    let ctx = session(server);
    let location = "s3://lake-one/db/events";
    sql(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE events (id BIGINT NOT NULL, kind VARCHAR, day DATE) \
             STORED AS ICEBERG LOCATION '{location}' OPTIONS ('partitioning' 'day(day)')"
        ),
    )
    .await;
    sql(
        &ctx,
        "INSERT INTO events VALUES (1, 'a', DATE '2026-01-01'), (2, 'b', DATE '2026-01-02')",
    )
    .await;
    sql(
        &ctx,
        "INSERT INTO events VALUES (3, 'c', DATE '2026-01-02'), (4, NULL, DATE '2026-01-03')",
    )
    .await;
    assert_eq!(number(&ctx, "SELECT count(*) FROM events").await, 4);
    assert_eq!(number(&ctx, "SELECT sum(id) FROM events").await, 10);
    assert_eq!(
        number(
            &ctx,
            "SELECT count(*) FROM events WHERE day = DATE '2026-01-02'"
        )
        .await,
        2
    );
    let first = number(
        &ctx,
        "SELECT snapshot_id FROM \"events$snapshots\" ORDER BY committed_at LIMIT 1",
    )
    .await;
    assert_eq!(
        number(
            &ctx,
            &format!("SELECT count(*) FROM events VERSION AS OF {first}")
        )
        .await,
        2
    );

    // The metadata files are on S3, written by conditional creates.
    let io = own_io(server);
    let metadata = io.list_dir(&format!("{location}/metadata")).await.unwrap();
    assert!(
        metadata.iter().any(|f| f == "v3.metadata.json"),
        "{metadata:?}"
    );

    // PyIceberg reads the same rows, at every snapshot.
    let table = Table::load(io.clone(), location).await.unwrap();
    let read = pyiceberg_read(server, table.metadata_location());
    let rows: Vec<&String> = read.iter().filter(|l| l.contains("\"id\"")).collect();
    assert_eq!(rows.len(), 4, "{read:?}");
    assert!(rows[0].contains("\"id\": 1") && rows[0].contains("\"kind\": \"a\""));
    assert!(rows[3].contains("\"id\": 4") && rows[3].contains("\"kind\": null"));
    let counts: Vec<&String> = read.iter().filter(|l| l.contains("\"snapshot\"")).collect();
    assert!(
        counts[0].contains(&format!("\"snapshot\": {first}")) && counts[0].contains("\"rows\": 2")
    );
    assert!(counts[1].contains("\"rows\": 4"), "{counts:?}");

    // Maintenance: an orphan is found and deleted; the first snapshot expires and its files go.
    let orphan = format!("{location}/data/orphan.parquet");
    io.write(&orphan, Bytes::from_static(b"not a table file"))
        .await
        .unwrap();
    let now = chrono::Utc::now().timestamp_millis() + 1000;
    sql(
        &ctx,
        &format!("SELECT * FROM iceberg_remove_orphan_files('{location}', {now})"),
    )
    .await;
    assert!(!io.exists(&orphan).await.unwrap(), "the orphan was deleted");
    let expired = sql(
        &ctx,
        &format!("SELECT * FROM iceberg_expire_snapshots('{location}', {now}, 1)"),
    )
    .await;
    let removed: usize = expired.iter().map(|b| b.num_rows()).sum();
    assert!(removed >= 1, "the first snapshot expired");
    assert_eq!(number(&ctx, "SELECT count(*) FROM events").await, 4);
    assert_eq!(
        number(&ctx, "SELECT count(*) FROM \"events$snapshots\"").await,
        1
    );
    let table = Table::load(io.clone(), location).await.unwrap();
    let after = pyiceberg_read(server, table.metadata_location());
    assert_eq!(
        after.iter().filter(|l| l.contains("\"id\"")).count(),
        4,
        "{after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_fixture_warehouse_gives_every_oracle_answer() {
    let Some(server) = server("fixtures") else {
        return;
    };
    // The copied subset, also in a full run: a full check of every table over S3 is the local
    // suite's work; this one checks that the store serves what the disk does.
    let root = FixtureRoot {
        path: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
        complete: false,
    };
    let warehouse = root.path.join("pyiceberg/wh1");
    server.create_bucket("fixtures");
    let target = "s3://fixtures/wh1";
    let started = Instant::now();
    server.upload(&own_io(server), &warehouse, target).await;
    say(&format!(
        "s3 fixtures: wh1 uploaded in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let mut report = support::Report::new("pyiceberg on s3");
    let files = pyiceberg::oracle_files(&warehouse.join("oracle")).unwrap();
    for path in files {
        let oracle: pyiceberg::Oracle =
            serde_json::from_value::<pyiceberg::Oracle>(support::read_json(&path).unwrap())
                .unwrap()
                .with_duckdb_answers();
        let placed = (target.to_string(), server.storage());
        report.absorb(pyiceberg::check_table(&root, &warehouse, oracle, Some(placed)).await);
    }
    say(&format!(
        "s3 fixtures: checked in {:.1} s ({} from {WRITTEN_AT})",
        started.elapsed().as_secs_f64(),
        target
    ));
    assert!(report.tables > 0, "no table was checked");
    report.finish(&root);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_writers_racing_on_one_table_lose_nothing() {
    let Some(server) = server("race") else {
        return;
    };
    server.create_bucket("race");
    let location = "s3://race/t";
    let ctx = session(server);
    sql(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t (writer INT NOT NULL, n INT NOT NULL) STORED AS ICEBERG \
             LOCATION '{location}' OPTIONS ('commit.retry.num-retries' '50', \
             'commit.retry.min-wait-ms' '5', 'commit.retry.max-wait-ms' '200')"
        ),
    )
    .await;
    const WRITERS: i32 = 4;
    const COMMITS: i32 = 5;
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        // Each writer is its own session over its own runtime, as separate processes are.
        let ctx = session(server);
        tasks.push(tokio::spawn(async move {
            sql(
                &ctx,
                &format!("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{location}'"),
            )
            .await;
            for n in 0..COMMITS {
                sql(&ctx, &format!("INSERT INTO t VALUES ({writer}, {n})")).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let ctx = session(server);
    sql(
        &ctx,
        &format!("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{location}'"),
    )
    .await;
    let total = i64::from(WRITERS * COMMITS);
    // All three first, so that a failure says which of them is short (rows, distinct rows,
    // snapshots) and which commits the table has.
    let found = [
        number(&ctx, "SELECT count(*) FROM t").await,
        number(&ctx, "SELECT count(DISTINCT (writer, n)) FROM t").await,
        number(&ctx, "SELECT count(*) FROM \"t$snapshots\"").await,
        number(&ctx, "SELECT count(*) FROM \"t$metadata_log_entries\"").await,
    ];
    if found[..3] != [total, total, total] {
        let rows = crate::support::collect(&ctx, "SELECT writer, n FROM t ORDER BY 1, 2")
            .await
            .and_then(|b| crate::render::rows(&b, crate::render::Style::PYICEBERG))
            .map(|rows| format!("{rows:?}"))
            .unwrap_or_else(|e| e);
        panic!(
            "rows, distinct rows, snapshots, metadata versions: {found:?} (wanted {total} of \
             each of the first three); rows: {rows}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_failures_are_typed_errors_naming_the_location() {
    let Some(server) = server("errors") else {
        return;
    };
    // An endpoint nobody listens on: an I/O error naming the metadata location, in bounded time.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = StorageProperties::from_pairs([
        ("s3.endpoint", format!("http://127.0.0.1:{port}")),
        ("s3.region", "us-east-1".to_string()),
        ("s3.access-key-id", "testing".to_string()),
        ("s3.secret-access-key", "SECRET-never-shown".to_string()),
        ("s3.retry.num-retries", "1".to_string()),
    ]);
    let io = FileIO::new(Arc::new(RuntimeEnv::default()), Relocation::default())
        .with_storage(unreachable);
    let started = Instant::now();
    let err = Table::load(io, "s3://nowhere/db/t").await.unwrap_err();
    let shown = error_chain(&err);
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert!(shown.contains("s3://nowhere/db/t"), "{shown}");
    assert!(!shown.contains("SECRET-never-shown"), "{shown}");
    assert!(started.elapsed() < Duration::from_secs(30), "{shown}");

    // No credentials at all (and no instance metadata service to ask): an error naming the
    // location, not a hang.
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        let anonymous = StorageProperties::from_pairs([
            ("s3.endpoint", server.endpoint.clone()),
            ("s3.region", "us-east-1".to_string()),
            ("aws_metadata_endpoint", format!("http://127.0.0.1:{port}")),
            ("s3.retry.num-retries", "0".to_string()),
        ]);
        let io = FileIO::new(Arc::new(RuntimeEnv::default()), Relocation::default())
            .with_storage(anonymous);
        let err = Table::load(io, "s3://lake-two/db/t").await.unwrap_err();
        let shown = error_chain(&err);
        assert!(
            shown.contains("s3://lake-two/db/t") && shown.contains("no S3 credentials"),
            "{shown}"
        );
    }

    // A store told not to make conditional writes: the commit is refused before anything is
    // written, with a message saying why.
    server.create_bucket("no-conditional");
    let location = "s3://no-conditional/t";
    let ctx = session(server);
    sql(
        &ctx,
        &format!("CREATE EXTERNAL TABLE t (id INT) STORED AS ICEBERG LOCATION '{location}'"),
    )
    .await;
    let refusing = server.storage().merged(&StorageProperties::from_pairs([(
        "aws_conditional_put",
        "disabled",
    )]));
    let config = refusing.for_session(SessionConfig::new());
    let ctx = SessionContext::new_with_config(config);
    icefloe::sql::register(&ctx);
    sql(
        &ctx,
        &format!("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{location}'"),
    )
    .await;
    let err = collect(&ctx, "INSERT INTO t VALUES (1)").await.unwrap_err();
    assert!(err.contains("conditional write"), "{err}");
    let io = own_io(server);
    let metadata = io.list_dir(&format!("{location}/metadata")).await.unwrap();
    assert_eq!(
        metadata
            .iter()
            .filter(|f| f.ends_with(".metadata.json"))
            .count(),
        1,
        "{metadata:?}"
    );
    let ctx = session(server);
    sql(
        &ctx,
        &format!("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{location}'"),
    )
    .await;
    assert_eq!(number(&ctx, "SELECT count(*) FROM t").await, 0);
}
