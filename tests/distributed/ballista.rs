//! icefloe's plans on Ballista: standalone (scheduler and executor in this process) and with
//! executor processes on 127.0.0.1 polling a scheduler in this process; every query's answer
//! against the single-process answer.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::SessionContextExt;
use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::serde::BallistaCodec;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use icefloe::distributed::{IcefloeCodec, ballista as on_ballista};

use crate::cluster::until_stdin_closes;
use crate::queries::{QUERIES, answers, register_tables};

/// The environment variable that makes this test binary an executor of the scheduler on the
/// port it names.
const EXECUTOR: &str = "ICEFLOE_TEST_EXECUTOR";

fn client_state() -> datafusion::execution::SessionState {
    let config = on_ballista::session_config(IcefloeCodec::new()).with_target_partitions(4);
    SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .build()
}

async fn single_answers() -> Vec<Vec<String>> {
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    register_tables(&single).await;
    let mut all = Vec::new();
    for query in QUERIES {
        all.push(answers(&single, query).await);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ballista_standalone_gives_the_single_process_answers() {
    let expected = single_answers().await;
    let ctx = SessionContext::standalone_with_state(client_state())
        .await
        .unwrap();
    icefloe::sql::register(&ctx);
    register_tables(&ctx).await;
    for (query, expected) in QUERIES.iter().zip(expected) {
        assert!(!expected.is_empty(), "{query}: no rows to compare");
        assert_eq!(
            answers(&ctx, query).await,
            expected,
            "{query} on Ballista standalone"
        );
    }
}

/// Executor processes, killed on drop.
struct Executors(Vec<Child>);

impl Drop for Executors {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start_executors(n: usize, scheduler_port: u16) -> Executors {
    let mut executors = Executors(Vec::new());
    for _ in 0..n {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "ballista::executor_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(EXECUTOR, scheduler_port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("an executor process starts");
        let stdout = child.stdout.take().unwrap();
        executors.0.push(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("executor starting") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the executor starts within 60 s");
    }
    executors
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ballista_executor_processes_give_the_single_process_answers() {
    let expected = single_answers().await;
    let codec = IcefloeCodec::new();
    let session_builder: ballista_scheduler::SessionBuilder = Arc::new(|config: SessionConfig| {
        Ok(SessionStateBuilder::new()
            .with_default_features()
            .with_config(config)
            .build())
    });
    let config_producer = Arc::new(move || on_ballista::session_config(codec));
    let scheduler = ballista_scheduler::standalone::new_standalone_scheduler_with_builder(
        session_builder,
        config_producer,
        BallistaCodec::new(
            on_ballista::logical_codec(codec),
            on_ballista::physical_codec(codec),
        ),
    )
    .await
    .unwrap();
    let _executors = start_executors(2, scheduler.port());
    let url = format!("df://localhost:{}", scheduler.port());
    let ctx = SessionContext::remote_with_state(&url, client_state())
        .await
        .unwrap();
    icefloe::sql::register(&ctx);
    register_tables(&ctx).await;
    for (query, expected) in QUERIES.iter().zip(expected) {
        assert_eq!(
            answers(&ctx, query).await,
            expected,
            "{query} on 2 Ballista executors"
        );
    }
}

/// Not a test: the executor mode of this binary. Polls the scheduler on the port
/// `ICEFLOE_TEST_EXECUTOR` names, with one slot (so that two executors share a query's
/// tasks), and exits when its stdin closes.
#[test]
fn executor_process() {
    let Some(scheduler_port) = std::env::var(EXECUTOR).ok().and_then(|p| p.parse().ok()) else {
        return;
    };
    let free = || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let work_dir = tempfile::tempdir().unwrap();
    let codec = IcefloeCodec::new();
    let config = ExecutorProcessConfig {
        bind_host: "127.0.0.1".into(),
        external_host: Some("127.0.0.1".into()),
        port: free(),
        grpc_port: free(),
        scheduler_host: "localhost".into(),
        scheduler_port,
        scheduler_connect_timeout_seconds: 30,
        vcores: 1,
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        work_dir: Some(work_dir.path().to_string_lossy().into_owned()),
        override_logical_codec: Some(on_ballista::logical_codec(codec)),
        override_physical_codec: Some(on_ballista::physical_codec(codec)),
        ..Default::default()
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        println!("executor starting");
        let serving = tokio::spawn(start_executor_process(Arc::new(config)));
        until_stdin_closes().await;
        serving.abort();
    });
    std::process::exit(0);
}

/// Writes through Ballista are refused with an error (its scheduler plans from the metadata
/// file, without the table's catalog), and leave the table as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_ballista_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let at = format!("{}/t", dir.path().display());
    let single = SessionContext::new();
    icefloe::sql::register(&single);
    for sql in [
        format!("CREATE EXTERNAL TABLE t (id BIGINT) STORED AS ICEBERG LOCATION '{at}'"),
        "INSERT INTO t SELECT value FROM generate_series(1, 10)".to_string(),
    ] {
        single.sql(&sql).await.unwrap().collect().await.unwrap();
    }
    let ctx = SessionContext::standalone_with_state(client_state())
        .await
        .unwrap();
    icefloe::sql::register(&ctx);
    let open = format!("CREATE EXTERNAL TABLE t STORED AS ICEBERG LOCATION '{at}'");
    ctx.sql(&open).await.unwrap().collect().await.unwrap();
    for statement in [
        "INSERT INTO t VALUES (11)",
        "DELETE FROM t WHERE id < 4",
        "UPDATE t SET id = 0 WHERE id = 5",
    ] {
        let run = async { ctx.sql(statement).await?.collect().await };
        let outcome = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .unwrap_or_else(|_| panic!("{statement}: no answer in 60 s"));
        let err = outcome.expect_err(statement).to_string();
        assert!(err.contains("(Ballista)"), "{statement}: {err}");
        assert!(err.contains("datafusion-distributed coordinator"), "{err}");
    }
    let check = SessionContext::new();
    let table = icefloe::IcebergTableProvider::open(&check, &at, icefloe::TableOptions::default())
        .await
        .unwrap();
    assert_eq!(
        table.table().metadata().snapshots.len(),
        1,
        "nothing is committed"
    );
    check.register_table("t", Arc::new(table)).unwrap();
    let rows = answers(&check, "SELECT count(*), sum(id) FROM t").await;
    assert_eq!(rows[0].replace(' ', ""), "|10|55|");
}
