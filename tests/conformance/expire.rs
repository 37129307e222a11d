//! Expiration against the oracles: every PyIceberg fixture table (a private copy) expires all
//! it can (every branch keeps its head only; tags keep theirs), then every kept snapshot must
//! still give the oracle's row count, and no deleted file may be reachable from what is kept.

use std::path::Path;
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use icefloe::maintenance::reachable_files;
use icefloe::maintenance::{ExpireSnapshots, SnapshotManager};
use icefloe::spec::SnapshotSelector;
use icefloe::{FileIO, IcebergTableProvider, Relocation, Table, WriteTarget};

use crate::pyiceberg::{Oracle, WRITTEN_AT, check_aggregates, has_row_level_deletes, oracle_files};
use crate::support::{self, FixtureRoot, Report};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A session with `t` = the table at snapshot `id`.
fn session(table: &Table, id: i64) -> Result<SessionContext, String> {
    let ctx = SessionContext::new();
    let provider = IcebergTableProvider::try_new(table.clone(), SnapshotSelector::SnapshotId(id))
        .map_err(|e| e.to_string())?;
    ctx.register_table("t", Arc::new(provider))
        .map_err(|e| e.to_string())?;
    Ok(ctx)
}

pub async fn check_all(root: &FixtureRoot) -> Report {
    let mut report = Report::new("expire");
    let source = root.path.join("pyiceberg/wh1");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&source, dir.path());
    let files = match oracle_files(&dir.path().join("oracle")) {
        Ok(files) => files,
        Err(e) => {
            report.mismatch("pyiceberg/wh1/oracle", e);
            return report;
        }
    };
    let relocation = Relocation::new().with_rule(WRITTEN_AT, dir.path().display().to_string());
    let io = FileIO::new(Arc::new(Default::default()), relocation);
    let later = icefloe_now() + 3_650 * 86_400_000;
    let mut expired = 0;
    for path in files {
        let Ok(oracle) = support::read_json(&path)
            .and_then(|v| serde_json::from_value::<Oracle>(v).map_err(|e| e.to_string()))
        else {
            continue;
        };
        let context = oracle.identifier.clone();
        let relative = oracle.metadata_location.replace("{warehouse}/", "");
        let location = format!("{}/{relative}", dir.path().display());
        if !Path::new(&location).is_file() || oracle.snapshots.len() < 2 {
            continue;
        }
        report.tables += 1;
        let before = match Table::load(io.clone(), &location).await {
            Ok(t) => t,
            Err(e) => {
                report.mismatch(&context, format!("load: {e}"));
                continue;
            }
        };
        let manager = SnapshotManager::new(WriteTarget::directory(&io, location.as_str()).unwrap());
        let options = ExpireSnapshots {
            older_than_ms: Some(later),
            now_ms: Some(later),
            ..Default::default()
        };
        let done = match manager.expire_snapshots(&options).await {
            Ok(done) => done,
            Err(e) => {
                report.mismatch(&context, format!("expire: {e}"));
                continue;
            }
        };
        expired += done.expired.len();
        let after = done.table.clone().unwrap_or(before);
        let reachable = reachable_files(&after).await.unwrap_or_default();
        if let Some(f) = done.deleted_files.iter().find(|f| reachable.contains(*f)) {
            report.mismatch(
                &context,
                format!("deleted {f}, which a kept snapshot reaches"),
            );
        }
        for snapshot in &oracle.snapshots {
            let kept = after
                .metadata()
                .snapshot_by_id(snapshot.snapshot_id)
                .is_some();
            let Some(expected) = snapshot.row_count.filter(|_| kept) else {
                continue;
            };
            if has_row_level_deletes(snapshot) && snapshot.row_count.is_none() {
                continue;
            }
            report.snapshots += 1;
            let at = format!("{context} @ {} (after expiration)", snapshot.snapshot_id);
            let ctx = match session(&after, snapshot.snapshot_id) {
                Ok(ctx) => ctx,
                Err(e) => {
                    report.mismatch(&at, e);
                    continue;
                }
            };
            match support::count_rows(&ctx, None).await {
                Ok(n) if n == expected => {}
                Ok(n) => report.mismatch(&at, format!("count(*): expected {expected}, got {n}")),
                Err(e) => report.mismatch(&at, e),
            }
            // The oracle's per-column aggregates too (sums, min, max, null counts).
            let types = oracle.types_of(snapshot);
            check_aggregates(&mut report, &at, &ctx, &types, snapshot).await;
        }
    }
    if report.tables > 0 && expired == 0 {
        report.mismatch(
            "expire",
            "no snapshot expired in any table: the check checked nothing",
        );
    }
    println!(
        "expire: {expired} snapshots expired over {} tables",
        report.tables
    );
    report
}

fn icefloe_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
