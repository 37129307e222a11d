//! The maintenance commands: `icefloe branch`, `tag`, `rollback` and `expire`, over
//! [`crate::maintenance::SnapshotManager`]. Each prints what it did, as sentences or one JSON object.

use std::io::Write;
use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use serde_json::{Value, json};

use super::args::{
    CheckArgs, ComputePartitionStatsArgs, ComputeStatsArgs, ExpireArgs, RefArgs, RemoveOrphansArgs,
    ReportFormat, RewriteManifestsArgs, RewritePositionDeletesArgs, RollbackArgs, TableTarget,
    relocation_of,
};
use super::{CliError, CliResult, catalog_table_name, open_catalog};
use crate::Table;
use crate::io::{FileIO, StorageProperties};
use crate::maintenance::{BranchRetention, ExpireSnapshots, Progress, SnapshotManager};
use crate::maintenance::{
    OrphanFiles, check_table, remove_orphan_files, rewrite_manifests_with_progress,
};
use crate::spec::selection::parse_timestamp_ms;
use crate::table::locate::{Access, current_version, is_metadata_file, table_dir_of};
use crate::write::WriteTarget;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Which kind of ref `branch` / `tag` manage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RefKind {
    /// `icefloe branch`.
    Branch,
    /// `icefloe tag`.
    Tag,
}

/// `icefloe branch` / `icefloe tag`.
pub(super) async fn run_ref<W: Write>(kind: RefKind, args: &RefArgs, out: &mut W) -> CliResult<()> {
    let manager = manager(&args.target).await?;
    let word = match kind {
        RefKind::Branch => "branch",
        RefKind::Tag => "tag",
    };
    if args.drop {
        manager.drop_ref(&args.name).await?;
        let text = format!("dropped {word} '{}'", args.name);
        let object = json!({"action": "drop", "kind": word, "name": args.name});
        return report(out, args.target.format, &text, object);
    }
    let table = match kind {
        RefKind::Branch => {
            let retention = BranchRetention::default();
            manager
                .create_branch(&args.name, args.snapshot, retention)
                .await?
        }
        RefKind::Tag => manager.create_tag(&args.name, args.snapshot, None).await?,
    };
    let at = table.metadata().refs[&args.name].snapshot_id;
    let text = format!("created {word} '{}' at snapshot {at}", args.name);
    let object = json!({"action": "create", "kind": word, "name": args.name, "snapshot_id": at});
    report(out, args.target.format, &text, object)
}

/// `icefloe rollback`.
pub(super) async fn run_rollback<W: Write>(args: &RollbackArgs, out: &mut W) -> CliResult<()> {
    let manager = manager(&args.target).await?;
    let table = match (&args.snapshot, &args.timestamp) {
        (Some(id), _) => manager.rollback_to_snapshot(*id).await?,
        (None, Some(ts)) => manager.rollback_to_time(parse_timestamp_ms(ts)?).await?,
        (None, None) => return Err(CliError::Usage("give --snapshot or --timestamp".into())),
    };
    let current = table.metadata().current_snapshot_id;
    let text = format!(
        "rolled back: the current snapshot is {}",
        current.map_or("none".to_string(), |id| id.to_string())
    );
    let object = json!({"action": "rollback", "current_snapshot_id": current});
    report(out, args.target.format, &text, object)
}

/// `icefloe expire`.
pub(super) async fn run_expire<W: Write>(args: &ExpireArgs, out: &mut W) -> CliResult<()> {
    let manager = manager(&args.target).await?;
    let options = ExpireSnapshots {
        older_than_ms: args
            .older_than
            .as_deref()
            .map(parse_timestamp_ms)
            .transpose()?,
        retain_last: args.retain_last,
        snapshot_ids: args.snapshots.clone(),
        dry_run: args.dry_run,
        now_ms: None,
        progress: Progress::default(),
    };
    let bar = bar("expiring snapshots");
    let options = ExpireSnapshots {
        progress: feed(&bar, "deleting files"),
        ..options
    };
    let done = manager.expire_snapshots(&options).await;
    bar.finish_and_clear();
    let done = done?;
    let verb = if args.dry_run {
        "would expire"
    } else {
        "expired"
    };
    let deleted = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    let mut text = format!(
        "{verb} {} snapshot(s){}; {deleted} {} file(s)",
        done.expired.len(),
        match done.removed_refs.is_empty() {
            true => String::new(),
            false => format!(" and ref(s) {}", done.removed_refs.join(", ")),
        },
        done.deleted_files.len()
    );
    for id in &done.expired {
        text.push_str(&format!("\n  snapshot {id}"));
    }
    for file in &done.deleted_files {
        text.push_str(&format!("\n  {file}"));
    }
    if !done.kept_files.is_empty() {
        text.push_str(&format!(
            "\nkept {} unreachable file(s):",
            done.kept_files.len()
        ));
    }
    for (file, reason) in &done.kept_files {
        text.push_str(&format!("\n  {file} ({})", reason.as_str()));
    }
    let kept: Vec<Value> = done
        .kept_files
        .iter()
        .map(|(file, reason)| json!({"path": file, "reason": reason.as_str()}))
        .collect();
    let object = json!({
        "action": "expire",
        "dry_run": args.dry_run,
        "expired_snapshot_ids": done.expired,
        "removed_refs": done.removed_refs,
        "deleted_files": done.deleted_files,
        "kept_files": kept,
    });
    report(out, args.target.format, &text, object)
}

