//! Issue 14, "never lose a table": each defect a hostile probe found, reproduced as it was
//! reported, through the `icefloe` binary.
//!
//! A directory table `t` is made with icefloe's own SQL: `CREATE EXTERNAL TABLE` (v1) and
//! INSERTs (v2, v3, ...), `version-hint.text` naming the newest.

use std::path::{Path, PathBuf};
use std::process::Output;

use super::{icefloe, stderr, stdout};

/// A directory table with `rows.len()` commits after its creation, commit `i` inserting
/// `rows[i]` rows: `v1` .. `v(1 + rows.len())`.
fn table(parent: &Path, name: &str, rows: &[usize]) -> PathBuf {
    let dir = parent.join(name);
    let location = dir.display().to_string();
    let mut script = format!(
        "CREATE EXTERNAL TABLE t (id BIGINT, note VARCHAR) STORED AS ICEBERG LOCATION '{location}';"
    );
    let mut next = 0;
    for &n in rows {
        let values: Vec<String> = (next..next + n).map(|i| format!("({i}, 'n{i}')")).collect();
        next += n;
        script.push_str(&format!("INSERT INTO t VALUES {};", values.join(", ")));
    }
    let out = icefloe(&["sql", &script]);
    assert!(out.status.success(), "{}", stderr(&out));
    dir
}

/// `icefloe sql --table t=DIR --format csv QUERY`.
fn sql(dir: &Path, query: &str) -> Output {
    let named = format!("t={}", dir.display());
    icefloe(&["sql", "--table", &named, "--format", "csv", query])
}

fn count(dir: &Path) -> String {
    let out = sql(dir, "SELECT count(*) AS n FROM t");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().nth(1).unwrap_or_default().to_string()
}

fn metadata(dir: &Path, name: &str) -> PathBuf {
    dir.join("metadata").join(name)
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("type");
            if kind.is_dir() {
                pending.push(entry.path());
            } else {
                let rel = entry
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string();
                found.push(rel);
            }
        }
    }
    found.sort();
    found
}

/// Tomorrow, as `--older-than` takes it (epoch milliseconds).
fn tomorrow() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    (now.as_millis() + 86_400_000).to_string()
}

fn remove_orphans(dir: &Path, extra: &[&str]) -> Output {
    let location = dir.display().to_string();
    let older = tomorrow();
    let mut args = vec![
        "remove-orphans",
        location.as_str(),
        "--older-than",
        older.as_str(),
        "--format",
        "json",
    ];
    args.extend(extra);
    icefloe(&args)
}

/// The `orphan_files` of a `remove-orphans --format json` report.
fn orphan_files(report: &serde_json::Value) -> Vec<&str> {
    let files = report["orphan_files"].as_array().expect("orphan_files");
    files.iter().map(|f| f.as_str().expect("a path")).collect()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_str(stdout(out).trim()).expect("one JSON object")
}

// 1. A corrupt current metadata file is an error for every command, reads included.
#[test]
fn corrupt_current_metadata_is_an_error_for_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = table(tmp.path(), "t", &[2, 3]);
    assert_eq!(
        std::fs::read_to_string(metadata(&dir, "version-hint.text")).unwrap(),
        "3"
    );
    assert_eq!(count(&dir), "5");
    let before = files(&dir);
    std::fs::write(metadata(&dir, "v3.metadata.json"), "garbage").unwrap();

    let read = sql(&dir, "SELECT count(*) AS n FROM t");
    assert_eq!(read.status.code(), Some(1), "{}", stdout(&read));
    assert!(
        stderr(&read).contains("v3.metadata.json"),
        "{}",
        stderr(&read)
    );
    let tree = icefloe(&["tree", dir.to_str().unwrap()]);
    assert_eq!(tree.status.code(), Some(1), "{}", stdout(&tree));
    assert!(
        stderr(&tree).contains("v3.metadata.json"),
        "{}",
        stderr(&tree)
    );
    let insert = sql(&dir, "INSERT INTO t VALUES (9, 'x')");
    assert_eq!(insert.status.code(), Some(1));
    let orphans = remove_orphans(&dir, &[]);
    assert_eq!(orphans.status.code(), Some(1), "{}", stdout(&orphans));
    assert!(
        stderr(&orphans).contains("v3.metadata.json"),
        "{}",
        stderr(&orphans)
    );
    // Nothing was deleted, nothing written.
    assert_eq!(files(&dir), before);
}

