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
    assert!(stderr(&out).starts_with("Error: "), "{}", stderr(&out));
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

#[test]
fn table_format_is_the_default() {
    let out = icefloe(&["sql", "SELECT 1 AS a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "+---+\n| a |\n+---+\n| 1 |\n+---+\n");
}

#[test]
fn statements_after_an_error_do_not_run() {
    let out = icefloe(&[
        "sql",
        "--format",
        "csv",
        "SELECT 1 AS a; SELECT * FROM nope; SELECT 3 AS c",
    ]);
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
    assert!(stderr(&out).contains("catalog.db"), "{}", stderr(&out));
}
