//! Compaction against the oracles (issue 20, item 4): every fixture table, copied, is compacted
//! (`rewrite_data_files`, once with `rewrite-all` and `remove-dangling-deletes`, once with
//! Java's defaults), then the compacted table must give the independent answers: the current
//! snapshot (the compaction's) those of the snapshot it compacted, and every older snapshot,
//! read through the new metadata, its own.
//!
//! - The PyIceberg warehouse is copied whole and written through its SQLite catalog, with the
//!   relocation `file:///data/lake/wh1` -> the copy (the supported way to write a table found
//!   elsewhere than its `location`: the rule makes the recorded location the copy, so it is not
//!   `Moved`, and new files go under the copy). Answers: the oracle's row counts, column names,
//!   aggregates, ~70 filters and counts by partition source column (DuckDB's for equality
//!   deletes); the current answers are checked in full when the compacted snapshot's schema is
//!   the one the oracle read, else by row count.
//! - Each external table is copied with its directory and written as a directory table with its
//!   answer file's relocation rules; every answer (sorted rows included) is checked by id, by
//!   `VERSION AS OF` and by timestamp, as in `external.rs`.
//!
//! With `rewrite-all`, every live data file must have been rewritten (none of them is live
//! after). Tables icefloe cannot compact must be listed in [`REFUSED`] with the reason, and
//! refused with an error naming it.

use std::path::Path;
use std::sync::Arc;

use icefloe::catalog::SqliteCatalog;
use icefloe::maintenance::{RewriteDataFiles, RewriteDataFilesResult, rewrite_data_files};
use icefloe::scan::plan_files;
use icefloe::spec::SnapshotSelector;
use icefloe::{FileIO, Relocation, Table, WriteTarget};
use serde_json::{Map, Value};

use crate::external::{self, TableAnswers};
use crate::pyiceberg::{self, Oracle, Pruning, SnapshotOracle, WRITTEN_AT, has_row_level_deletes};
use crate::support::{self, FixtureRoot, Report, TableSpec, Via, copy_dir, isolated, open_as_t};

/// Fixture tables icefloe refuses to compact: (table, a word the error must contain, why).
const REFUSED: &[(&str, &str, &str)] = &[];

/// The two compactions every table goes through.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Run {
    /// `rewrite-all` and `remove-dangling-deletes`: every file rewritten.
    RewriteAll,
    /// Java's defaults: groups of at least five small files, files with 30 % of their rows
    /// deleted.
    Defaults,
}

impl Run {
    fn options(self) -> RewriteDataFiles {
        let options = RewriteDataFiles::new();
        match self {
            Run::Defaults => options,
            Run::RewriteAll => options
                .with_option("rewrite-all", "true")
                .and_then(|o| o.with_option("remove-dangling-deletes", "true"))
                .expect("options"),
        }
    }
}

/// What the compactions did, over all tables.
#[derive(Default)]
struct Done {
    compacted_tables: usize,
    rewritten: usize,
    added: usize,
    removed_deletes: usize,
    refused: usize,
}

impl Done {
    fn add(&mut self, result: &RewriteDataFilesResult) {
        self.compacted_tables += usize::from(!result.snapshots.is_empty());
        self.rewritten += result.rewritten_data_files;
        self.added += result.added_data_files;
        self.removed_deletes += result.removed_delete_files;
    }
}

pub async fn check_all(root: &FixtureRoot, run: Run) -> Report {
    let mut report = Report::new("compaction");
    let mut done = Done::default();
    report.absorb(check_warehouse(root, run, &mut done).await);
    report.absorb(check_external(root, run, &mut done).await);
    if report.tables > 0 && done.rewritten == 0 {
        report.mismatch("compaction", "no data file rewritten in any table");
    }
    println!(
        "compaction ({run:?}): {} tables compacted, {} data files rewritten into {}, {} delete \
         files removed, {} refusals as listed in REFUSED",
        done.compacted_tables, done.rewritten, done.added, done.removed_deletes, done.refused
    );
    report
}

/// Compacts the table `target` names; `Ok(None)` when it is listed in [`REFUSED`] and was
/// refused as expected. Checks that `rewrite-all` rewrote every live data file.
async fn compact(
    report: &mut Report,
    name: &str,
    target: WriteTarget,
    run: Run,
    done: &mut Done,
) -> Option<Table> {
    let refusal = REFUSED.iter().find(|(table, _, _)| *table == name);
    let outcome = isolated(async move {
        let before = live_data_files(&target.load().await?).await?;
        let result = rewrite_data_files(&target, &run.options()).await?;
        let table = target.load().await?;
        let after = live_data_files(&table).await?;
        Ok::<_, icefloe::Error>((before, result, table, after))
    })
    .await;
    let context = format!("{name} (compaction, {run:?})");
    let (before, result, table, after) = match (outcome, refusal) {
        (Ok(Ok(compacted)), None) => compacted,
        (Ok(Err(e)), Some((_, word, _))) if support::error_chain(&e).contains(word) => {
            done.refused += 1;
            return None;
        }
        (Ok(Err(e)), _) => {
            report.mismatch(&context, support::error_chain(&e));
            return None;
        }
        (Ok(Ok(_)), Some((_, _, why))) => {
            report.mismatch(&context, format!("compacted, but listed as refused: {why}"));
            return None;
        }
        (Err(panic), _) => {
            report.mismatch(&context, panic);
            return None;
        }
    };
    done.add(&result);
    if run == Run::RewriteAll {
        if result.rewritten_data_files != before.len() {
            report.mismatch(
                &context,
                format!(
                    "rewrite-all rewrote {} of {} live data files",
                    result.rewritten_data_files,
                    before.len()
                ),
            );
        }
        if let Some(kept) = after.iter().find(|f| before.contains(f)) {
            report.mismatch(&context, format!("{kept} is still live after rewrite-all"));
        }
    }
    Some(table)
}