// 2. A stale hint (a writer killed between creating v3 and renaming the hint over) hides
// nothing: readers, writers and maintenance all see v3.
#[test]
fn stale_version_hint_does_not_hide_the_newest_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = table(tmp.path(), "t", &[2]);
    let killed = insert_killed_before_hint_rename(&dir);
    assert!(metadata(&dir, "v3.metadata.json").exists());
    let hint = std::fs::read_to_string(metadata(&dir, "version-hint.text")).unwrap();
    assert_eq!(hint.trim(), "2", "{killed}");

    assert_eq!(count(&dir), "3", "{killed}");
    let dry = json(&remove_orphans(&dir, &["--dry-run"]));
    let orphans = orphan_files(&dry);
    assert!(
        orphans
            .iter()
            .all(|f| !f.contains("v3.metadata.json") && !f.contains("/data/")),
        "{orphans:?}"
    );
    // The next commit builds on v3 (v4, with v3's row).
    let out = sql(&dir, "INSERT INTO t VALUES (10, 'x')");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(metadata(&dir, "v4.metadata.json").exists());
    assert_eq!(count(&dir), "4");
    // A hint pointing backwards is not trusted over the files either.
    std::fs::write(metadata(&dir, "version-hint.text"), "1").unwrap();
    assert_eq!(count(&dir), "4");
    let tree = icefloe(&["tree", dir.to_str().unwrap()]);
    assert!(
        stdout(&tree).contains("version-hint.text -> 1 (stale: 3 newer version(s)"),
        "{}",
        stdout(&tree)
    );
}

/// Inserts one row into `dir` in a writer killed (SIGKILL) when it renames
/// `version-hint.text#<n>` over the hint, after creating `v3.metadata.json`: with `strace`
/// when the machine has it (`-e inject=rename:signal=KILL` on the hint path), else by
/// restoring the hint the writer wrote to its old contents (the state the kill leaves).
/// Returns how it was done.
fn insert_killed_before_hint_rename(dir: &Path) -> String {
    let named = format!("t={}", dir.display());
    let hint = metadata(dir, "version-hint.text");
    // object_store writes the hint as `version-hint.text#1`, then renames it over the hint.
    let staging = metadata(dir, "version-hint.text#1");
    let strace = std::process::Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-P"])
        .arg(&staging)
        .args(["-e", "trace=rename,renameat,renameat2"])
        .args(["-e", "inject=rename,renameat,renameat2:signal=KILL"])
        .arg(env!("CARGO_BIN_EXE_icefloe"))
        .args([
            "sql",
            "--table",
            &named,
            "INSERT INTO t VALUES (2, 'killed')",
        ])
        .env("HOME", std::env::temp_dir())
        .output();
    match strace {
        Ok(out) if out.status.code().is_none() || out.status.code() == Some(137) => {
            assert!(staging.exists(), "the kill leaves the staging file");
            "killed by strace at the hint's rename".to_string()
        }
        other => {
            // No strace (or no ptrace): the same state, made by hand.
            let out = sql(dir, "INSERT INTO t VALUES (2, 'killed')");
            assert!(out.status.success(), "{}", stderr(&out));
            std::fs::write(&hint, "2").unwrap();
            std::fs::write(&staging, "3").unwrap();
            format!("strace unavailable ({other:?}): state made by hand")
        }
    }
}