/// `icefloe remove-orphans`.
pub(super) async fn run_remove_orphans<W: Write>(
    args: &RemoveOrphansArgs,
    out: &mut W,
) -> CliResult<()> {
    let table = manager(&args.target).await?.table().await?;
    let mut options = OrphanFiles::new();
    if let Some(ts) = &args.older_than {
        options = options.with_older_than_ms(parse_timestamp_ms(ts)?);
    }
    if args.dry_run {
        options = options.dry_run();
    }
    let bar = bar("looking for orphan files");
    options.progress = feed(&bar, "deleting orphan files");
    let done = remove_orphan_files(&table, &options).await;
    bar.finish_and_clear();
    let done = done?;
    let verb = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    let mut text = format!(
        "{verb} {} orphan file(s) of {} listed under {}",
        done.orphan_files.len(),
        done.listed,
        done.location
    );
    for file in &done.orphan_files {
        text.push_str(&format!("\n  {file}"));
    }
    let object = json!({
        "action": "remove-orphans",
        "dry_run": args.dry_run,
        "orphan_files": done.orphan_files,
        "deleted": done.deleted,
        "listed": done.listed,
        "recent_unreferenced": done.recent_unreferenced,
        "symbolic_links_skipped": done.links,
    });
    report(out, args.target.format, &text, object)
}

/// `icefloe check`: the table's current version, as a reader finds it (a newer version that
/// cannot be read is a problem too), checked against its files.
pub(super) async fn run_check<W: Write>(args: &CheckArgs, out: &mut W) -> CliResult<()> {
    let (io, target, location) = write_target(&args.target).await?;
    let (table, skipped) = match &location {
        Some(location) => {
            let table = Table::load(io.clone(), location).await?;
            let skipped = match table_dir_of(location) {
                Some(dir) if !is_metadata_file(location) => {
                    current_version(&io, &dir, Access::Read).await?.skipped
                }
                _ => Vec::new(),
            };
            (table, skipped)
        }
        None => (
            target.catalog().load_table(target.ident()).await?,
            Vec::new(),
        ),
    };
    let mut done = check_table(&table).await?;
    for path in skipped {
        done.problems.push(format!(
            "metadata file {path} is newer than the current version but cannot be read"
        ));
    }
    let mut text = format!(
        "checked {}: {} snapshot(s), {} manifest(s), {} file(s): {}",
        table.metadata_location(),
        done.snapshots,
        done.manifests,
        done.files,
        match done.problems.len() {
            0 => "no problem found".to_string(),
            n => format!("{n} problem(s)"),
        }
    );
    for problem in &done.problems {
        text.push_str(&format!("\n  {problem}"));
    }
    for warning in &done.warnings {
        text.push_str(&format!("\n  warning: {warning}"));
    }
    let object = json!({
        "action": "check",
        "metadata_location": table.metadata_location(),
        "snapshots": done.snapshots,
        "manifests": done.manifests,
        "files": done.files,
        "problems": done.problems,
        "warnings": done.warnings,
    });
    report(out, args.target.format, &text, object)?;
    match done.problems.len() {
        0 => Ok(()),
        n => Err(CliError::CheckFailed(n)),
    }
}

/// `icefloe rewrite-manifests`.
pub(super) async fn run_rewrite_manifests<W: Write>(
    args: &RewriteManifestsArgs,
    out: &mut W,
) -> CliResult<()> {
    let (_, target, _) = write_target(&args.target).await?;
    let bar = bar("rewriting manifests");
    let progress = feed(&bar, "writing manifests");
    let done = rewrite_manifests_with_progress(&target, args.target_size, &progress).await;
    bar.finish_and_clear();
    let done = done?;
    let text = format!("rewrote {} manifest(s) into {}", done.rewritten, done.added);
    let object = json!({
        "action": "rewrite-manifests",
        "rewritten": done.rewritten,
        "added": done.added,
        "snapshot_id": done.table.as_ref().and_then(|t| t.metadata().current_snapshot_id),
    });
    report(out, args.target.format, &text, object)
}

/// `icefloe rewrite-position-deletes`.
pub(super) async fn run_rewrite_position_deletes<W: Write>(
    args: &RewritePositionDeletesArgs,
    out: &mut W,
) -> CliResult<()> {
    let (_, target, _) = write_target(&args.target).await?;
    let pairs: Vec<String> = args
        .options
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let options = crate::sql::position_delete_options(&pairs)?;
    let done = crate::maintenance::rewrite_position_delete_files(&target, &options).await?;
    let text = match done.snapshot {
        Some(id) => format!(
            "rewrote {} delete file(s) into {} (snapshot {id})",
            done.rewritten_delete_files, done.added_delete_files
        ),
        None => "nothing to rewrite".to_string(),
    };
    let object = json!({
        "action": "rewrite-position-deletes",
        "rewritten_delete_files": done.rewritten_delete_files,
        "added_delete_files": done.added_delete_files,
        "rewritten_bytes": done.rewritten_bytes,
        "added_bytes": done.added_bytes,
        "snapshot_id": done.snapshot,
    });
    report(out, args.target.format, &text, object)
}

