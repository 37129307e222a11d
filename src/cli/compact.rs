//! `icefloe rewrite-data-files`: compaction ([`crate::maintenance::rewrite_data_files`]) with
//! two progress bars on stderr (bytes written, data files of finished groups), drawn on a
//! terminal only, and Ctrl-C as its [`Cancel`]: nothing more is committed, the files written
//! are deleted, and the command fails saying so (and which commits of partial progress stay).
//!
//! The options are those of the SQL procedure `iceberg_rewrite_data_files`, built by the same
//! function from `--strategy`, `--sort-order`, `--where` and the `--option KEY=VALUE` pairs.
//!
//! For tests only: `ICEFLOE_TEST_COMPACTION_DELAY_MS=N` pauses N ms after each batch written,
//! so that a test can interrupt a compaction of a small table while it runs.

use std::io::Write;
use std::time::Duration;

use datafusion::prelude::SessionContext;
use indicatif::{HumanBytes, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
#[cfg(unix)]
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinHandle;

use super::CliResult;
use super::args::{CompactionStrategy, RewriteDataFilesArgs};
use super::maintain::{report, write_target};
use crate::maintenance::{Cancel, Progress, RewriteDataFilesResult, rewrite_data_files};

/// The test-only pause after each batch (see the module docs).
const DELAY_VARIABLE: &str = "ICEFLOE_TEST_COMPACTION_DELAY_MS";

/// `icefloe rewrite-data-files`.
pub(super) async fn run_rewrite_data_files<W: Write>(
    args: &RewriteDataFilesArgs,
    out: &mut W,
) -> CliResult<()> {
    let (_, target, _) = write_target(&args.target).await?;
    let table = target.load().await?;
    let state = SessionContext::new().state();
    let options = crate::sql::rewrite_options(&state, table.metadata(), &option_pairs(args))?;
    let bars = Bars::new();
    let cancel = Cancel::new();
    let watcher = cancel_on_ctrl_c(cancel.clone(), bars.bytes.clone());
    let options = options
        .with_progress(bars.bytes_progress())
        .with_file_progress(bars.files_progress())
        .with_cancel(cancel.clone());
    let done = rewrite_data_files(&target, &options).await;
    watcher.abort();
    bars.clear();
    let done = done?;
    if cancel.is_cancelled() {
        eprintln!("Ctrl-C came after the last commit: the compaction finished");
    }
    report(out, args.target.format, &text(&done), object(&done))
}

/// The `key=value` pairs of the command line, as the SQL procedure takes them.
fn option_pairs(args: &RewriteDataFilesArgs) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    if let Some(strategy) = args.strategy {
        let name = match strategy {
            CompactionStrategy::Binpack => "binpack",
            CompactionStrategy::Sort => "sort",
        };
        pairs.push(("strategy".to_string(), name.to_string()));
    }
    if let Some(order) = &args.sort_order {
        pairs.push(("sort-order".to_string(), order.clone()));
    }
    if let Some(condition) = &args.condition {
        pairs.push(("where".to_string(), condition.clone()));
    }
    pairs.extend(args.options.iter().cloned());
    pairs
}

/// Sets `cancel` at the first Ctrl-C, and says so on `bar`. On Unix SIGINT is caught from
/// this call on (before the compaction starts), not from the task's first poll.
fn cancel_on_ctrl_c(cancel: Cancel, bar: ProgressBar) -> JoinHandle<()> {
    #[cfg(unix)]
    let interrupt = signal(SignalKind::interrupt()).ok();
    tokio::spawn(async move {
        #[cfg(unix)]
        let caught = match interrupt {
            Some(mut interrupt) => interrupt.recv().await.is_some(),
            None => tokio::signal::ctrl_c().await.is_ok(),
        };
        #[cfg(not(unix))]
        let caught = tokio::signal::ctrl_c().await.is_ok();
        if caught {
            cancel.cancel();
            bar.set_message("cancelling: deleting the files written");
        }
    })
}

/// The bytes and files bars, drawn together on stderr.
struct Bars {
    multi: MultiProgress,
    bytes: ProgressBar,
    files: ProgressBar,
}

impl Bars {
    fn new() -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let bytes = multi.add(bar("{spinner} {msg} {wide_bar} {bytes}/{total_bytes}"));
        bytes.set_message("rewriting data files");
        bytes.enable_steady_tick(Duration::from_millis(120));
        let files = multi.add(bar("  {msg} {wide_bar} {pos}/{len} data files"));
        files.set_message("groups finished");
        Self {
            multi,
            bytes,
            files,
        }
    }

    /// Moves the bytes bar (and pauses for tests, see the module docs).
    fn bytes_progress(&self) -> Progress {
        let bar = self.bytes.clone();
        let delay = std::env::var(DELAY_VARIABLE)
            .ok()
            .and_then(|ms| ms.parse::<u64>().ok())
            .map(Duration::from_millis);
        Progress::new(move |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            if let Some(delay) = delay {
                std::thread::sleep(delay);
            }
        })
    }

    fn files_progress(&self) -> Progress {
        let bar = self.files.clone();
        Progress::new(move |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })
    }

    fn clear(&self) {
        self.bytes.finish_and_clear();
        self.files.finish_and_clear();
        // Nothing sensible is left to do when stderr itself fails.
        let _ = self.multi.clear();
    }
}

fn bar(template: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

fn text(done: &RewriteDataFilesResult) -> String {
    if done.snapshots.is_empty() && done.failed_data_files == 0 {
        return "no data file to rewrite: nothing committed".to_string();
    }
    let mut text = format!(
        "rewrote {} data file(s) ({}) into {} ({}), removed {} delete file(s)",
        done.rewritten_data_files,
        HumanBytes(done.rewritten_bytes),
        done.added_data_files,
        HumanBytes(done.added_bytes),
        done.removed_delete_files
    );
    if done.failed_data_files > 0 {
        text.push_str(&format!(
            "; {} data file(s) failed and stay",
            done.failed_data_files
        ));
    }
    let ids: Vec<String> = done.snapshots.iter().map(i64::to_string).collect();
    text.push_str(&format!("; snapshot(s) {}", ids.join(", ")));
    text
}

fn object(done: &RewriteDataFilesResult) -> serde_json::Value {
    json!({
        "action": "rewrite-data-files",
        "rewritten_data_files_count": done.rewritten_data_files,
        "added_data_files_count": done.added_data_files,
        "rewritten_bytes_count": done.rewritten_bytes,
        "added_bytes_count": done.added_bytes,
        "failed_data_files_count": done.failed_data_files,
        "removed_delete_files_count": done.removed_delete_files,
        "snapshot_ids": done.snapshots,
    })
}