// 3. A copy is read where it is, and never writes into (or deletes from) the original.
#[test]
fn a_copied_table_never_writes_into_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let original = table(tmp.path(), "d9", &[2, 3]);
    let copy = tmp.path().join("d9copy");
    super::copy_dir(&original, &copy);
    let untouched = files(&original);

    let insert = sql(&copy, "INSERT INTO t VALUES (9, 'x')");
    assert_eq!(insert.status.code(), Some(1));
    assert!(
        stderr(&insert).contains("--relocate"),
        "{}",
        stderr(&insert)
    );
    // The command line's own ways of fixing it, not the Rust API's.
    assert!(
        !stderr(&insert).contains("TableOptions"),
        "{}",
        stderr(&insert)
    );
    let expire = icefloe(&["expire", copy.to_str().unwrap(), "--retain-last", "1"]);
    assert_eq!(expire.status.code(), Some(1), "{}", stdout(&expire));
    let orphans = remove_orphans(&copy, &[]);
    assert_eq!(orphans.status.code(), Some(1), "{}", stdout(&orphans));
    assert_eq!(files(&original), untouched);

    // Reads relocate: the copy reads its own files, even with the original gone.
    std::fs::rename(&original, tmp.path().join("elsewhere")).unwrap();
    assert_eq!(count(&copy), "5");
    // Relocated explicitly, the copy takes writes, into itself.
    let rule = format!("{}={}", original.display(), copy.display());
    let named = format!("t={}", copy.display());
    let out = icefloe(&[
        "sql",
        "--table",
        &named,
        "--relocate",
        &rule,
        "INSERT INTO t VALUES (9, 'x')",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(metadata(&copy, "v4.metadata.json").exists());
    assert!(!original.exists());
    let out = icefloe(&[
        "sql",
        "--table",
        &named,
        "--relocate",
        &rule,
        "--format",
        "csv",
        "SELECT count(*) AS n FROM t",
    ]);
    assert_eq!(stdout(&out), "n\n6\n", "{}", stderr(&out));
}

// 5. Orphan removal never follows a link out of the table.
#[test]
fn remove_orphans_never_follows_links_out_of_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = table(tmp.path(), "t", &[1]);
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("keep.parquet"), b"precious").unwrap();
    std::fs::write(tmp.path().join("keep-file.parquet"), b"precious").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("data/link")).unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("keep-file.parquet"),
        dir.join("data/f.parquet"),
    )
    .unwrap();

    let done = json(&remove_orphans(&dir, &[]));
    assert_eq!(done["orphan_files"].as_array().unwrap().len(), 0, "{done}");
    assert_eq!(done["symbolic_links_skipped"], 2, "{done}");
    assert!(elsewhere.join("keep.parquet").exists());
    assert!(dir.join("data/f.parquet").exists());
    assert_eq!(count(&dir), "1");
}

// 6. A version hint is a version (or a metadata file name), never a path to follow.
#[test]
fn a_version_hint_is_never_followed_out_of_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let other = table(tmp.path(), "other8", &[4]);
    let dir = table(tmp.path(), "t", &[1]);
    std::fs::write(
        metadata(&dir, "version-hint.text"),
        "../../other8/metadata/v2.metadata.json",
    )
    .unwrap();
    let read = sql(&dir, "SELECT count(*) AS n FROM t");
    assert_eq!(read.status.code(), Some(1), "{}", stdout(&read));
    assert!(
        stderr(&read).contains("version-hint.text"),
        "{}",
        stderr(&read)
    );
    let insert = sql(&dir, "INSERT INTO t VALUES (5, 'x')");
    assert_eq!(insert.status.code(), Some(1));
    assert!(!metadata(&other, "v3.metadata.json").exists());
    assert_eq!(count(&other), "4");
    // A file name inside metadata/ is a hint some writers write: accepted.
    std::fs::write(metadata(&dir, "version-hint.text"), "v2.metadata.json").unwrap();
    assert_eq!(count(&dir), "1");
}

// 6. `CREATE EXTERNAL TABLE ... LOCATION 'x/../../y'` records `y`.
#[test]
fn create_normalises_dot_dot_in_the_location() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().display();
    let out = icefloe(&[
        "sql",
        &format!(
            "CREATE EXTERNAL TABLE t (id BIGINT) STORED AS ICEBERG \
             LOCATION '{base}/a/b/../../y'; INSERT INTO t VALUES (1)"
        ),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v1 = std::fs::read_to_string(tmp.path().join("y/metadata/v1.metadata.json")).unwrap();
    let v1: serde_json::Value = serde_json::from_str(&v1).unwrap();
    assert_eq!(v1["location"], format!("{base}/y"));
    assert!(!tmp.path().join("a").exists());
}

// 7. The temporary files of killed writers are orphans like any other.
#[test]
fn temporary_files_of_killed_writers_are_orphans() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = table(tmp.path(), "t", &[1]);
    let leftovers = [
        "data/00000-0-5c1e7d0a-a0a3-4a5b-9b0e-1f1f1f1f1f1f.parquet#1",
        "metadata/v9.metadata.json#1",
        "metadata/version-hint.text#1",
    ];
    for leftover in leftovers {
        std::fs::write(dir.join(leftover), b"partial").unwrap();
    }
    let dry = json(&remove_orphans(&dir, &["--dry-run"]));
    let mut orphans: Vec<String> = dry["orphan_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            f.as_str()
                .unwrap()
                .rsplit_once("/t/")
                .unwrap()
                .1
                .to_string()
        })
        .collect();
    orphans.sort();
    assert_eq!(orphans, leftovers);
    let done = json(&remove_orphans(&dir, &[]));
    assert_eq!(done["deleted"], 3, "{done}");
    assert!(leftovers.iter().all(|l| !dir.join(l).exists()));
    assert_eq!(count(&dir), "1");
}