/// The paths of the live data files of `table`'s current snapshot.
async fn live_data_files(table: &Table) -> icefloe::Result<Vec<String>> {
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(Vec::new());
    };
    let tasks = plan_files(table.io(), table.metadata(), snapshot).await?;
    Ok(tasks.into_iter().map(|t| t.data_file.file_path).collect())
}

/// The PyIceberg warehouse: a copy, compacted table by table through its SQLite catalog.
async fn check_warehouse(root: &FixtureRoot, run: Run, done: &mut Done) -> Report {
    let mut report = Report::new("compaction");
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&root.path.join("pyiceberg/wh1"), dir.path());
    let copy = dir.path().to_string_lossy().into_owned();
    let relocation = Relocation::new().with_rule(WRITTEN_AT, copy.as_str());
    let io = FileIO::new(Arc::new(Default::default()), relocation);
    let catalog = match SqliteCatalog::open(dir.path().join("catalog.db"), None, io) {
        Ok(catalog) => Arc::new(catalog),
        Err(e) => {
            report.mismatch("pyiceberg/wh1/catalog.db", e);
            return report;
        }
    };
    let files = match pyiceberg::oracle_files(&dir.path().join("oracle")) {
        Ok(files) => files,
        Err(e) => {
            report.mismatch("pyiceberg/wh1/oracle", e);
            return report;
        }
    };
    for path in files {
        let oracle = match support::read_json(&path)
            .and_then(|v| serde_json::from_value::<Oracle>(v).map_err(|e| e.to_string()))
        {
            Ok(oracle) => oracle.with_duckdb_answers(),
            Err(e) => {
                report.mismatch(&path.display().to_string(), e);
                continue;
            }
        };
        let relative = oracle.metadata_location.replace("{warehouse}/", "");
        let metadata_path = dir.path().join(&relative);
        if !metadata_path.is_file() {
            match root.complete {
                true => report.mismatch(&oracle.identifier, format!("{relative} is missing")),
                false => report.skipped_tables.push(oracle.identifier.clone()),
            }
            continue;
        }
        let metadata = match support::read_json(&metadata_path) {
            Ok(metadata) => metadata,
            Err(e) => {
                report.mismatch(&oracle.identifier, e);
                continue;
            }
        };
        report.tables += 1;
        let (namespace, name) = oracle
            .identifier
            .rsplit_once('.')
            .expect("a namespace and a name");
        let target = match WriteTarget::sqlite(Arc::clone(&catalog), namespace, name) {
            Ok(target) => target,
            Err(e) => {
                report.mismatch(&oracle.identifier, e);
                continue;
            }
        };
        let Some(table) = compact(&mut report, &oracle.identifier, target, run, done).await else {
            continue;
        };
        let spec = TableSpec::current(
            table.metadata_location().to_string(),
            vec![(WRITTEN_AT.to_string(), copy.clone())],
        );
        report.absorb(check_oracle(&oracle, &metadata, &spec).await);
    }
    report
}

/// The compacted table `spec` opens against the oracle: the current state against the
/// answers of the snapshot that was current, every oracle snapshot by id against its own.
async fn check_oracle(oracle: &Oracle, metadata: &Value, spec: &TableSpec) -> Report {
    let mut report = Report::new("compaction");
    let current_schema = metadata["current-schema-id"].as_i64();
    for snapshot in &oracle.snapshots {
        if snapshot.is_current {
            let context = format!(
                "{} compacted (was {})",
                oracle.identifier, snapshot.snapshot_id
            );
            // The answers were read with the snapshot's schema, the compacted state with the
            // current one: in full when they are the same schema.
            let count_only = snapshot.schema_id.is_some() && snapshot.schema_id != current_schema;
            let current = spec.at(SnapshotSelector::Current, Via::Options);
            report.absorb(check_state(context, current, oracle, snapshot, count_only).await);
        }
        let context = format!(
            "{}@{} (after compaction)",
            oracle.identifier, snapshot.snapshot_id
        );
        let at = spec.at(
            SnapshotSelector::SnapshotId(snapshot.snapshot_id),
            Via::Options,
        );
        report.absorb(check_state(context, at, oracle, snapshot, false).await);
    }
    if oracle.snapshots.is_empty() {
        let context = format!("{} (no snapshot, after compaction)", oracle.identifier);
        let empty = spec.at(SnapshotSelector::Current, Via::Options);
        let counted = isolated(async move {
            let ctx = open_as_t(&empty).await?;
            support::count_rows(&ctx, None).await
        })
        .await;
        report.snapshots += 1;
        match counted {
            Ok(Ok(0)) => {}
            other => report.mismatch(&context, format!("expected 0 rows: {other:?}")),
        }
    }
    report
}

