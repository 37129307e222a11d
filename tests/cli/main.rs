//! End-to-end tests of the `icefloe` binary: arguments, output formats, exit codes and errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn icefloe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(args)
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("the icefloe binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

#[test]
fn help_lists_subcommands() {
    let out = icefloe(&["--help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("sql") && text.contains("tree"), "{text}");

    let out = icefloe(&["sql", "--help"]);
    assert!(out.status.success());
    let text = stdout(&out);
    for flag in ["--catalog", "--table", "--relocate", "--format"] {
        assert!(text.contains(flag), "{flag} missing from:\n{text}");
    }
}

#[test]
fn bad_arguments_exit_non_zero() {
    let out = icefloe(&["sql", "--format", "xml", "SELECT 1"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("xml"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
}

#[test]
fn bad_query_reports_on_stderr() {
    let out = icefloe(&["sql", "SELEC 1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    // One line, the parser's message once, its position in the failing statement.
    assert_eq!(
        stderr(&out),
        "Error: sql parser error: Expected: an SQL statement, found: SELEC at Line: 1, Column: 1\n"
    );
    // The third statement starts on line 3 of the input: its error is on its own line 2.
    let out = icefloe(&["sql", "SELECT 1 AS a;\nSELECT 2;\nSELECT\n  1 +* 2"]);
    assert!(
        stderr(&out).contains("found: * at Line: 2, Column: 6\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unknown_table_is_an_error() {
    let out = icefloe(&["sql", "SELECT * FROM no_such_table"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no_such_table"), "{}", stderr(&out));
}

#[test]
fn multiple_statements_as_csv() {
    let out = icefloe(&["sql", "--format", "csv", "SELECT 1 AS a; SELECT 2 AS b"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "a\n1\nb\n2\n");
}

#[test]
fn multiple_statements_as_json() {
    let sql = "SELECT 1 AS a, 'x;y' AS s; -- a comment; with a semicolon\nSELECT 2 AS b;";
    let out = icefloe(&["sql", "--format", "json", sql]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"a\":1,\"s\":\"x;y\"}\n{\"b\":2}\n");
}

#[test]
fn json_value_types() {
    let sql = "SELECT CAST(1.5 AS DOUBLE) AS d, CAST('123.45' AS DECIMAL(10,2)) AS m, \
               DATE '2024-01-01' AS day, TIMESTAMP '2024-01-01 10:00:00' AS ts, \
               [1, 2] AS l, named_struct('k', 'v') AS s, NULL AS n, true AS b";
    let out = icefloe(&["sql", "--format", "json", sql]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\"d\":1.5,\"m\":\"123.45\",\"day\":\"2024-01-01\",\"ts\":\"2024-01-01T10:00:00\",\
         \"l\":[1,2],\"s\":{\"k\":\"v\"},\"n\":null,\"b\":true}\n"
    );
}

/// Integers beyond 2^53 (snapshot ids) print as numbers by default, as exact decimal strings
/// with `--json-big-int string` (also inside lists and structs); smaller ones stay numbers.
#[test]
fn json_big_ints_as_strings() {
    let sql = "SELECT 5717840931077797238 AS id, -9007199254740993 AS neg, 9007199254740992 AS edge, \
               7 AS small, [5717840931077797238] AS l, named_struct('k', 9007199254740993) AS s";
    let out = icefloe(&["sql", "--format", "json", sql]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\"id\":5717840931077797238,\"neg\":-9007199254740993,\"edge\":9007199254740992,\
         \"small\":7,\"l\":[5717840931077797238],\"s\":{\"k\":9007199254740993}}\n"
    );
    let out = icefloe(&["sql", "--format", "json", "--json-big-int", "string", sql]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\"id\":\"5717840931077797238\",\"neg\":\"-9007199254740993\",\"edge\":9007199254740992,\
         \"small\":7,\"l\":[\"5717840931077797238\"],\"s\":{\"k\":\"9007199254740993\"}}\n"
    );
}

#[test]
fn table_format_is_the_default() {
    let out = icefloe(&["sql", "SELECT 1 AS a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "+---+\n| a |\n+---+\n| 1 |\n+---+\n");
}

#[test]
fn statements_after_an_error_run_unless_on_error_stop() {
    let sql = "SELECT 1 AS a; SELECT * FROM nope; SELECT 3 AS c";
    let out = icefloe(&["sql", "--format", "csv", sql]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "a\n1\nc\n3\n");
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));

    let out = icefloe(&["sql", "--format", "csv", "--on-error-stop", sql]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "a\n1\n");
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
}

#[test]
fn information_schema_is_enabled() {
    let out = icefloe(&[
        "sql",
        "--format",
        "csv",
        "SELECT count(*) > 0 AS ok FROM information_schema.tables",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\ntrue\n");
}

#[test]
fn missing_table_location_is_an_error() {
    let out = icefloe(&["sql", "--table", "t=/no/such/table", "SELECT 1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("/no/such/table"), "{}", stderr(&out));

    let out = icefloe(&["tree", "/no/such/table"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("Error: "), "{}", stderr(&out));
}

#[test]
fn missing_catalog_is_an_error() {
    let out = icefloe(&["sql", "--catalog", "/no/such/catalog.db", "SELECT 1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("catalog database /no/such/catalog.db does not exist")
            && err.contains("icefloe catalog create /no/such/catalog.db"),
        "{err}"
    );
}

/// `icefloe catalog create` makes a catalog that icefloe writes to and PyIceberg opens with
/// the line it prints; an existing database is never overwritten.
#[test]
fn catalog_create_makes_a_catalog_pyiceberg_opens() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("new.db");
    let db = db.to_str().expect("utf-8 path");
    let out = icefloe(&["catalog", "create", db]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("created catalog 'default'"), "{text}");
    let pyiceberg = text
        .lines()
        .find_map(|l| l.strip_prefix("PyIceberg: "))
        .expect("a PyIceberg line")
        .to_string();

    let sql = "CREATE SCHEMA db; CREATE TABLE db.t (x INT); INSERT INTO db.t VALUES (1), (2)";
    let out = icefloe(&["sql", "--catalog", db, sql]);
    assert!(out.status.success(), "{}", stderr(&out));

    let again = icefloe(&["catalog", "create", db]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );

    let Some(python) = std::env::var_os("ICEFLOE_PYTHON") else {
        eprintln!("catalog create: ICEFLOE_PYTHON is not set, PyIceberg's check was NOT run");
        return;
    };
    let script =
        format!("{pyiceberg}\nprint(catalog.load_table('db.t').scan().to_arrow().num_rows)");
    let out = Command::new(python)
        .args(["-c", &script])
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "2");
}

/// `icefloe sql` with `stdin` piped in and `args`.
fn icefloe_piped(args: &[&str], input: &str, home: &Path) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .args(args)
        .env("HOME", home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the icefloe binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("icefloe ends")
}

/// Statements piped in run as a script: every one, the last without `;` too, up to `\q`; a
/// failing one is reported and the rest still run, and the exit status says it failed; none
/// goes into the shell's history.
#[test]
fn piped_statements_run_as_a_script() {
    let home = tempfile::tempdir().expect("temp home");
    let out = icefloe_piped(
        &["sql", "--format", "csv"],
        "SELECT 1 AS a;\nSELECT 2 AS b",
        home.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "a\n1\nb\n2\n");

    let out = icefloe_piped(&["sql"], "SELECT * FROM nope;\n", home.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));

    let input = "SELECT 1 AS a,\n 'x;y' AS b;\nSELECT * FROM nope;\nSELECT 2\n AS c; -- tail\n\\q\nSELECT 99 AS z;\n";
    let out = icefloe_piped(&["sql", "--format", "csv"], input, home.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "a,b\n1,x;y\nc\n2\n");
    let err = stderr(&out);
    assert!(
        err.contains("nope") && err.contains("1 of 3 statement(s) failed"),
        "{err}"
    );
    assert!(!home.path().join(".icefloe_history").exists());

    let out = icefloe_piped(
        &["sql", "--format", "csv", "--on-error-stop"],
        input,
        home.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "a,b\n1,x;y\n");
}

/// `-c` and `-f` run like QUERY, in order: QUERY, the commands, then the files.
#[test]
fn commands_and_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("script.sql");
    std::fs::write(&file, "SELECT 3 AS c;\nSELECT 4 AS d").expect("write script");
    let file = file.to_str().expect("utf-8 path");
    let out = icefloe(&[
        "sql",
        "--format",
        "csv",
        "-f",
        file,
        "-c",
        "SELECT 2 AS b",
        "SELECT 1 AS a",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "a\n1\nb\n2\nc\n3\nd\n4\n");

    let out = icefloe(&["sql", "-f", "/no/such/script.sql"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("/no/such/script.sql"),
        "{}",
        stderr(&out)
    );
}

/// The PyIceberg warehouse fixture, relocated from where it was written.
fn wh1_args() -> Vec<String> {
    let wh1 = fixture("pyiceberg/wh1");
    vec![
        "--catalog".into(),
        wh1.join("catalog.db").display().to_string(),
        "--relocate".into(),
        format!("file:///data/lake/wh1={}", wh1.display()),
    ]
}

fn icefloe_owned(args: Vec<String>) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    icefloe(&args)
}

#[test]
fn catalog_tables_by_namespace() {
    let mut args = vec!["sql".to_string(), "--format".into(), "json".into()];
    args.extend(wh1_args());
    args.push(
        "SELECT count(*) AS n FROM db.orders; \
         SELECT * FROM db.orders ORDER BY order_id LIMIT 1; \
         SELECT count(*) AS n FROM \"nested.inner\".deep_table"
            .into(),
    );
    let out = icefloe_owned(args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "{\"n\":20}\n\
         {\"order_id\":1,\"customer_id\":15,\"order_ts\":\"2024-01-01T09:25:22+00:00\",\"amount\":\"673.19\"}\n\
         {\"n\":3}\n"
    );
}

#[test]
fn registered_table_directory() {
    let wh1 = fixture("pyiceberg/wh1");
    let out = icefloe_owned(vec![
        "sql".into(),
        "--format".into(),
        "csv".into(),
        "--table".into(),
        format!("o={}", wh1.join("db/orders").display()),
        "--relocate".into(),
        format!("file:///data/lake/wh1={}", wh1.display()),
        "SELECT count(*) AS n FROM o".into(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "n\n20\n");
}

#[test]
fn tree_of_a_catalog_table() {
    let mut args = vec!["tree".to_string(), "db.orders".into()];
    args.extend(wh1_args());
    let out = icefloe_owned(args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("db.orders  (pointer: catalog "),
        "{text}"
    );
    assert!(lines[1].starts_with("└── metadata/00002-"), "{text}");
    assert!(text.contains("(current)"), "{text}");
    assert!(
        text.contains("partitions order_ts_day=[2024-01-01, 2024-01-01]"),
        "{text}"
    );
    assert!(
        text.contains("10 rows  2.0 KiB  partition {order_ts_day=2024-01-02}"),
        "{text}"
    );
    assert!(text.contains(" (reused)  files +1 ~0 -0"), "{text}");
}

#[test]
fn tree_of_a_table_directory() {
    let dir = fixture("external/impala_trino_variant");
    let out = icefloe_owned(vec![
        "tree".into(),
        dir.display().to_string(),
        "--relocate".into(),
        format!("/test-warehouse/trino_variant={}", dir.display()),
        "--max-files".into(),
        "0".into(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines()
            .next()
            .unwrap_or_default()
            .ends_with("(pointer: metadata/version-hint.text -> 2)"),
        "{text}"
    );
    assert!(
        text.contains("└── metadata/v2.metadata.json  format v3"),
        "{text}"
    );
    assert!(text.contains("└── … and 1 more"), "{text}");
}

/// Copies a directory tree.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A broken manifest is drawn in place, the rest of the tree after it, and `tree` exits 1.
#[test]
fn tree_shows_a_truncated_manifest_in_place_and_goes_on() {
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture("external/impala_trino_variant"), copy.path());
    let manifest = copy
        .path()
        .join("metadata/a874fc23-2c2c-42b5-9fc0-f72919a7449d-m0.avro");
    let bytes = std::fs::read(&manifest).expect("manifest");
    std::fs::write(&manifest, &bytes[..bytes.len() / 2]).expect("truncate");
    let out = icefloe_owned(vec![
        "tree".into(),
        copy.path().display().to_string(),
        "--relocate".into(),
        format!("/test-warehouse/trino_variant={}", copy.path().display()),
    ]);
    // The whole tree is drawn, and the exit status says that a file could not be read.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("1 file(s) of the tree could not be read"),
        "{}",
        stderr(&out)
    );
    let text = stdout(&out);
    let broken = text
        .lines()
        .position(|l| l.contains("a874fc23-2c2c-42b5-9fc0-f72919a7449d-m0.avro"))
        .expect("the manifest is drawn");
    let next = text.lines().nth(broken + 1).unwrap_or_default();
    assert!(
        next.contains("error: ") && next.contains("m0.avro"),
        "{text}"
    );
    // The other snapshot's manifest list still shows.
    assert!(text.contains("snap-8332248857076198293"), "{text}");
}

#[test]
fn tree_shows_what_delete_files_apply_to() {
    let dir = fixture("external/impala_v3_deletion_vectors");
    let out = icefloe_owned(vec![
        "tree".into(),
        dir.display().to_string(),
        "--relocate".into(),
        format!(
            "hdfs://localhost:20500/test-warehouse/iceberg_v3_deletion_vectors={}",
            dir.display()
        ),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // Two vectors in one Puffin file, each naming a different data file that exists.
    let targets: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("deletion vector data/") && l.contains(".puffin"))
        .filter_map(|l| l.split("  -> ").nth(1))
        .collect();
    assert_eq!(targets.len(), 2, "{text}");
    assert_ne!(targets[0], targets[1], "{text}");
    for target in targets {
        assert!(dir.join(target).is_file(), "{target} in {text}");
    }

    let dir = fixture("external/impala_v2_delete_equality_multi_eq_ids");
    let out = icefloe_owned(vec![
        "tree".into(),
        dir.display().to_string(),
        "--relocate".into(),
        format!(
            "/test-warehouse/iceberg_test/hadoop_catalog/ice/iceberg_v2_delete_equality_multi_eq_ids={}",
            dir.display()
        ),
    ]);
    let text = stdout(&out);
    // The table's name says it: equality deletes keyed on different column sets.
    let keys: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| l.contains("equality deletes data/"))
        .filter_map(|l| l.split("  on ").nth(1))
        .collect();
    assert!(keys.len() >= 2, "{text}");
}

#[test]
fn demo_builds_a_warehouse_and_walks_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("wh");
    let out = icefloe(&["demo", warehouse.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // The rows the demo inserts: 3 orders on 2026-07-13 (25.50 + 110.00 + 7.25 = 142.75), 2 on
    // 2026-07-14 (42.00 + 19.99), so 5 orders and 204.74 in all.
    assert!(text.contains("| 3      | 142.75  |"), "{text}");
    assert!(text.contains("| 5      | 204.74  |"), "{text}");
    // The second manifest list reuses the first commit's manifest; the pruned query reads one
    // of the two manifests.
    assert_eq!(text.matches("(reused)").count(), 1, "{text}");
    // The catalog's name, with the line that opens it in PyIceberg.
    assert!(
        text.contains("catalog 'demo' in ")
            && text.contains("PyIceberg: from pyiceberg.catalog.sql import SqlCatalog; catalog = SqlCatalog(\"demo\""),
        "{text}"
    );
    assert!(
        text.contains("manifests_total=2 manifests_pruned=1 data_files_scanned=1"),
        "{text}"
    );
    // What it made is an ordinary catalog the other commands read.
    let db = warehouse.join("catalog.db");
    let out = icefloe(&[
        "sql",
        "--catalog",
        db.to_str().unwrap(),
        "--format",
        "csv",
        "SELECT order_id FROM db.orders WHERE customer_id = 102 ORDER BY 1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "order_id\n2\n5\n");
    // A second demo in the same place is refused, leaving the first alone.
    let out = icefloe(&["demo", warehouse.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
}

#[test]
fn maintenance_commands_tag_branch_roll_back_and_expire() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("wh");
    assert!(
        icefloe(&["demo", warehouse.to_str().unwrap()])
            .status
            .success()
    );
    let db = warehouse.join("catalog.db");
    let db = db.to_str().unwrap();
    let sql = |query: &str| {
        let out = icefloe(&["sql", "--catalog", db, "--format", "csv", query]);
        assert!(out.status.success(), "{query}: {}", stderr(&out));
        stdout(&out)
    };
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--catalog", db]);
        icefloe(&all)
    };
    let ids = sql(r#"SELECT snapshot_id FROM db."orders$snapshots" ORDER BY committed_at"#);
    let ids: Vec<&str> = ids.lines().skip(1).collect();
    let (first, second) = (ids[0], ids[1]);

    let out = run(&[
        "tag",
        "db.orders",
        "first",
        "--snapshot",
        first,
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected =
        format!(r#"{{"action":"create","kind":"tag","name":"first","snapshot_id":{first}}}"#);
    assert_eq!(stdout(&out).trim(), expected);
    let out = run(&["branch", "db.orders", "dev"]);
    assert_eq!(
        stdout(&out).trim(),
        format!("created branch 'dev' at snapshot {second}")
    );
    // Back to the first commit: its 3 orders (the demo's first day).
    let out = run(&["rollback", "db.orders", "--snapshot", first]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sql("SELECT count(*) AS n FROM db.orders"), "n\n3\n");
    // The second commit is still dev's head: nothing expires.
    let out = run(&["expire", "db.orders", "--dry-run", "--format", "json"]);
    assert!(
        stdout(&out).contains(r#""expired_snapshot_ids":[]"#),
        "{}",
        stdout(&out)
    );
    // Without dev, it is on no branch: it expires with its list, manifest and data file.
    assert!(
        run(&["branch", "db.orders", "dev", "--drop"])
            .status
            .success()
    );
    let out = run(&["expire", "db.orders", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        report["expired_snapshot_ids"].to_string(),
        format!("[{second}]")
    );
    let deleted = report["deleted_files"].as_array().unwrap();
    assert_eq!(deleted.len(), 3, "{deleted:?}");
    assert!(
        deleted
            .iter()
            .all(|f| !Path::new(f.as_str().unwrap()).exists())
    );
    assert_eq!(sql("SELECT count(*) AS n FROM db.orders"), "n\n3\n");
    assert_eq!(
        sql("SELECT count(*) AS n FROM db.orders.tag_first"),
        "n\n3\n"
    );
    // main stays.
    let out = run(&["branch", "db.orders", "main", "--drop"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot be dropped"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn remove_orphans_deletes_only_old_unreferenced_files() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("wh");
    assert!(
        icefloe(&["demo", warehouse.to_str().unwrap()])
            .status
            .success()
    );
    let db = warehouse.join("catalog.db");
    let db = db.to_str().unwrap();
    // A failed write's leftover, ten days old, and one of a write that may still commit.
    let data = warehouse.join("db/orders/data");
    let old = data.join("00000-crashed.parquet");
    let young = data.join("00001-in-flight.parquet");
    std::fs::write(&old, b"PAR1").unwrap();
    std::fs::write(&young, b"PAR1").unwrap();
    let ten_days = std::time::Duration::from_secs(10 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - ten_days)
        .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "remove-orphans",
            "db.orders",
            "--catalog",
            db,
            "--format",
            "json",
        ];
        args.extend(extra);
        let out = icefloe(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).unwrap()
    };
    let dry = run(&["--dry-run"]);
    let orphans = dry["orphan_files"].as_array().unwrap();
    assert_eq!(orphans.len(), 1, "{dry}");
    assert!(
        orphans[0]
            .as_str()
            .unwrap()
            .ends_with("00000-crashed.parquet")
    );
    assert!(old.exists());
    let done = run(&[]);
    assert_eq!(done["deleted"], 1);
    assert!(!old.exists() && young.exists());
    let out = icefloe(&[
        "sql",
        "--catalog",
        db,
        "--format",
        "csv",
        "SELECT count(*) AS n FROM db.orders",
    ]);
    assert_eq!(stdout(&out), "n\n5\n");
}

/// A table directory `<dir>/t` with one column `id` and one row (1), made through the CLI.
fn one_row_table(dir: &Path) -> String {
    let location = dir.join("t").to_str().expect("utf-8 path").to_string();
    let create = format!(
        "CREATE EXTERNAL TABLE t (id INT) STORED AS ICEBERG LOCATION '{location}'; \
         INSERT INTO t VALUES (1)"
    );
    let out = icefloe(&["sql", &create]);
    assert!(out.status.success(), "{}", stderr(&out));
    location
}

/// A table registered with `--table` is as fresh in every statement as a catalog table: an
/// INSERT into its branch shows in `t.branch_b`, `"t@b"` and `VERSION AS OF 'b'`, and a commit
/// by another writer (here the same directory registered a second time, as another process
/// would see it) shows in the next statement.
#[test]
fn table_directories_are_read_fresh_in_every_statement() {
    let dir = tempfile::tempdir().expect("temp dir");
    let location = one_row_table(dir.path());
    let location = location.as_str();
    let out = icefloe(&["branch", location, "b1"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let e = format!("e={location}");
    let f = format!("f={location}");
    let script = "INSERT INTO e.branch_b1 VALUES (2); \
                  SELECT count(*) AS branch FROM e.branch_b1; \
                  SELECT count(*) AS at FROM \"e@b1\"; \
                  SELECT count(*) AS version FROM e VERSION AS OF 'b1'; \
                  SELECT count(*) AS main FROM e; \
                  INSERT INTO f VALUES (3); \
                  SELECT count(*) AS main FROM e; \
                  SELECT count(*) AS at FROM \"e@main\"";
    let out = icefloe(&[
        "sql", "--format", "csv", "--table", &e, "--table", &f, script,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "count\n1\nbranch\n2\nat\n2\nversion\n2\nmain\n1\ncount\n1\nmain\n2\nat\n2\n"
    );
}

/// `--read-only` refuses every statement that would write, before it runs, and lets reads
/// through; with `--relocate`, the first write says where writes go.
#[test]
fn read_only_refuses_writes_and_relocate_says_where_writes_go() {
    let dir = tempfile::tempdir().expect("temp dir");
    let location = one_row_table(dir.path());
    let location = location.as_str();
    let table = format!("t={location}");
    let metadata = dir.path().join("t/metadata");
    let versions = || std::fs::read_dir(&metadata).expect("metadata dir").count();
    let before = versions();

    let script = "SELECT count(*) AS n FROM t; INSERT INTO t VALUES (2); \
                  SELECT * FROM iceberg_create_tag('t', 'x'); SELECT count(*) AS n FROM t";
    let out = icefloe(&[
        "sql",
        "--format",
        "csv",
        "--read-only",
        "--table",
        &table,
        script,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "n\n1\nn\n1\n");
    let err = stderr(&out);
    assert!(err.contains("refused by --read-only: INSERT"), "{err}");
    assert!(err.contains("iceberg_create_tag"), "{err}");
    assert!(err.contains("2 of 4 statement(s) failed"), "{err}");
    assert_eq!(versions(), before, "nothing was written");

    let relocate = format!("/nowhere={location}");
    let out = icefloe(&[
        "sql",
        "--relocate",
        &relocate,
        "--table",
        &table,
        "SELECT count(*) FROM t; INSERT INTO t VALUES (2); INSERT INTO t VALUES (3)",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("note: --relocate applies to writes too")
            .count(),
        1,
        "{err}"
    );
}

#[cfg(unix)]
mod compaction;
mod readme;
mod safety;
#[cfg(unix)]
mod shell;

/// `--max-rows` (40 by default) limits a table result, with a footer saying how many rows
/// there were; CSV and JSON print every row. With `--format json` errors are JSON objects.
#[test]
fn max_rows_and_json_errors() {
    let out = icefloe(&["sql", "--max-rows", "5", "SELECT value FROM range(20)"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.ends_with("+-------+\n20 rows (5 shown)\n"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("| ")).count(),
        6,
        "{text}"
    );
    let text = stdout(&icefloe(&["sql", "SELECT value FROM range(20)"]));
    assert!(
        !text.contains("rows"),
        "no footer when nothing is left out: {text}"
    );
    let text = stdout(&icefloe(&["sql", "SELECT value FROM range(100)"]));
    assert!(text.contains("100 rows (40 shown)"), "{text}");
    let text = stdout(&icefloe(&[
        "sql",
        "--max-rows",
        "0",
        "SELECT value FROM range(100)",
    ]));
    assert_eq!(
        text.lines().filter(|l| l.starts_with("| ")).count(),
        101,
        "{text}"
    );
    let out = icefloe(&[
        "sql",
        "--format",
        "csv",
        "--max-rows",
        "5",
        "SELECT value FROM range(20)",
    ]);
    assert_eq!(stdout(&out).lines().count(), 21);

    let out = icefloe(&[
        "sql",
        "--format",
        "json",
        "SELECT 1 AS a; SELECT * FROM nope",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "{\"a\":1}\n");
    let errors: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each error line is a JSON object"))
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0]["statement"], 2);
    assert!(errors[0]["error"].as_str().unwrap().contains("nope"));
    assert_eq!(errors[1]["error"], "1 of 2 statement(s) failed");
}

/// A catalog table's name where a table directory belongs says how to name the catalog; an
/// object store URL without its store says what icefloe reads; no Rust API advice.
#[test]
fn names_where_locations_belong_and_unknown_stores() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run_in = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_icefloe"))
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .args(args)
            .output()
            .expect("icefloe runs")
    };
    let out = run_in(&["tree", "db.orders"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("'db.orders' is not a table directory or metadata file")
            && err.contains("icefloe tree --catalog FILE.db db.orders"),
        "{err}"
    );
    let out = run_in(&["sql", "SELECT * FROM iceberg_scan('db.orders')"]);
    let err = stderr(&out);
    assert!(
        err.contains("'db.orders': there is no such file or directory")
            && err.contains("`namespace.table` is a table of a catalog"),
        "{err}"
    );
    let out = run_in(&["sql", "SELECT * FROM iceberg_scan('hdfs://cluster/wh/t')"]);
    let err = stderr(&out);
    assert!(
        err.contains("no object store for hdfs://cluster/ is registered in this session")
            && !err.contains("RuntimeEnv")
            && !err.contains("bug"),
        "{err}"
    );
    // S3 without credentials (and an instance metadata service that does not answer): the
    // error names the location and says where credentials come from.
    let out = Command::new(env!("CARGO_BIN_EXE_icefloe"))
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE")
        .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        .args([
            "sql",
            "--property",
            "aws_metadata_endpoint=http://127.0.0.1:1",
            "--property",
            "s3.retry.num-retries=0",
            "SELECT * FROM iceberg_scan('s3://bucket/wh/t')",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("s3://bucket/wh/t") && err.contains("no S3 credentials were found"),
        "{err}"
    );
}

/// A relocated table whose files are missing: errors name the path in the metadata and the
/// one read.
#[test]
fn relocation_failures_name_both_paths() {
    let wh1 = fixture("pyiceberg/wh1");
    let out = icefloe(&[
        "sql",
        "--catalog",
        wh1.join("catalog.db").to_str().expect("utf-8"),
        "--relocate",
        "file:///data/lake/wh1=/nonexistent/wh1",
        "SELECT count(*) FROM db.orders",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("file:///data/lake/wh1/db/orders/metadata/")
            && err.contains("(read as /nonexistent/wh1/db/orders/metadata/"),
        "{err}"
    );

    // A data file gone from a copy.
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("wh1");
    copy_dir(&wh1, &copy);
    let partition = std::fs::read_dir(copy.join("db/orders/data"))
        .expect("data dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.is_dir())
        .expect("a partition directory");
    let victim = std::fs::read_dir(&partition)
        .expect("partition dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "parquet"))
        .expect("a data file");
    std::fs::remove_file(&victim).expect("remove");
    let name = victim
        .strip_prefix(copy.join("db/orders/data"))
        .expect("under data")
        .display()
        .to_string();
    let out = icefloe(&[
        "sql",
        "--catalog",
        copy.join("catalog.db").to_str().expect("utf-8"),
        "--relocate",
        &format!("file:///data/lake/wh1={}", copy.display()),
        "SELECT sum(amount) FROM db.orders",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "file:///data/lake/wh1/db/orders/data/{name} (read as {}",
            copy.display()
        )),
        "{err}"
    );
}

/// `compute-stats` commits theta sketches; `tree` shows the Puffin file and its blobs.
#[test]
fn compute_stats_commits_sketches_that_tree_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("t").display().to_string();
    let create = format!(
        "CREATE EXTERNAL TABLE t (id BIGINT, s VARCHAR) STORED AS ICEBERG LOCATION '{location}'; \
         INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'b'), (3, NULL)"
    );
    let out = icefloe(&["sql", &create]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = icefloe(&[
        "compute-stats",
        &location,
        "--columns",
        "id,s",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    // The data's distinct values: ids 1, 2, 3; strings a, b.
    assert_eq!(report["ndv"], serde_json::json!({"id": 3, "s": 2}));
    let out = icefloe(&["tree", &location]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("statistics metadata/"), "{text}");
    assert!(
        text.contains("blob apache-datasketches-theta-v1 of id  ndv 3"),
        "{text}"
    );
    assert!(
        text.contains("blob apache-datasketches-theta-v1 of s  ndv 2"),
        "{text}"
    );
    let out = icefloe(&["compute-stats", &location, "--columns", "nope"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no such top-level column"),
        "{}",
        stderr(&out)
    );
}

/// `compute-partition-stats` commits a partition statistics file of one row per partition;
/// `tree` shows it under its snapshot; an unpartitioned table is refused with the reason.
#[test]
fn compute_partition_stats_commits_a_file_that_tree_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = dir.path().join("t").display().to_string();
    let create = format!(
        "CREATE EXTERNAL TABLE t (id BIGINT, r VARCHAR) STORED AS ICEBERG PARTITIONED BY (r) \
         LOCATION '{location}'; \
         INSERT INTO t VALUES (1, 'a'), (2, 'a'), (3, 'b'), (4, NULL)"
    );
    let out = icefloe(&["sql", &create]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = icefloe(&["compute-partition-stats", &location, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    // The data's partitions: 'a', 'b' and NULL.
    assert_eq!(report["partitions"], 3, "{report}");
    let path = report["statistics_path"].as_str().expect("a path");
    assert!(path.contains("/metadata/partition-stats-"), "{path}");
    let out = icefloe(&["tree", &location]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("partition statistics metadata/partition-stats-"),
        "{text}"
    );

    let plain = dir.path().join("u").display().to_string();
    let create = format!(
        "CREATE EXTERNAL TABLE u (id BIGINT) STORED AS ICEBERG LOCATION '{plain}'; \
         INSERT INTO u VALUES (1)"
    );
    let out = icefloe(&["sql", &create]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = icefloe(&["compute-partition-stats", &plain]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("it is not partitioned"),
        "{}",
        stderr(&out)
    );
}