// 11. `icefloe check` looks at every file the metadata promises.
#[test]
fn check_finds_missing_and_resized_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = table(tmp.path(), "t", &[2, 3]);
    let out = icefloe(&["check", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("no problem found"),
        "{}",
        stdout(&out)
    );

    let problems = |dir: &Path| {
        let out = icefloe(&["check", dir.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
        let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        report["problems"].to_string()
    };
    // A missing data file: count(*) trusts the manifest lists (as Iceberg does) ...
    let data: Vec<String> = files(&dir)
        .into_iter()
        .filter(|f| f.starts_with("data/"))
        .collect();
    std::fs::remove_file(dir.join(&data[0])).unwrap();
    assert_eq!(count(&dir), "5");
    // ... check does not.
    let found = problems(&dir);
    assert!(
        found.contains(&data[0]) && found.contains("is missing"),
        "{found}"
    );
    // A manifest of another size than its list records.
    let manifest = files(&dir)
        .into_iter()
        .find(|f| f.ends_with("-m0.avro"))
        .unwrap();
    let mut bytes = std::fs::read(dir.join(&manifest)).unwrap();
    bytes.extend_from_slice(b"extra");
    std::fs::write(dir.join(&manifest), bytes).unwrap();
    let found = problems(&dir);
    assert!(
        found.contains(&manifest) && found.contains("bytes, the manifest list records"),
        "{found}"
    );
}

// 11. ... and finds nothing wrong with tables another engine wrote: every PyIceberg table checks
// clean, with as many snapshots, distinct manifests and distinct files as PyIceberg's `inspect`
// (`all_manifests`, `all_files`) lists.
#[test]
fn check_agrees_with_pyiceberg_on_its_tables() {
    let oracle_dir = super::fixture("pyiceberg/wh1/oracle");
    let mut oracles: Vec<PathBuf> = std::fs::read_dir(&oracle_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    oracles.sort();
    let distinct = |rows: &serde_json::Value, key: &str| {
        let rows = rows.as_array()?;
        let names: std::collections::BTreeSet<&str> =
            rows.iter().filter_map(|row| row[key].as_str()).collect();
        Some(names.len() as u64)
    };
    let mut compared = 0;
    for path in &oracles {
        let oracle: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let identifier = oracle["identifier"].as_str().unwrap();
        let mut args = vec!["check".to_string(), identifier.into()];
        args.extend(super::wh1_args());
        args.extend(["--format".into(), "json".into()]);
        let out = super::icefloe_owned(args);
        assert!(
            out.status.success(),
            "{identifier}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(report["problems"], serde_json::json!([]), "{identifier}");
        assert_eq!(report["warnings"], serde_json::json!([]), "{identifier}");
        let snapshots = oracle["snapshots"].as_array().unwrap().len() as u64;
        assert_eq!(report["snapshots"], snapshots, "{identifier}");
        let inspect = &oracle["inspect"];
        if let Some(manifests) = distinct(&inspect["all_manifests"], "path") {
            assert_eq!(report["manifests"], manifests, "{identifier}: manifests");
            compared += 1;
        }
        // PyIceberg could not list the files of some tables (an Arrow extension type).
        if let Some(files) = distinct(&inspect["all_files"], "file_path") {
            assert_eq!(report["files"], files, "{identifier}: files");
            compared += 1;
        }
    }
    assert!(compared >= 20, "only {compared} counts compared");
}