/// One state of a compacted table against one oracle snapshot's answers (its row count only
/// with `count_only`), on a task of its own.
async fn check_state(
    context: String,
    spec: TableSpec,
    oracle: &Oracle,
    snapshot: &SnapshotOracle,
    count_only: bool,
) -> Report {
    let types = oracle.types_of(snapshot);
    let snapshot = match count_only {
        true => snapshot.count_only(),
        false => snapshot.clone(),
    };
    let task_context = context.clone();
    let checked = isolated(async move {
        let mut report = Report::new("compaction");
        report.snapshots += 1;
        if has_row_level_deletes(&snapshot) {
            report.delete_snapshots += 1;
        }
        match open_as_t(&spec).await {
            Ok(ctx) => {
                pyiceberg::check_answers(
                    &mut report,
                    &task_context,
                    &ctx,
                    &types,
                    &snapshot,
                    Pruning::Unchecked,
                )
                .await
            }
            Err(e) => report.mismatch(&task_context, format!("open failed: {e}")),
        }
        report
    })
    .await;
    checked.unwrap_or_else(|panic| {
        let mut report = Report::new("compaction");
        report.mismatch(&context, panic);
        report
    })
}

/// The external tables: each copied with its directory, compacted as a directory table
/// through its answer file's relocation rules, then every answer checked.
async fn check_external(root: &FixtureRoot, run: Run, done: &mut Done) -> Report {
    let mut report = Report::new("compaction");
    let answers_path = root.path.join("external/expected_answers.json");
    let answers: Map<String, Value> = match support::read_json(&answers_path)
        .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
    {
        Ok(answers) => answers,
        Err(e) => {
            report.mismatch("expected_answers.json", e);
            return report;
        }
    };
    for (key, entry) in answers {
        let answers = match serde_json::from_value::<TableAnswers>(entry) {
            Ok(answers) => answers,
            Err(e) => {
                report.mismatch(&key, format!("bad answer entry: {e}"));
                continue;
            }
        };
        if !root.path.join("external").join(&key).is_dir() {
            match root.complete {
                true => report.mismatch(&key, "table directory is missing"),
                false => report.skipped_tables.push(key.clone()),
            }
            continue;
        }
        report.tables += 1;
        report.absorb(check_external_table(root, &key, answers, run, done).await);
    }
    report
}

async fn check_external_table(
    root: &FixtureRoot,
    key: &str,
    answers: TableAnswers,
    run: Run,
    done: &mut Done,
) -> Report {
    let mut report = Report::new("compaction");
    // The answer file's relocation targets are relative to `external/`: copy the directory
    // holding them all (the table's first path segment).
    let top = key.split('/').next().unwrap_or(key);
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&root.path.join("external").join(top), &dir.path().join(top));
    let copy = |relative: &str| dir.path().join(relative).to_string_lossy().into_owned();
    let mut relocations: Vec<(String, String)> = answers
        .relocate
        .iter()
        .map(|(old, new)| (old.clone(), copy(new)))
        .collect();
    let metadata_path = Path::new(&copy(key)).join(&answers.latest_metadata_file);
    let metadata = match support::read_json(&metadata_path) {
        Ok(metadata) => metadata,
        Err(e) => {
            report.mismatch(key, e);
            return report;
        }
    };
    let rules = |relocations: &[(String, String)]| {
        relocations
            .iter()
            .fold(Relocation::new(), |r, (old, new)| r.with_rule(old, new))
    };
    // A table whose data the rules relocate but not its recorded location (`duckdb_bigquery`:
    // `gs://...`) is relocated explicitly, as icefloe's `Moved` error says to do.
    let location = metadata["location"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if rules(&relocations).split(&location).is_none() {
        relocations.push((location, copy(key)));
    }
    let io = FileIO::new(Arc::new(Default::default()), rules(&relocations));
    let target = match WriteTarget::directory(&io, &copy(key)) {
        Ok(target) => target,
        Err(e) => {
            report.mismatch(key, e);
            return report;
        }
    };
    let Some(table) = compact(&mut report, key, target, run, done).await else {
        return report;
    };
    let spec = TableSpec::current(table.metadata_location().to_string(), relocations);
    let mut checked = external::check_scans(key, &metadata, &spec, answers.scans).await;
    // The contexts name the table as `external` does; say which suite found it.
    for mismatch in &mut checked.mismatches {
        mismatch.insert_str(0, &format!("after compaction ({run:?}): "));
    }
    report.absorb(checked);
    report
}
