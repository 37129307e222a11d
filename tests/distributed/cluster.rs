//! Worker processes for the tests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use icefloe::distributed::{IcefloeCodec, cluster};

/// The environment variable that makes this test binary a worker.
const WORKER: &str = "ICEFLOE_TEST_WORKER";

/// Worker processes on 127.0.0.1, killed on drop.
pub struct Cluster {
    workers: Vec<Child>,
    pub ports: Vec<u16>,
}

impl Cluster {
    /// Starts `n` workers and waits (at most 60 s each) until they listen.
    pub fn start(n: usize) -> Self {
        let mut cluster = Cluster {
            workers: Vec::new(),
            ports: Vec::new(),
        };
        for _ in 0..n {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args([
                    "cluster::worker_process",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(WORKER, "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("a worker process starts");
            let stdout = child.stdout.take().unwrap();
            cluster.workers.push(child);
            let port = listening_port(stdout, Duration::from_secs(60));
            cluster.ports.push(port);
        }
        cluster
    }

    /// A coordinator session over the workers: three partitions per task, and scans split
    /// into tasks whatever their size (the tables are small).
    pub fn coordinator(&self) -> SessionContext {
        let workers = self
            .ports
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}").parse().unwrap())
            .collect();
        let config = SessionConfig::new().with_target_partitions(3);
        let builder = SessionStateBuilder::new()
            .with_default_features()
            .with_config(config);
        let builder = cluster::coordinator(builder, workers, IcefloeCodec::new());
        let builder = datafusion_distributed::DistributedExt::with_distributed_file_scan_config_bytes_per_partition(builder, 1)
            .unwrap();
        let ctx = SessionContext::from(builder.build());
        icefloe::sql::register(&ctx);
        ctx
    }

    /// Kills worker `i` (the others go on).
    pub fn kill(&mut self, i: usize) {
        let _ = self.workers[i].kill();
        let _ = self.workers[i].wait();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for worker in &mut self.workers {
            let _ = worker.kill();
            let _ = worker.wait();
        }
    }
}

/// The port a worker prints (`listening on <port>`), within `timeout`.
fn listening_port(stdout: std::process::ChildStdout, timeout: Duration) -> u16 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // libtest prints the test's name on the same line.
            if let Some((_, port)) = line.split_once("listening on ") {
                let _ = tx.send(port.trim().parse::<u16>().ok());
            }
        }
    });
    let started = Instant::now();
    match rx.recv_timeout(timeout) {
        Ok(Some(port)) => port,
        _ => panic!("no worker listening after {:?}", started.elapsed()),
    }
}

/// Not a test: the worker mode of this binary (see the crate docs). Serves a worker on a free
/// port of 127.0.0.1, prints it, and exits when its stdin closes.
#[test]
fn worker_process() {
    if std::env::var_os(WORKER).is_none() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("listening on {}", listener.local_addr().unwrap().port());
        let worker = cluster::worker(Default::default());
        let serving = tokio::spawn(cluster::serve_worker(worker, listener));
        until_stdin_closes().await;
        serving.abort();
    });
    std::process::exit(0);
}

/// Waits until this process's stdin closes: the parent test holds it, so a child process
/// serving it ends when the test ends (or dies).
pub async fn until_stdin_closes() {
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin()
            .read_line(&mut sink)
            .map(|n| n > 0)
            .unwrap_or(false)
        {}
    })
    .await;
}
