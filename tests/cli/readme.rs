//! README.md's snippets run as printed: every ```` ```sql ```` block in the shell the README
//! opens it in (on a copy of the shipped PyIceberg warehouse, since some of them write), and
//! every `cargo run -- sql ...` command of a ```` ```sh ```` block.

use std::path::Path;
use std::process::Command;

use super::{copy_dir, fixture, stderr, stdout};

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md")
}

/// The fenced blocks of `text` in `language`, with the line each starts on.
fn blocks(text: &str, language: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(tag)) => {
                open = Some((n + 1, String::new()));
                if tag.trim() != language {
                    open = Some((0, String::new()));
                }
            }
            (Some(_), Some(_)) => {
                if let Some((start, body)) = open.take()
                    && start > 0
                {
                    found.push((start, body));
                }
            }
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    found
}

#[test]
fn every_sql_block_of_the_readme_runs_in_the_shell_it_names() {
    let text = readme();
    // The README names the session its SQL runs in.
    assert!(
        text.contains(
            "cargo run -- sql --catalog tests/fixtures/pyiceberg/wh1/catalog.db \\\n  \
             --relocate file:///data/lake/wh1=tests/fixtures/pyiceberg/wh1"
        ),
        "README.md no longer names the session of its SQL snippets"
    );
    let sql = blocks(&text, "sql");
    assert!(sql.len() >= 4, "{} sql blocks", sql.len());
    for (line, block) in sql {
        let dir = tempfile::tempdir().expect("temp dir");
        let wh1 = dir.path().join("wh1");
        copy_dir(&fixture("pyiceberg/wh1"), &wh1);
        let script = dir.path().join("snippet.sql");
        std::fs::write(&script, &block).expect("write the snippet");
        let out = Command::new(env!("CARGO_BIN_EXE_icefloe"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("HOME", dir.path())
            .args(["sql", "--on-error-stop", "--catalog"])
            .arg(wh1.join("catalog.db"))
            .arg("--relocate")
            .arg(format!("file:///data/lake/wh1={}", wh1.display()))
            .arg("-f")
            .arg(&script)
            .output()
            .expect("icefloe runs");
        assert!(
            out.status.success(),
            "README.md line {line}: {}\n{block}\n{}",
            stderr(&out),
            stdout(&out)
        );
        // Every query printed a result (a table with a header at least).
        let statements = block
            .split(';')
            .filter(|s| {
                let code: Vec<&str> = s
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with("--"))
                    .collect();
                code.first().is_some_and(|first| {
                    let word = first.split_whitespace().next().unwrap_or("").to_uppercase();
                    matches!(word.as_str(), "SELECT" | "SHOW" | "DESCRIBE")
                })
            })
            .count();
        let borders = stdout(&out).lines().filter(|l| l.starts_with("+-")).count();
        let results = borders / 3;
        assert!(
            results >= statements,
            "README.md line {line}: {statements} statements, {results} results:\n{}",
            stdout(&out)
        );
    }
}

/// The shell commands of a block: lines joined where a line ends with `\\` or a quote is open.
fn commands(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in block.lines() {
        match line.strip_suffix('\\') {
            Some(continued) => {
                current.push_str(continued);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                current.push('\n');
            }
        }
        let open_quotes = current.matches('"').count() % 2 == 1;
        if !line.ends_with('\\') && !open_quotes {
            out.push(std::mem::take(&mut current));
        }
    }
    out
}

#[test]
fn every_cargo_run_sql_command_of_the_readme_runs() {
    let text = readme();
    let mut ran = 0;
    for (line, block) in blocks(&text, "sh") {
        for command in commands(&block) {
            if !command.trim_start().starts_with("cargo run -- sql") {
                continue;
            }
            ran += 1;
            let command = command.replacen("cargo run --", env!("CARGO_BIN_EXE_icefloe"), 1);
            let out = Command::new("sh")
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .env("HOME", std::env::temp_dir())
                .args(["-c", &command])
                .output()
                .expect("sh runs");
            // A command with a query prints its result; one without opens the shell, which
            // reads nothing from the closed standard input here.
            let has_query = command.contains('"');
            assert!(
                out.status.success() && (!has_query || stdout(&out).contains("+-")),
                "README.md block at line {line}: {command}\n{}{}",
                stdout(&out),
                stderr(&out)
            );
        }
    }
    assert!(ran >= 2, "{ran} commands");
}
