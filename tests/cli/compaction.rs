//! `icefloe rewrite-data-files` end to end: its reports, its progress bars on a terminal
//! (stderr only), `--read-only` refusing the SQL procedure, and Ctrl-C (SIGINT) while it runs:
//! nothing more is committed, the files written are deleted, the exit status says so.
//!
//! A compaction of a test-sized table ends in well under a second, too fast to interrupt
//! reliably, so the interrupted runs set `ICEFLOE_TEST_COMPACTION_DELAY_MS` (read by
//! `src/cli/compact.rs` for this alone): a pause after every batch written, which makes each
//! run last seconds whatever the machine.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{icefloe, stderr, stdout};

/// How long a run may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(120);

/// A new catalog in `dir` holding `db.t (id BIGINT, part VARCHAR, pad VARCHAR)` partitioned by
/// `part`, with `inserts` inserts of `rows` rows into each of the `parts` partitions (one data
/// file per insert and partition). Returns the catalog database's path.
fn catalog_table(dir: &Path, parts: &[&str], inserts: usize, rows: usize) -> String {
    let db = dir.join("catalog.db").to_str().unwrap().to_string();
    assert!(icefloe(&["catalog", "create", &db]).status.success());
    let mut script = String::from(
        "CREATE SCHEMA db;\nCREATE TABLE db.t (id BIGINT NOT NULL, part VARCHAR, pad VARCHAR) \
         PARTITION BY (part);\n",
    );
    for i in 0..inserts {
        let selects: Vec<String> = parts
            .iter()
            .map(|p| {
                format!(
                    "SELECT value + {} AS id, '{p}' AS part, repeat('x', 20) || value AS pad \
                     FROM generate_series(1, {rows})",
                    i * rows
                )
            })
            .collect();
        script.push_str(&format!(
            "INSERT INTO db.t {};\n",
            selects.join(" UNION ALL ")
        ));
    }
    let file = dir.join("setup.sql");
    std::fs::write(&file, script).unwrap();
    let out = icefloe(&[
        "sql",
        "--catalog",
        &db,
        "--on-error-stop",
        "-f",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    db
}

/// The CSV answer of `query` (header and rows).
fn sql(db: &str, query: &str) -> String {
    let out = icefloe(&["sql", "--catalog", db, "--format", "csv", query]);
    assert!(out.status.success(), "{query}: {}", stderr(&out));
    stdout(&out)
}

/// What a test compares before and after: the snapshots and the rows.
fn state(db: &str) -> (String, String) {
    (
        sql(
            db,
            r#"SELECT snapshot_id, operation FROM db."t$snapshots" ORDER BY committed_at, snapshot_id"#,
        ),
        sql(
            db,
            "SELECT count(*), sum(id), sum(length(pad)), count(DISTINCT part) FROM db.t",
        ),
    )
}

/// The files under the table that no metadata reaches (`remove-orphans --dry-run` with a
/// cutoff in the future: staging files of unfinished uploads are listed too).
fn unreachable_files(db: &str) -> Vec<serde_json::Value> {
    let out = icefloe(&[
        "remove-orphans",
        "db.t",
        "--catalog",
        db,
        "--dry-run",
        "--older-than",
        "2100-01-01T00:00:00Z",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    report["orphan_files"].as_array().unwrap().clone()
}

#[test]
fn rewrite_data_files_reports_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = catalog_table(dir.path(), &["a", "b"], 3, 10);
    let (_, rows) = state(&db);
    let run = |extra: &[&str]| {
        let mut args = vec!["rewrite-data-files", "db.t", "--catalog", &db];
        args.extend(extra);
        icefloe(&args)
    };
    // Three files per partition are fewer than min-input-files (5): nothing to do.
    let out = run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "no data file to rewrite: nothing committed"
    );
    // With 3 as the minimum, `where` keeps partition a alone: its 3 files into 1.
    let out = run(&[
        "--option",
        "min-input-files=3",
        "--where",
        "part = 'a'",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["action"], "rewrite-data-files");
    assert_eq!(report["rewritten_data_files_count"], 3);
    assert_eq!(report["added_data_files_count"], 1);
    assert_eq!(report["failed_data_files_count"], 0);
    assert_eq!(report["removed_delete_files_count"], 0);
    assert_eq!(report["snapshot_ids"].as_array().unwrap().len(), 1);
    assert!(report["rewritten_bytes_count"].as_u64().unwrap() > 0);
    let files = sql(
        &db,
        r#"SELECT partition.part AS p, count(*) AS n FROM db."t$files" GROUP BY partition.part ORDER BY p"#,
    );
    assert_eq!(files, "p,n\na,1\nb,3\n");
    assert_eq!(state(&db).1, rows);
    // The sort strategy in a given order, as text.
    let out = run(&["--sort-order", "id DESC", "--option", "min-input-files=3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("rewrote 3 data file(s) ("),
        "{}",
        stdout(&out)
    );
    assert_eq!(state(&db).1, rows);
    // Refusals name the option; nothing is committed.
    let snapshots = state(&db).0;
    for (args, said) in [
        (
            &["--option", "nope=1"][..],
            "rewrite option 'nope': is not an option",
        ),
        (
            &["--where", "lower(part) = 'a'"][..],
            "cannot be turned into an Iceberg filter",
        ),
        (&["--strategy", "sort"][..], "the table has no sort order"),
        (
            &["--strategy", "binpack", "--sort-order", "id"][..],
            "a sort-order takes strategy sort",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(stderr(&out).contains(said), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(state(&db).0, snapshots);
    // A read-only session refuses the procedure before it runs.
    let out = icefloe(&[
        "sql",
        "--catalog",
        &db,
        "--read-only",
        "SELECT * FROM iceberg_rewrite_data_files('db.t', 'min-input-files=2')",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("iceberg_rewrite_data_files commits to its table"),
        "{}",
        stderr(&out)
    );
    assert_eq!(state(&db).0, snapshots);
}

/// `icefloe` with standard error on a pseudo-terminal (collected) and standard output on a
/// pipe.
struct OnTerminal {
    child: Child,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl OnTerminal {
    fn start(args: &[&str], delay_ms: Option<u64>) -> Self {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: 160,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors into the given integers; null name and
        // termios ask for the defaults.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (mut master, slave) = unsafe {
            (
                std::fs::File::from_raw_fd(master),
                OwnedFd::from_raw_fd(slave),
            )
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_icefloe"));
        command
            .args(args)
            .env("HOME", std::env::temp_dir())
            .env("TERM", "xterm")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(slave));
        if let Some(ms) = delay_ms {
            command.env("ICEFLOE_TEST_COMPACTION_DELAY_MS", ms.to_string());
        }
        let child = command.spawn().expect("the icefloe binary starts");
        // The parent's copy of the slave is gone with `command`: the master reads EIO once
        // the child has exited.
        drop(command);
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let collected = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(n @ 1..) = master.read(&mut buffer) {
                collected.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Self { child, stderr }
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Waits until standard error holds `needle`.
    fn expect(&self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.stderr().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no {needle:?} within {PATIENCE:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn interrupt(&self) {
        // SAFETY: kill sends a signal to the child's pid; no memory is involved.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits for the end; the output and everything written to the terminal.
    fn finish(self) -> (Output, String) {
        let out = self.child.wait_with_output().unwrap();
        // What the child wrote last reaches the reader thread shortly after it exits.
        std::thread::sleep(Duration::from_millis(200));
        let text = String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned();
        (out, text)
    }
}

#[test]
fn progress_bars_go_to_stderr_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = catalog_table(dir.path(), &["a"], 5, 20_000);
    let args = [
        "rewrite-data-files",
        "db.t",
        "--catalog",
        &db,
        "--format",
        "json",
    ];
    let run = OnTerminal::start(&args, Some(50));
    run.expect("data files");
    let (out, terminal) = run.finish();
    assert!(out.status.success(), "{terminal}");
    assert!(terminal.contains("rewriting data files"), "{terminal}");
    assert!(
        terminal.contains("KiB") || terminal.contains("MiB"),
        "{terminal}"
    );
    assert!(terminal.contains("/5 data files"), "{terminal}");
    // Standard output has the report alone.
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["rewritten_data_files_count"], 5);
    assert_eq!(report["added_data_files_count"], 1);
}

#[test]
fn ctrl_c_cancels_a_running_rewrite_and_leaves_the_table_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = catalog_table(dir.path(), &["a", "b"], 5, 20_000);
    let before = state(&db);
    assert_eq!(unreachable_files(&db), Vec::<serde_json::Value>::new());
    let args = ["rewrite-data-files", "db.t", "--catalog", &db];
    let run = OnTerminal::start(&args, Some(200));
    // Rows are being written (the bytes bar moved) when Ctrl-C comes.
    run.expect("KiB/");
    run.interrupt();
    let (out, terminal) = run.finish();
    assert_eq!(out.status.code(), Some(1), "{terminal}");
    assert!(
        terminal.contains("nothing was committed and the files written were deleted"),
        "{terminal}"
    );
    assert_eq!(stdout(&out), "");
    assert_eq!(state(&db), before);
    assert_eq!(unreachable_files(&db), Vec::<serde_json::Value>::new());
}

#[test]
fn ctrl_c_after_a_partial_progress_commit_keeps_it_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = catalog_table(dir.path(), &["a", "b"], 5, 20_000);
    let (snapshots, rows) = state(&db);
    let args = [
        "rewrite-data-files",
        "db.t",
        "--catalog",
        &db,
        "--option",
        "partial-progress.enabled=true",
        "--option",
        "max-concurrent-file-group-rewrites=1",
    ];
    let run = OnTerminal::start(&args, Some(200));
    // The first group (5 of 10 files) is committed before the second one ends.
    run.expect("5/10 data files");
    let deadline = Instant::now() + PATIENCE;
    while state(&db).0 == snapshots {
        assert!(Instant::now() < deadline, "no commit: {}", run.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    run.interrupt();
    let (out, terminal) = run.finish();
    assert_eq!(out.status.code(), Some(1), "{terminal}");
    assert!(
        terminal.contains("the 1 commit(s) made before (snapshots "),
        "{terminal}"
    );
    assert!(
        terminal.contains("5 data file(s) rewritten into 1) stay; nothing more was committed"),
        "{terminal}"
    );
    let (after, after_rows) = state(&db);
    assert_eq!(after_rows, rows);
    assert_eq!(after.lines().count(), snapshots.lines().count() + 1);
    assert!(after.trim_end().ends_with(",replace"), "{after}");
    assert_eq!(unreachable_files(&db), Vec::<serde_json::Value>::new());
}

/// `icefloe rewrite-position-deletes`: six merge-on-read DELETEs leave six position delete
/// files in partition a; they become one, the rows stay, and an unknown option is refused.
#[test]
fn rewrite_position_deletes_merges_a_partitions_delete_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = catalog_table(dir.path(), &["a", "b"], 3, 4);
    let mut script = String::from(
        "ALTER TABLE db.t SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read');\n",
    );
    for id in [1, 2, 5, 6, 9, 10] {
        script.push_str(&format!(
            "DELETE FROM db.t WHERE part = 'a' AND id = {id};\n"
        ));
    }
    let file = dir.path().join("deletes.sql");
    std::fs::write(&file, script).unwrap();
    let out = icefloe(&[
        "sql",
        "--catalog",
        &db,
        "--on-error-stop",
        "-f",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let delete_files = r#"SELECT count(*) FROM db."t$files" WHERE content = 1"#;
    assert_eq!(sql(&db, delete_files), "count(*)\n6\n");
    let rows = "SELECT count(*), sum(id) FROM db.t";
    // 24 rows (ids 1..=12 in a and in b) less six of a: 18 rows, 2 * 78 - 33.
    assert_eq!(sql(&db, rows), "count(*),sum(db.t.id)\n18,123\n");

    let out = icefloe(&[
        "rewrite-position-deletes",
        "db.t",
        "--catalog",
        &db,
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["rewritten_delete_files"], 6);
    assert_eq!(report["added_delete_files"], 1);
    assert_eq!(sql(&db, delete_files), "count(*)\n1\n");
    assert_eq!(sql(&db, rows), "count(*),sum(db.t.id)\n18,123\n");

    let out = icefloe(&[
        "rewrite-position-deletes",
        "db.t",
        "--catalog",
        &db,
        "--option",
        "min-input=2",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("'min-input'"), "{}", stderr(&out));
}