/// `icefloe compute-stats`.
pub(super) async fn run_compute_stats<W: Write>(
    args: &ComputeStatsArgs,
    out: &mut W,
) -> CliResult<()> {
    use crate::statistics::{ComputeTableStats, compute_table_stats};
    let (_, target, _) = write_target(&args.target).await?;
    let mut options = ComputeTableStats::new();
    if !args.columns.is_empty() {
        options = options.with_columns(args.columns.iter().map(|c| c.trim().to_string()));
    }
    let bar = bar("sketching columns");
    let done = compute_table_stats(&target, &options).await;
    bar.finish_and_clear();
    let done = done?;
    let columns: Vec<String> = done
        .columns
        .iter()
        .map(|(name, _, ndv)| format!("{name}: {ndv}"))
        .collect();
    let text = format!(
        "statistics of snapshot {}: {} distinct values ({})",
        done.snapshot_id,
        columns.join(", "),
        done.statistics_path
    );
    let ndv: serde_json::Map<String, serde_json::Value> = done
        .columns
        .iter()
        .map(|(name, _, ndv)| (name.clone(), json!(ndv)))
        .collect();
    let object = json!({
        "action": "compute-stats",
        "snapshot_id": done.snapshot_id,
        "statistics_path": done.statistics_path,
        "ndv": ndv,
    });
    report(out, args.target.format, &text, object)
}

/// `icefloe compute-partition-stats`.
pub(super) async fn run_compute_partition_stats<W: Write>(
    args: &ComputePartitionStatsArgs,
    out: &mut W,
) -> CliResult<()> {
    use crate::statistics::{ComputePartitionStats, compute_partition_stats};
    let (_, target, _) = write_target(&args.target).await?;
    let mut options = ComputePartitionStats::new();
    if let Some(id) = args.snapshot {
        options = options.with_snapshot_id(id);
    }
    let bar = bar("counting partitions");
    let done = compute_partition_stats(&target, &options).await;
    bar.finish_and_clear();
    let done = done?;
    let text = match &done.statistics_path {
        Some(path) => format!(
            "partition statistics of snapshot {}: {} partition(s) ({path})",
            done.snapshot_id, done.partitions
        ),
        None => format!(
            "snapshot {} has no manifest entries: no partition statistics written",
            done.snapshot_id
        ),
    };
    let object = json!({
        "action": "compute-partition-stats",
        "snapshot_id": done.snapshot_id,
        "statistics_path": done.statistics_path,
        "partitions": done.partitions,
    });
    report(out, args.target.format, &text, object)
}

/// A progress bar on stderr, ticking while long work runs (a spinner until the work knows
/// its total); drawn only on a terminal.
fn bar(message: &'static str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {wide_bar} {pos}/{len}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(message);
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// A progress callback that moves `bar`, showing `message` once counts arrive.
fn feed(bar: &ProgressBar, message: &'static str) -> Progress {
    let bar = bar.clone();
    Progress::new(move |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(message);
    })
}

/// The manager of the table `target` names.
async fn manager(target: &TableTarget) -> CliResult<SnapshotManager> {
    let (_, write, _) = write_target(target).await?;
    Ok(SnapshotManager::new(write))
}

/// Where the table `target` names lives, the IO to reach it, and its location when it is named
/// by one (a table directory or metadata file).
pub(super) async fn write_target(
    target: &TableTarget,
) -> CliResult<(FileIO, WriteTarget, Option<String>)> {
    let io = FileIO::new(
        Arc::new(RuntimeEnv::default()),
        relocation_of(&target.relocate),
    )
    .with_storage(StorageProperties::from_pairs(target.properties.clone()));
    let named = target.tables.iter().find(|t| t.name == target.table);
    let spec = match (named, &target.catalog) {
        (None, Some(spec)) => spec,
        (named, _) => {
            let location = named.map_or(&target.table, |n| &n.location).clone();
            let write = WriteTarget::directory(&io, &location)?;
            return Ok((io, write, Some(location)));
        }
    };
    let ident = catalog_table_name(&target.table)?;
    let catalog = open_catalog(spec, &target.properties, io.clone()).await?;
    let io = catalog.io().clone();
    Ok((io, WriteTarget::new(catalog, ident), None))
}

pub(super) fn report<W: Write>(
    out: &mut W,
    format: ReportFormat,
    text: &str,
    object: Value,
) -> CliResult<()> {
    match format {
        ReportFormat::Text => writeln!(out, "{text}")?,
        ReportFormat::Json => writeln!(out, "{}", serde_json::to_string(&object)?)?,
    }
    out.flush()?;
    Ok(())
}
